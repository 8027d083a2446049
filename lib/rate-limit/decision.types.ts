import type { FunnelPolicy, RateLimitDecision, RateLimitPolicy } from './policy.js';

// The shapes RateLimiterService takes and gives (public), apart from both the service and the
// engine under it, which share them.

/** One limit of a stack decided together: a rate-limit policy or a funnel (not both), on a key. */
export interface StackedLimit {
  /** What is counted, e.g. a user id: any non-empty string (escaped into the Redis key). */
  key: string;
  /** Separates counters that share a key, e.g. a route or a shared limit's name; a non-empty
   * string.
   * @default none: the key's own counter under this policy */
  scope?: string;
  /** A rate limit; give this or `funnel`. */
  policy?: RateLimitPolicy;
  /** A leaky bucket; give this or `policy`. */
  funnel?: FunnelPolicy;
  /** Permits (funnel: quota) to charge: a positive integer no larger than the limit (capacity).
   * @default 1 */
  permits?: number;
}

/** `decide`'s verdict on a stack: all granted and charged, or none charged. */
export interface StackDecision {
  /** True when every limit granted; nothing is charged otherwise. */
  allowed: boolean;
  /** 0 when allowed; else ms until every refusing limit could grant. */
  retryAfterMs: number;
  /** One per limit, in order: each limit's own verdict. When the stack is refused, none is
   * charged, so `remaining` is what each limit has left now. */
  decisions: RateLimitDecision[];
  /** Indexes of the limits that refused because a block (lockout) was in force: such a refusal
   * is the lockout's own, and never starts or lengthens one. Absent when none did. */
  lockedOut?: number[];
  /** Refused from this process's refusal cache, without asking Redis (a refusal Redis gave for
   * the same stack moments ago, whose consequences that one already had). */
  cached?: true;
}

/** `decide`'s options. */
export interface DecideOptions {
  /** Inspect without charging (permits are taken as 1); not counted, no event.
   * @default false */
  peek?: boolean;
  /** Test hook: decide at this time (ms since the epoch) instead of the Redis server's clock.
   * @default the Redis server's clock */
  now?: number;
  /** Who decides (a guard: its route, `Class.method`): told in the decision event. A non-empty
   * string.
   * @default none */
  route?: string;
  /** Indexes of the stack's shadow limits (decided and counted, never refusing; see `shadow` on
   * `@RateLimit`). A refusal by these alone is reported as `shadow-refused`, not as a refusal,
   * and no refusal they take part in is remembered by the refusal cache.
   * @default none */
  shadows?: readonly number[];
  /** This stack is a request's enforced limits decided again after its shadow limits alone
   * refused it: a grant is reported as `shadow-refused`.
   * @default false */
  shadowRefused?: boolean;
}

/** Options of refundLimit, penalizeLimit and blockLimit. */
export interface LimitOperationOptions {
  /** Test hook: act at this time (ms since the epoch) instead of the Redis server's clock.
   * @default the Redis server's clock */
  now?: number;
}
