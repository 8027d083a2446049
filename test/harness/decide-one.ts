import { grantText, isGranted } from '../../lib/rate-limit/grant-text.js';
import type { LimitSpec } from '../../lib/rate-limit/policy.js';
import type { RedisConnection } from '../../lib/redis/redis-connection.js';
import { RateLimitReply } from '../../lib/redis/replies.js';

/** decide.lua's verdict on a stack of one limit, in the shape a decision has (grant: the id
 * refund.lua takes, '' when nothing was charged). */
export interface OneLimitVerdict {
  stack: number;
  verdict: number;
  remaining: number;
  retryAfterMs: number;
  resetMs: number;
  grant: string;
}

/** Calls decide.lua for one limit on `key` at `now`; a failed stack throws its error. */
export async function decideOne(
  connection: RedisConnection,
  key: string,
  spec: LimitSpec,
  now: number,
  permits: number,
  consume: '1' | '0' = '1',
): Promise<OneLimitVerdict> {
  const limit = { algorithm: spec.algorithm, limit: spec.limit, windowMs: spec.windowMs, permits };
  const reply = await connection.scripts.call('rateLimitDecide', {
    keys: { states: [key] },
    args: { now, specs: [limit], stacks: [{ consume, limits: [1] }] },
  });
  const [stack] = reply.stacks;
  if (stack!.verdict === RateLimitReply.STACK_FAILED) throw new Error(stack!.error);
  const one = stack!.limits[0]!;
  if (isGranted(one)) {
    return {
      stack: stack!.verdict,
      verdict: RateLimitReply.GRANTED,
      remaining: one.remaining,
      retryAfterMs: 0,
      resetMs: one.resetMs,
      grant: grantText(limit, one, reply.now),
    };
  }
  return { stack: stack!.verdict, verdict: one.verdict, remaining: one.remaining, retryAfterMs: one.retryAfterMs, resetMs: one.resetMs, grant: '' };
}
