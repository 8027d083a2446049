import type { LimitVerdict } from '../../observability/events.js';
import type { RedisConnection } from '../../redis/redis-connection.js';
import type { CheckedLimit } from '../checked-limit.js';
import type { StackDecision } from '../decision.types.js';
import { KIND_NAMES } from '../policy.js';
import { LocalHandOver } from './local-hand-over.js';
import { LocalLimiter } from './local-limiter.js';

// One limiter per module (its connection), shared by every guard instance of that module, as
// Redis's counters are. When Redis answers again, what it granted in windows still open is
// charged to Redis's counters (LocalHandOver); its own counters are left to expire: the grants
// they hold really happened, so an outage that follows within their window still counts them.
const limiters = new WeakMap<RedisConnection, LocalLimiter>();

/** The connection's limiter, made on its first local decision (always during an outage). */
function limiterOf(redis: RedisConnection): LocalLimiter {
  let limiter = limiters.get(redis);
  if (limiter === undefined) {
    limiters.set(redis, (limiter = new LocalLimiter(redis.options.localDivisor)));
    const handOver = new LocalHandOver(redis, limiter.owed);
    redis.onRecovery(() => handOver.start());
  }
  return limiter;
}

/** failMode 'local': decides `stack` in this process's memory and reports the decision. */
export function decideLocally(redis: RedisConnection, route: string, stack: readonly CheckedLimit[]): StackDecision {
  const limiter = limiterOf(redis);
  const result = limiter.decide(stack);
  redis.events.localDecision(result.allowed, () => ({
    type: 'redis-limit.local-decision',
    route,
    allowed: result.allowed,
    retryAfterMs: result.retryAfterMs,
    limits: stack.map((limit, i) => verdict(limit, result.decisions[i]!)),
  }));
  return result;
}

function verdict({ key, scope, spec }: CheckedLimit, { limit, allowed, remaining }: StackDecision['decisions'][number]): LimitVerdict {
  return { key, ...(scope === undefined ? {} : { scope }), kind: KIND_NAMES[spec.kind], limit, allowed, remaining };
}
