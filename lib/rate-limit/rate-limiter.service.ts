import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable } from '@nestjs/common';
import { assertKey, describeValue } from '../redis/keys.js';
import { RedisConnection } from '../redis/redis-connection.js';
import type { RedisLimitEvent } from '../observability/events.js';
import { DecisionBatcher } from './decision-batch.js';
import {
  assertAcquireOptions,
  assertPermits,
  assertStackInput,
  counterKind,
  funnelSpec,
  rateLimitSpec,
  type FunnelPolicy,
  type LimitSpec,
  type RateLimitDecision,
  type RateLimitPolicy,
} from './policy.js';

/** One limit of a stack decided together: a rate-limit policy or a funnel, on a key. */
export interface StackedLimit {
  key: string;
  /** Separates counters that share a key, e.g. a route or a shared limit's name. */
  scope?: string;
  policy?: RateLimitPolicy;
  funnel?: FunnelPolicy;
  /** Permits (funnel: quota) to charge. Default 1. */
  permits?: number;
}

export interface StackDecision {
  /** True when every limit granted; nothing is charged otherwise. */
  allowed: boolean;
  /** 0 when allowed; else ms until every refusing limit could grant. */
  retryAfterMs: number;
  /** One per limit, in order: each limit's own verdict. When the stack is refused, none is
   * charged, so `remaining` is what each limit has left now. */
  decisions: RateLimitDecision[];
}

export interface DecideOptions {
  /** Inspect without charging (permits are taken as 1). */
  peek?: boolean;
  /** Test hook: decide at this time (ms) instead of the Redis server's clock. */
  now?: number;
}

interface CheckedLimit {
  key: string;
  spec: LimitSpec;
  permits: number;
}

@Injectable()
export class RateLimiterService {
  private readonly batcher: DecisionBatcher;

  constructor(@Inject(RedisConnection) private readonly redis: RedisConnection) {
    this.batcher = new DecisionBatcher(redis.scripts, redis.cluster);
  }

  /** Charges `permits` (default 1) if they fit; never waits. */
  async consume(key: string, policy: RateLimitPolicy, permits = 1): Promise<RateLimitDecision> {
    const { decisions } = await this.decide([{ key, policy, permits }]);
    return decisions[0]!;
  }

  /** Whether one permit would be granted now, and what is left; charges nothing. */
  async peek(key: string, policy: RateLimitPolicy): Promise<RateLimitDecision> {
    const { decisions } = await this.decide([{ key, policy }], { peek: true });
    return decisions[0]!;
  }

  /**
   * Waits until `permits` are granted, sleeping `retryAfterMs` between tries (timers, never a
   * spin). With `timeoutMs`, resolves false as soon as the next chance would come too late.
   */
  async acquire(
    key: string,
    policy: RateLimitPolicy,
    opts: { permits?: number; timeoutMs?: number } = {},
  ): Promise<boolean> {
    assertAcquireOptions(opts);
    const { permits = 1, timeoutMs } = opts;
    const deadline = performance.now() + (timeoutMs ?? Infinity);
    for (;;) {
      const decision = await this.consume(key, policy, permits);
      if (decision.allowed) return true;
      if (performance.now() + decision.retryAfterMs > deadline) return false;
      await sleep(Math.max(1, decision.retryAfterMs));
    }
  }

  /** Forgets everything `key` has used under `policy`'s algorithm and window. */
  async reset(key: string, policy: RateLimitPolicy): Promise<void> {
    assertKey(key);
    const redisKey = this.redis.keys.build(counterKind(rateLimitSpec(policy)), key);
    await this.redis.scripts.bounded(this.redis.client.del(redisKey), 'DEL');
  }

  /** Leaky bucket: `capacity` units refilled evenly over `leakingDurationMs`; charges `quota`. */
  async funnel(key: string, funnel: FunnelPolicy, quota = 1): Promise<RateLimitDecision> {
    const { decisions } = await this.decide([{ key, funnel, permits: quota }]);
    return decisions[0]!;
  }

  /**
   * Decides a stack of limits in one atomic Redis call: all grant and all are charged, or none
   * is. Keys of one stack must share a cluster slot on Redis Cluster (the same `key`).
   */
  async decide(limits: readonly StackedLimit[], options: DecideOptions = {}): Promise<StackDecision> {
    assertStackInput(limits, options);
    const checked = limits.map((limit, i) => check(limit, options.peek === true, limits.length > 1 ? `limits[${i}]` : ''));
    if (this.redis.cluster) assertOneKey(checked);
    const keys = checked.map(({ key, spec }, i) => this.redis.keys.build(counterKind(spec), key, limits[i]!.scope));
    const args: (string | number)[] = [options.peek ? '0' : '1', checked.length];
    for (const { spec, permits } of checked) args.push(spec.algorithm, spec.limit, spec.windowMs, permits);
    const result = parseReply(await this.batcher.decide(keys, args, options.now), checked);
    // a peek decides nothing: not counted, not announced
    if (!options.peek) this.redis.events.decision(result.allowed, () => decisionEvent(result, checked, limits));
    return result;
  }
}

/** On a cluster a stack's keys must share a slot, which only the same user key guarantees:
 * refused here, naming both keys, rather than as a CROSSSLOT reply from Redis. */
function assertOneKey(limits: CheckedLimit[]): void {
  const other = limits.findIndex((limit) => limit.key !== limits[0]!.key);
  if (other > 0) {
    throw new TypeError(
      `limits[${other}].key must equal limits[0].key on Redis Cluster (one slot per call): got ${describeValue(limits[other]!.key)} and ${describeValue(limits[0]!.key)}`,
    );
  }
}

function check(limit: StackedLimit, peek: boolean, at: string): CheckedLimit {
  const name = (arg: string) => (at ? `${at}.${arg}` : arg);
  assertKey(limit.key, name('key'));
  if (limit.scope !== undefined) assertKey(limit.scope, name('scope'));
  // a limit that names a funnel (even an undefined one) and no policy is a funnel, and is named so
  const isFunnel = limit.funnel !== undefined || (limit.policy === undefined && 'funnel' in limit);
  const spec = isFunnel ? funnelSpec(limit.funnel!, name('funnel')) : rateLimitSpec(limit.policy!, name('policy'));
  const permits = peek || limit.permits === undefined ? 1 : limit.permits;
  assertPermits(permits, spec.limit, name(isFunnel ? 'quota' : 'permits'));
  return { key: limit.key, spec, permits };
}

function decisionEvent(result: StackDecision, checked: CheckedLimit[], limits: readonly StackedLimit[]): RedisLimitEvent {
  return {
    type: 'redis-limit.decision',
    allowed: result.allowed,
    retryAfterMs: result.retryAfterMs,
    limits: checked.map(({ key, spec }, i) => ({
      key,
      ...(limits[i]!.scope === undefined ? {} : { scope: limits[i]!.scope }),
      kind: spec.kind,
      limit: spec.limit,
      allowed: result.decisions[i]!.allowed,
      remaining: result.decisions[i]!.remaining,
    })),
  };
}

function parseReply(reply: number[], limits: CheckedLimit[]): StackDecision {
  const allowed = reply[0] === 1;
  let retryAfterMs = 0;
  const decisions = limits.map(({ spec }, i) => {
    const [granted, remaining, retry, reset] = reply.slice(1 + i * 4, 5 + i * 4) as [number, number, number, number];
    const decision: RateLimitDecision = {
      allowed: granted === 1,
      limit: spec.limit,
      remaining: Math.max(0, remaining),
      retryAfterMs: granted === 1 ? 0 : retry,
      resetMs: reset,
    };
    retryAfterMs = Math.max(retryAfterMs, decision.retryAfterMs);
    return decision;
  });
  return { allowed, retryAfterMs, decisions };
}
