import type { CheckedLimit } from './checked-limit.js';
import type { StackDecision } from './decision.types.js';

/** Provided (true) by `RedisLimitModule.forTesting({ limits: 'off' })`: every rate limit and funnel
 * grants, and nothing is charged, so an app's own e2e tests never meet a 429 of ours. */
export const LIMITS_OFF = Symbol('nest-redis-limit:limits-off');

/** The verdict of a stack under `limits: 'off'`: granted, the whole limit left, nothing charged
 * (so no grant id: there is nothing to give back). */
export function grantedWithoutCharge(limits: readonly CheckedLimit[]): StackDecision {
  return {
    allowed: true,
    retryAfterMs: 0,
    decisions: limits.map(({ limit }) => ({ allowed: true, limit, remaining: limit, retryAfterMs: 0, resetMs: 0 })),
  };
}
