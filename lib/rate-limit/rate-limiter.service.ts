import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { assertKey } from '../redis/keys.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { RateLimitReply } from '../redis/replies.js';
import type { RateLimitDecideLimit } from '../redis/script-bindings.generated.js';
import { clusterSlot } from '../redis/slot.js';
import type { RedisLimitEvent } from '../observability/events.js';
import { DecisionBatcher, type DecidedStack } from './decision-batch.js';
import { CounterScopes } from './counter-scopes.js';
import { attachGrantId, GrantIds } from './grant-ids.js';
import { Overrides } from './overrides.js';
import type { NamedLimit } from './overrides-declared.js';
import { assertOverride, type AppliedOverride, type LimitOverride } from './overrides-policy.js';
import { Refusals } from './refusals.js';
import {
  assertAcquireOptions,
  assertBlockDuration,
  assertGrantId,
  assertLimitInput,
  assertPenalty,
  assertPermits,
  assertStackInput,
  counterKind,
  funnelSpec,
  KIND_NAMES,
  rateLimitSpec,
  type FunnelPolicy,
  type LimitSpec,
  type RateLimitDecision,
  type RateLimitPolicy,
} from './policy.js';
import { assertPositiveInteger } from '../validation.js';

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

/** A limit of a stack, checked; also decide.lua's row for it (algorithm, limit, windowMs, permits),
 * which a decision sends as it is: no second object per limit. */
interface CheckedLimit extends RateLimitDecideLimit {
  key: string;
  spec: LimitSpec;
}

/**
 * Rate limits from code: consume, peek, wait, refund, penalize, block and reset a key's counter,
 * and stacks of limits decided all or nothing. Refusals are results (`allowed: false`), never
 * errors; methods reject only on bad input (TypeError / RangeError naming the argument, before
 * Redis is asked) or when Redis fails (RedisLimitError). Time is the Redis server's clock.
 * See docs/rate-limiter-service.md.
 * @example
 * ```ts
 * @Injectable()
 * export class SmsService {
 *   constructor(private readonly limiter: RateLimiterService) {}
 *
 *   async send(userId: string): Promise<void> {
 *     const { allowed, retryAfterMs } = await this.limiter.consume(`user:${userId}`, { limit: 5, windowMs: 60_000 });
 *     if (!allowed) throw new HttpException(`retry in ${retryAfterMs} ms`, 429);
 *   }
 * }
 * ```
 */
@Injectable()
export class RateLimiterService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly batcher: DecisionBatcher;
  private readonly refusals: Refusals;
  private readonly grants: GrantIds;
  private readonly scopes: CounterScopes;
  /** The runtime overrides in force here; route plans read them and declare their names. */
  readonly limitOverrides: Overrides;

  constructor(@Inject(RedisConnection) private readonly redis: RedisConnection) {
    this.batcher = new DecisionBatcher(redis.scripts, redis.cluster);
    this.refusals = new Refusals(redis);
    this.grants = new GrantIds(redis);
    this.scopes = new CounterScopes(redis);
    // a refusal remembered under the old numbers must not outlive a raised limit
    this.limitOverrides = new Overrides(redis, () => this.refusals.clear());
  }

  /** After every route's plan is compiled (their names declared), before the first request. */
  async onApplicationBootstrap(): Promise<void> {
    await this.limitOverrides.start();
  }

  onApplicationShutdown(): void {
    this.refusals.close();
    this.limitOverrides.close();
  }

  /**
   * Every limit this app declares with `name` (`@RateLimit`, `@Funnel`, defaultLimits) uses `policy`
   * from now on, in every app instance on this Redis: at once here, at once where pub/sub is up,
   * within about a second elsewhere. `windowMs` absent: each limit keeps its own window. null
   * removes the override. A changed window starts fresh counters; a changed limit keeps them.
   * Names are known once the app has started. A name no limit of this app carries is stored, with
   * one warning naming it (an admin app, a worker or a CLI setting overrides for the instances
   * that declare it); each instance applies a stored override only if its own limits of that name
   * can take it (else it keeps them as declared, with one warning): see docs/runtime-overrides.md.
   * @param name - the `name` of the limits to change
   * @param policy - `{ limit, windowMs? }` (positive integers, ms), or null to remove the override
   * @throws TypeError `name` when not a non-empty string or it holds a lone surrogate; TypeError
   * `policy` when not an object or null, or with another option.
   * @throws TypeError / RangeError `policy.limit` / `policy.windowMs` when not a positive integer;
   * RangeError, where this app declares the name, when the limit is below a declared cost or
   * quota, a window is given for a name a route holds twice, or a bucket's limit × window is above
   * 2^53.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * await limiter.setOverride('login', { limit: 3 });                   // each 'login' limit keeps its window
   * await limiter.setOverride('login', { limit: 10, windowMs: 60_000 }); // a fresh counter per minute
   * await limiter.setOverride('login', null);                           // back to the declared limits
   * ```
   */
  async setOverride(name: string, policy: LimitOverride | null): Promise<void> {
    const override = assertOverride(name, policy);
    if (override !== null) this.limitOverrides.declared.assertApplies(name, override);
    await this.limitOverrides.set(name, override);
  }

  /**
   * The overrides stored in Redis, by name, as they apply in this app: `windowMs` is the override's
   * own, else the declared window (the shortest where a name's limits differ; 0 when none is known).
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async overrides(): Promise<Record<string, AppliedOverride>> {
    return this.limitOverrides.list();
  }

  /** The names this app's limits carry (decorators and defaultLimits), each with its limits as
   * declared: what setOverride can change. Known once the app has started; never asks Redis. */
  namedLimits(): Record<string, NamedLimit[]> {
    return this.limitOverrides.declared.list();
  }

  /**
   * Charges `permits` if they fit; never waits. A refusal charges nothing.
   * @param key - what is counted, e.g. `user:42`: any non-empty string
   * @param policy - `{ limit, windowMs, algorithm? }`: limit permits per windowMs ms (default
   * algorithm 'sliding-window'); extra properties are ignored
   * @param permits - permits to charge, a positive integer no larger than `policy.limit` (default 1)
   * @returns the verdict: `allowed`, `remaining` (whole permits), `retryAfterMs` (0 when allowed),
   * `resetMs`, and `grantId` (for `refund`) when allowed
   * @throws TypeError `key` / `policy` / `policy.algorithm`; TypeError / RangeError `policy.limit`,
   * `policy.windowMs`, `permits` when not a positive integer; RangeError when `permits` exceeds
   * the limit (never a wait) or a token bucket's limit × windowMs is above 2^53.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * const decision = await limiter.consume('user:42', { limit: 10, windowMs: 1000, algorithm: 'token-bucket' });
   * if (!decision.allowed) console.log(`retry in ${decision.retryAfterMs} ms`);
   * ```
   */
  async consume(key: string, policy: RateLimitPolicy, permits = 1): Promise<RateLimitDecision> {
    const { decisions } = await this.decide([{ key, policy, permits }]);
    return decisions[0]!;
  }

  /**
   * Whether one permit would be granted now, and what is left; charges nothing. A key never used
   * peeks as `{ allowed: true, remaining: limit, resetMs: 0 }`.
   * @throws TypeError / RangeError for a bad `key` or `policy`, as `consume`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async peek(key: string, policy: RateLimitPolicy): Promise<RateLimitDecision> {
    const { decisions } = await this.decide([{ key, policy }], { peek: true });
    return decisions[0]!;
  }

  /**
   * Waits until `permits` are granted, sleeping `retryAfterMs` between tries (timers, never a
   * spin). With `timeoutMs`, resolves false as soon as the next chance would come too late.
   * @param opts - `permits` (default 1) and `timeoutMs` (ms, default: wait as long as it takes)
   * @returns true once granted (and charged); false when `timeoutMs` would pass first
   * @throws TypeError `opts` when not an object or with another option; RangeError
   * `opts.timeoutMs` when not a finite number >= 0; the errors of `consume` for `key`, `policy`
   * and `opts.permits` (named `permits`).
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async acquire(key: string, policy: RateLimitPolicy, opts: { permits?: number; timeoutMs?: number } = {}): Promise<boolean> {
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

  /**
   * Gives back permits of a grant (`grantId` from an allowed decision on this key and policy):
   * all it has left by default. Each permit comes back at most once however often this is
   * called; returns how many came back, 0 when the grant no longer counts (its window ended, its
   * bucket has been full since, the key was reset) or was given back already. A token bucket or
   * funnel gives back whole tokens, and no more than a bucket without the grant would hold: less
   * when it came within the grant's tokens of full meanwhile (a refund right after the grant, with
   * nothing charged between, gets all of it). One round trip.
   * @param grantId - `decision.grantId` of an allowed decision on this key and policy
   * @param permits - at most this many (a positive integer); default: all the grant has left
   * @returns how many permits came back
   * @throws TypeError `grantId` when not a non-empty string; TypeError / RangeError `permits` when
   * not a positive integer; the errors of `consume` for `key` and `policy`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * const { allowed, grantId } = await limiter.consume('user:42', policy, 5);
   * if (allowed) await limiter.refund('user:42', policy, grantId!, 2); // resolves to 2
   * ```
   */
  async refund(key: string, policy: RateLimitPolicy, grantId: string, permits?: number): Promise<number> {
    return this.refundLimit({ key, policy }, grantId, permits);
  }

  /**
   * Charges `permits` whether or not they fit, even past the limit (e.g. a failed login costing
   * 5). The decision is the verdict on one more permit right after: `remaining` floors at 0 and
   * `retryAfterMs` is the wait until one permit fits again. One round trip.
   * @param permits - a positive integer, which may exceed the limit
   * @throws TypeError / RangeError `permits` when not a positive integer; RangeError when a token
   * bucket's (permits + limit) × windowMs is above 2^53; the errors of `consume` for `key` and
   * `policy`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * // a failed login costs 5 of the 10 attempts a quarter of an hour
   * await limiter.penalize(`login:${email}`, { limit: 10, windowMs: 900_000 }, 5);
   * ```
   */
  async penalize(key: string, policy: RateLimitPolicy, permits: number): Promise<RateLimitDecision> {
    return this.penalizeLimit({ key, policy }, permits);
  }

  /**
   * Refuses `key` under `policy`'s counter for `durationMs` (on the Redis clock), then it counts
   * as before: what it used is neither lost nor charged. While blocked, decisions on it refuse
   * with `retryAfterMs` the time left (or the counter's own wait if longer), peeks say not
   * allowed, and a stack holding it is refused whole. A longer block in force stays; `reset`
   * lifts a block with the rest.
   * @param durationMs - how long to refuse, ms: a positive integer
   * @throws TypeError / RangeError `durationMs` when not a positive integer; the errors of
   * `consume` for `key` and `policy`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * await limiter.block('ip:203.0.113.9', { limit: 100, windowMs: 60_000 }, 600_000); // 10 minutes
   * ```
   */
  async block(key: string, policy: RateLimitPolicy, durationMs: number): Promise<void> {
    return this.blockLimit({ key, policy }, durationMs);
  }

  /**
   * `refund` for one limit of a stack (its `key`, `scope` and `policy` or `funnel`, as decided;
   * its `permits` are ignored): gives back up to `permits` (default: all the grant has left) of
   * the grant `grantId` names, each permit at most once; resolves to how many came back.
   * @throws TypeError `limit` when not an object or with both `policy` and `funnel`; otherwise as
   * `refund` (a funnel's errors named `funnel.…`), `options.now` as in `decide`; TypeError
   * `options` when not an object or with an option other than `now`.
   */
  async refundLimit(limit: StackedLimit, grantId: string, permits?: number, options: LimitOperationOptions = {}): Promise<number> {
    const { key, spec, redisKey, scope } = this.target(limit, options);
    assertGrantId(grantId);
    if (permits !== undefined) assertPositiveInteger(permits, 'permits');
    // an id this library did not issue for this counter never reaches a script
    const opened = this.grants.open(redisKey, grantId);
    const grant = opened instanceof Promise ? await opened : opened;
    if (grant === undefined) return 0;
    // a grant never holds more than the limit, so the limit stands for "all of it"
    const ask = Math.min(permits ?? spec.limit, spec.limit);
    const limits = [{ ...spec, permits: ask, grant }];
    const { given } = await this.redis.scripts.call('rateLimitRefund', {
      keys: { states: [redisKey] },
      args: { now: options.now, limits, channel: this.refusals.publishChannel },
    });
    const back = given[0]!;
    this.refusals.forget([redisKey]);
    this.redis.events.refund(back, () => ({ type: 'redis-limit.refund', key, ...scope, kind: KIND_NAMES[spec.kind], limit: spec.limit, permits: back }));
    return back;
  }

  /** `penalize` for one limit of a stack (its `permits` are ignored: `permits` is the charge).
   * @throws as `penalize`, and TypeError `limit` as `refundLimit`. */
  async penalizeLimit(limit: StackedLimit, permits: number, options: LimitOperationOptions = {}): Promise<RateLimitDecision> {
    const { key, spec, redisKey, scope } = this.target(limit, options);
    assertPenalty(permits, spec);
    const args = { ...spec, now: options.now, permits };
    const { verdict, remaining, retryAfterMs, resetMs } = await this.redis.scripts.call('rateLimitPenalize', { keys: { state: redisKey }, args });
    const decision: RateLimitDecision = {
      allowed: verdict === RateLimitReply.GRANTED,
      limit: spec.limit,
      remaining: Math.max(0, remaining),
      retryAfterMs,
      resetMs,
    };
    this.redis.events.penalize(permits, () => ({
      type: 'redis-limit.penalize',
      key,
      ...scope,
      kind: KIND_NAMES[spec.kind],
      limit: spec.limit,
      permits,
      remaining: decision.remaining,
    }));
    return decision;
  }

  /** `block` for one limit of a stack (its `permits` are ignored).
   * @throws as `block`, and TypeError `limit` as `refundLimit`. */
  async blockLimit(limit: StackedLimit, durationMs: number, options: LimitOperationOptions = {}): Promise<void> {
    const { key, spec, redisKey, scope } = this.target(limit, options);
    assertBlockDuration(durationMs);
    const args = { ...spec, now: options.now, durationMs, channel: this.refusals.publishChannel };
    await this.redis.scripts.call('rateLimitBlock', { keys: { state: redisKey }, args });
    this.refusals.forget([redisKey]);
    this.redis.events.block(() => ({ type: 'redis-limit.block', key, ...scope, kind: KIND_NAMES[spec.kind], limit: spec.limit, durationMs }));
  }

  /** One limit's checked key and spec, for the single-limit operations. */
  private target(limit: StackedLimit, options: LimitOperationOptions) {
    assertLimitInput(limit, options);
    const { key, spec } = checkLimit(limit, '');
    const redisKey = this.redis.keys.build(counterKind(spec), key, limit.scope);
    return { key, spec, redisKey, scope: limit.scope === undefined ? {} : { scope: limit.scope } };
  }

  /**
   * Forgets everything `key` has used under `policy`'s algorithm and window, and any block; every
   * app instance forgets its remembered refusals of it too. `policy.limit` must be valid but
   * picks no counter: one reset serves every limit on that algorithm and window.
   * @throws TypeError / RangeError for a bad `key` or `policy`, as `consume`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * await limiter.reset('user:42', { limit: 10, windowMs: 1000 });
   * ```
   */
  async reset(key: string, policy: RateLimitPolicy): Promise<void> {
    assertKey(key);
    const redisKey = this.redis.keys.build(counterKind(rateLimitSpec(policy)), key);
    await this.redis.scripts.bounded(this.redis.client.del(redisKey), 'DEL');
    // not awaited: this process forgets at once, others when the message arrives, which waiting
    // would not hasten (refund and block publish from their scripts instead)
    this.refusals.invalidate([redisKey]).catch(() => undefined);
  }

  /**
   * Resets every counter of the limits declared with `name` (`@RateLimit` / `@Funnel` / defaultLimits
   * entries carrying it, user tiers and overridden windows included) for the resolved `key`,
   * whatever their algorithm and window, lifts their blocks (lockouts), and empties every app
   * instance's refusal cache of them (this one's at once, the others' as the pub/sub message
   * reaches them, as with `reset`). Works from any process on the same Redis
   * and key prefix, one that declares nothing too (an admin app). Two round trips.
   * @param name - the limits' `name`: a non-empty string
   * @param key - the resolved key, as the limit's `key` function (or the tracker) gave it
   * @returns how many counters there were to reset (0: none held anything)
   * @throws TypeError `name` / `key` when not a non-empty string.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * // support lifts a locked-out account: every 'login' counter of this e-mail
   * await limiter.resetLimit('login', 'ada@example.com');
   * ```
   */
  async resetLimit(name: string, key: string): Promise<number> {
    assertKey(name, 'name');
    assertKey(key);
    const counters = (await this.scopes.kinds(name)).map((kind) => this.redis.keys.build(kind, key, name));
    if (counters.length === 0) return 0;
    // one hash tag, the key's: one slot, one call
    const reset = await this.redis.scripts.bounded(this.redis.client.del(...counters), 'DEL');
    await this.refusals.invalidate(counters);
    return reset;
  }

  /**
   * Leaky bucket: `capacity` units refilled evenly (exact fractions) so an empty funnel is full
   * again after `leakingDurationMs`; charges `quota` if it fits, never waits.
   * @param funnel - `{ capacity, leakingDurationMs }`: positive integers (units, ms)
   * @param quota - units to take, a positive integer no larger than `capacity` (default 1)
   * @throws TypeError `key` / `funnel`; TypeError / RangeError `funnel.capacity`,
   * `funnel.leakingDurationMs`, `quota` when not a positive integer; RangeError when `quota`
   * exceeds the capacity or capacity × leakingDurationMs is above 2^53.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * // one SMS per number each 30 minutes
   * const { allowed } = await limiter.funnel('+15550100', { capacity: 1, leakingDurationMs: 1_800_000 });
   * ```
   */
  async funnel(key: string, funnel: FunnelPolicy, quota = 1): Promise<RateLimitDecision> {
    const { decisions } = await this.decide([{ key, funnel, permits: quota }]);
    return decisions[0]!;
  }

  /**
   * Decides a stack of limits: all grant and all are charged, or none is. One atomic Redis call
   * when the stack's keys share a cluster slot (always off a cluster); otherwise one call per
   * slot, and what those charged is given back if another refuses (see decideAcrossSlots).
   * A refusal remembered by the refusal cache answers without Redis.
   * @param limits - the stack: each `{ key, scope?, policy | funnel, permits? }`
   * @returns `allowed`, the stack's `retryAfterMs` (the longest wait) and one decision per limit,
   * in order (`grantId` on each when the stack is allowed)
   * @throws TypeError `limits` when not an array, `limits[i]` when not an object or with both
   * `policy` and `funnel`; each limit's errors as `consume` / `funnel`, named `limits[i].…` (with
   * one limit, unprefixed); TypeError `limits[i].scope` when not a non-empty string; TypeError
   * `options` (not an object, or with another option) / `options.peek` / `options.route`,
   * TypeError / RangeError `options.now`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * const { allowed, retryAfterMs } = await limiter.decide([
   *   { key: 'user:42', scope: 'per-second', policy: { limit: 10, windowMs: 1000 } },
   *   { key: 'user:42', scope: 'per-hour', policy: { limit: 1000, windowMs: 3_600_000 } },
   * ]);
   * ```
   */
  async decide(limits: readonly StackedLimit[], options: DecideOptions = {}): Promise<StackDecision> {
    assertStackInput(limits, options);
    const checked = limits.map((limit, i) => check(limit, options.peek === true, limits.length > 1 ? `limits[${i}]` : ''));
    const kinds = checked.map(({ spec }) => counterKind(spec));
    const keys = checked.map(({ key }, i) => this.redis.keys.build(kinds[i]!, key, limits[i]!.scope));
    // peeks and the test clock ask Redis every time
    const cached =
      options.peek || options.now !== undefined
        ? undefined
        : this.refusals.lookup({ keys, specs: checked.map((c) => c.spec), permits: checked.map((c) => c.permits) });
    if (cached !== undefined && 'hit' in cached) {
      const result: StackDecision = { allowed: false, ...cached.hit, cached: true };
      this.redis.events.decision('refused', () => ({ ...decisionEvent(result, checked, limits, options.route), cached: true }));
      return result;
    }
    let secret: Buffer | Promise<Buffer> | undefined;
    if (!options.peek) {
      // resetLimit finds a name's counters by the kinds they have used (names are finite: declared in code)
      for (let i = 0; i < limits.length; i++) {
        const scope = limits[i]!.scope;
        if (scope !== undefined && this.limitOverrides.declared.has(scope)) this.scopes.note(scope, kinds[i]!);
      }
      // the grants are signed when they come back; a process's first asks for the secret on the
      // way, ahead of the decision on the same connection (a failure is the decision's, below)
      secret = this.grants.ready();
      if (secret instanceof Promise) secret.catch(() => undefined);
    }
    const sign = (i: number, grant: string) => this.grants.sign(keys[i]!, grant);
    const groups = this.redis.cluster ? bySlot(keys) : [checked.map((_, i) => i)];
    let result: StackDecision;
    if (groups.length === 1) {
      const reply = await this.send(groups[0]!, checked, keys, options);
      if (secret instanceof Promise) await secret;
      result = stackOf(checked, [parseGroup(reply, groups[0]!, checked)], sign);
    } else {
      // slot by slot, charges are refunded when one refuses: nothing charged before the secret is here
      if (secret instanceof Promise) await secret;
      result = await this.decideAcrossSlots(groups, checked, keys, options, sign);
    }
    const { outcome, cacheable } = verdictOf(result, limits.length, options);
    if (cached !== undefined && cacheable) this.refusals.remember(cached.sent, result.retryAfterMs, result.decisions);
    // a peek decides nothing: not counted, not announced
    if (!options.peek && outcome !== undefined) this.redis.events.decision(outcome, () => decisionEvent(result, checked, limits, options.route, outcome));
    return result;
  }

  /**
   * A stack over several cluster slots: each slot's limits are decided (and charged) atomically
   * by their own call, all at once; if any refuses or fails, the slots that charged are given
   * their grants back. No limit ever grants more than it allows; a concurrent request may see a
   * charge that is about to be refunded. A refund that fails leaves its charge counted, which
   * errs towards refusing.
   */
  private async decideAcrossSlots(
    groups: number[][],
    checked: CheckedLimit[],
    keys: string[],
    options: DecideOptions,
    sign: (index: number, grant: string) => string,
  ): Promise<StackDecision> {
    const settled = await Promise.allSettled(groups.map((group) => this.send(group, checked, keys, options)));
    const parsed = settled.map((s, g) => (s.status === 'fulfilled' ? parseGroup(s.value, groups[g]!, checked) : undefined));
    const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    const allowed = failure === undefined && parsed.every((group) => group!.allowed);
    if (!allowed && !options.peek) {
      const charged = parsed.filter((group): group is ParsedGroup => group?.allowed === true);
      await Promise.all(charged.map((group) => this.refundGroup(group, checked, keys, options).catch(() => undefined)));
    }
    if (failure) throw failure.reason;
    return stackOf(checked, parsed as ParsedGroup[], sign, allowed);
  }

  /** One slot's limits (indexes into the stack) in one decide.lua call. */
  private send(group: number[], checked: CheckedLimit[], keys: string[], options: DecideOptions): Promise<DecidedStack> {
    return this.batcher.decide(
      group.map((i) => keys[i]!),
      options.peek ? '0' : '1',
      group.map((i) => checked[i]!),
      options.now,
    );
  }

  /** Gives back what one slot's call charged; the limits' `remaining` then counts it again. */
  private async refundGroup(group: ParsedGroup, checked: CheckedLimit[], keys: string[], options: DecideOptions): Promise<void> {
    const states = group.limits.map(({ index }) => keys[index]!);
    const limits = group.limits.map(({ index, grant }) => ({ ...checked[index]!, grant }));
    const { given } = await this.redis.scripts.call('rateLimitRefund', {
      keys: { states },
      args: { now: options.now, limits, channel: this.refusals.publishChannel },
    });
    this.refusals.forget(states);
    group.limits.forEach((limit, i) => {
      limit.decision.remaining = Math.min(limit.decision.limit, limit.decision.remaining + given[i]!);
    });
  }
}

/** The stack's limits grouped by cluster slot, in stack order (indexes into the stack). */
function bySlot(keys: string[]): number[][] {
  const groups = new Map<number, number[]>();
  keys.forEach((key, i) => {
    const slot = clusterSlot(key);
    const group = groups.get(slot);
    if (group === undefined) groups.set(slot, [i]);
    else group.push(i);
  });
  return [...groups.values()];
}

/** A limit's key, scope and policy or funnel, checked; `at` prefixes the names in errors. */
function checkLimit(limit: StackedLimit, at: string): { key: string; spec: LimitSpec; isFunnel: boolean } {
  const name = (arg: string) => (at ? `${at}.${arg}` : arg);
  assertKey(limit.key, name('key'));
  if (limit.scope !== undefined) assertKey(limit.scope, name('scope'));
  // a limit that names a funnel (even an undefined one) and no policy is a funnel, and is named so
  const isFunnel = limit.funnel !== undefined || (limit.policy === undefined && 'funnel' in limit);
  const spec = isFunnel ? funnelSpec(limit.funnel!, name('funnel')) : rateLimitSpec(limit.policy!, name('policy'));
  return { key: limit.key, spec, isFunnel };
}

function check(limit: StackedLimit, peek: boolean, at: string): CheckedLimit {
  const { key, spec, isFunnel } = checkLimit(limit, at);
  const permits = peek || limit.permits === undefined ? 1 : limit.permits;
  assertPermits(permits, spec.limit, at ? `${at}.${isFunnel ? 'quota' : 'permits'}` : isFunnel ? 'quota' : 'permits');
  return { key, spec, permits, algorithm: spec.algorithm, limit: spec.limit, windowMs: spec.windowMs };
}

type Outcome = 'allowed' | 'refused' | 'shadow-refused';

/**
 * How a decided stack is reported, and whether its refusal may be remembered. A shadow's refusal
 * is no refusal: never remembered (its wait is not the request's), and reported as
 * `shadow-refused` when shadows alone refused; where enforced limits remain those are decided
 * again (see decideShadowed), and that call reports the request (`outcome` undefined here).
 */
function verdictOf(result: StackDecision, count: number, options: DecideOptions): { outcome: Outcome | undefined; cacheable: boolean } {
  if (result.allowed) return { outcome: options.shadowRefused === true ? 'shadow-refused' : 'allowed', cacheable: false };
  const shadows = options.shadows ?? [];
  const refusing = result.decisions.flatMap((decision, i) => (decision.allowed ? [] : [i]));
  const byShadows = refusing.filter((i) => shadows.includes(i)).length;
  if (byShadows < refusing.length) return { outcome: 'refused', cacheable: byShadows === 0 };
  return { outcome: shadows.length < count ? undefined : 'shadow-refused', cacheable: false };
}

function decisionEvent(
  result: StackDecision,
  checked: CheckedLimit[],
  limits: readonly StackedLimit[],
  route: string | undefined,
  outcome?: Outcome,
): RedisLimitEvent {
  return {
    type: 'redis-limit.decision',
    ...(route === undefined ? {} : { route }),
    // a request shadow limits alone refused goes on
    allowed: result.allowed || outcome === 'shadow-refused',
    ...(outcome === 'shadow-refused' ? { shadowRefused: true as const } : {}),
    retryAfterMs: result.retryAfterMs,
    limits: checked.map(({ key, spec }, i) => ({
      key,
      ...(limits[i]!.scope === undefined ? {} : { scope: limits[i]!.scope }),
      kind: KIND_NAMES[spec.kind],
      limit: spec.limit,
      allowed: result.decisions[i]!.allowed,
      remaining: result.decisions[i]!.remaining,
    })),
  };
}

/** One slot's verdicts: its limits' decisions and grant ids (decide.lua's reply). */
interface ParsedGroup {
  allowed: boolean;
  limits: { index: number; decision: RateLimitDecision; grant: string; lockedOut: boolean }[];
}

function parseGroup(stack: DecidedStack, group: number[], checked: CheckedLimit[]): ParsedGroup {
  const limits = group.map((index, i) => {
    const { verdict, remaining, retryAfterMs, resetMs, grant } = stack.limits[i]!;
    const decision: RateLimitDecision = {
      allowed: verdict === RateLimitReply.GRANTED,
      limit: checked[index]!.spec.limit,
      remaining: Math.max(0, remaining),
      retryAfterMs: verdict === RateLimitReply.GRANTED ? 0 : retryAfterMs,
      resetMs,
    };
    return { index, decision, grant, lockedOut: verdict === RateLimitReply.BLOCKED };
  });
  return { allowed: stack.verdict === RateLimitReply.GRANTED, limits };
}

/** The stack's verdict from its slots' verdicts, decisions in stack order. */
function stackOf(checked: CheckedLimit[], groups: ParsedGroup[], sign: (index: number, grant: string) => string, allowed = groups[0]!.allowed): StackDecision {
  const decisions = new Array<RateLimitDecision>(checked.length);
  let lockedOut: number[] | undefined;
  for (const group of groups) {
    for (const { index, decision, grant, lockedOut: blocked } of group.limits) {
      // a refused stack charged nothing (what a slot charged was given back): no grant to name
      if (allowed && grant !== '') attachGrantId(decision, () => sign(index, grant));
      if (blocked) (lockedOut ??= []).push(index);
      decisions[index] = decision;
    }
  }
  const retryAfterMs = Math.max(0, ...decisions.map((d) => d.retryAfterMs));
  return lockedOut === undefined ? { allowed, retryAfterMs, decisions } : { allowed, retryAfterMs, decisions, lockedOut };
}
