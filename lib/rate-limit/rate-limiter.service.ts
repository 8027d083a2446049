import { Inject, Injectable } from '@nestjs/common';
import { sleepOn } from '../redis/clock.js';
import { assertKey } from '../redis/keys.js';
import { checkStackedLimit, checkTarget } from './checked-limit.js';
import { DecisionEngine, type CheckedTarget } from './decision-engine.js';
import type { DecideOptions, LimitOperationOptions, StackDecision, StackedLimit } from './decision.types.js';
import type { NamedLimit } from './overrides-declared.js';
import { assertOverride, type AppliedOverride, type OverridePolicy } from './overrides-policy.js';
import {
  assertAcquireOptions,
  assertBlockDuration,
  assertGrantId,
  assertLimitInput,
  assertPenalty,
  assertStackInput,
  rateLimitSpec,
  type FunnelPolicy,
  type RateLimitDecision,
  type RateLimitPolicy,
} from './policy.js';
import { assertPositiveInteger, assertWellFormed } from '../validation.js';
import { ConcurrencySlots, isRefusal } from './concurrency-slots.js';
import { assertSlotOptions, type SlotOptions } from './slot-options.js';

/** The options of a stack consume and funnel decide (shared: the engine only reads them). */
const CONSUME: DecideOptions = Object.freeze({});
/** ...and those of a stack peek decides. */
const PEEK: DecideOptions = Object.freeze({ peek: true });

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
export class RateLimiterService {
  // checks what callers give and turns it into checked limits; the engine decides
  constructor(
    @Inject(DecisionEngine) private readonly engine: DecisionEngine,
    @Inject(ConcurrencySlots) private readonly slots: ConcurrencySlots,
  ) {}

  /**
   * Takes one of `key`'s concurrency slots, across every app instance, unless `opts.limit` are
   * held: at most `limit` holders of a key at once (a tenant's exports). The slot is renewed every
   * third of `leaseMs` while this process lives; `release()` gives it back (once; later calls do
   * nothing). A process that dies stops renewing, and its slots come back when their leases end.
   * Slots of different `name`s are counted apart.
   * @param key - whose slots, e.g. `tenant:42`: a non-empty string
   * @param opts - `{ limit, name?, leaseMs? }`: `limit` a positive integer; `name` a non-empty
   * string; `leaseMs` (default 30,000) an integer from 1 to 2^31 − 1
   * @returns the slot, or null when all `limit` are held
   * @throws TypeError `key` when not a non-empty string; TypeError `opts` when not an object, or
   * with another option; TypeError / RangeError `opts.limit`, `opts.name`, `opts.leaseMs`.
   * @throws RedisUnavailableError, RedisTimeoutError or RedisScriptError when Redis fails (also
   * from `release()`: the slot then comes back when its lease ends).
   * @example
   * ```ts
   * const slot = await limiter.acquireSlot(`tenant:${tenantId}`, { limit: 2, name: 'exports' });
   * if (slot === null) throw new HttpException('two exports are running already', 429);
   * try {
   *   await this.runExport(tenantId);
   * } finally {
   *   await slot.release();
   * }
   * ```
   */
  async acquireSlot(key: string, opts: SlotOptions): Promise<{ release(): Promise<void> } | null> {
    assertKey(key, 'key');
    assertWellFormed(key, 'key');
    const { limit, name, leaseMs } = assertSlotOptions(opts, 'opts');
    const slot = await this.slots.acquire(key, { name }, limit, leaseMs);
    if (isRefusal(slot)) return null;
    return { release: () => slot.release() };
  }

  /**
   * Every limit this app declares with `name` (`@RateLimit`, `@Funnel`, defaultLimits) uses `policy`
   * from now on, in every app instance on this Redis: at once here, at once where pub/sub is up,
   * within about a second elsewhere. `windowMs` absent: each limit keeps its own window. With
   * `key`, only requests whose limit resolves that key (a tenant, a user) get it, and it beats the
   * name's override; with `ttlMs`, it lapses by itself that long from now (the Redis server's
   * clock). null removes the override (with `opts.key`, that key's). A changed window starts
   * fresh counters; a changed limit keeps them. Names are known once the app has started. A name
   * no limit of this app carries is stored, with one warning naming it (an admin app, a worker or
   * a CLI setting overrides for the instances that declare it); each instance applies a stored
   * override only if its own limits of that name can take it (else it keeps them as declared,
   * with one warning): see docs/runtime-overrides.md.
   * @param name - the `name` of the limits to change
   * @param policy - `{ limit, windowMs?, key?, ttlMs? }` (positive integers, ms; `key` a non-empty
   * string), or null to remove the override
   * @param opts - `{ key }` with a null policy: removes that key's override (the name's stays)
   * @throws TypeError `name` when not a non-empty string or it holds a lone surrogate; TypeError
   * `policy` when not an object or null, or with another option; TypeError `opts` when given with
   * a policy, or not `{ key }`.
   * @throws TypeError / RangeError `policy.limit` / `policy.windowMs` / `policy.ttlMs` when not a
   * positive integer; TypeError `policy.key` / `opts.key` when not a non-empty, well-formed
   * string; RangeError, where this app declares the name, when the limit is below a declared cost
   * or quota, a window is given for a name a route holds twice, or a bucket's limit × window is
   * above 2^53.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * await limiter.setOverride('login', { limit: 3 });                   // each 'login' limit keeps its window
   * await limiter.setOverride('login', { limit: 10, windowMs: 60_000 }); // a fresh counter per minute
   * await limiter.setOverride('export', { key: 'tenant:42', limit: 500, ttlMs: 3_600_000 }); // one tenant, for an hour
   * await limiter.setOverride('export', null, { key: 'tenant:42' });   // that tenant back to the name's
   * await limiter.setOverride('login', null);                           // back to the declared limits
   * ```
   */
  async setOverride(name: string, policy: OverridePolicy | null, opts?: { key?: string }): Promise<void> {
    const checked = assertOverride(name, policy, opts);
    if (checked.override !== null) this.engine.overrides.declared.assertApplies(name, checked.override);
    await this.engine.overrides.set(name, checked);
  }

  /**
   * The overrides stored in Redis, as they apply in this app: per-name ones by name, per-key ones
   * as `<name>:<key>` with their `name` and `key`; `expiresAt` (server ms) where one lapses.
   * `windowMs` is the override's own, else the declared window (the shortest where a name's limits
   * differ; 0 when none is known).
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async overrides(): Promise<Record<string, AppliedOverride>> {
    return this.engine.overrides.list();
  }

  /** The names this app's limits carry (decorators and defaultLimits), each with its limits as
   * declared: what setOverride can change. Known once the app has started; never asks Redis. */
  namedLimits(): Record<string, NamedLimit[]> {
    return this.engine.overrides.declared.list();
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
  consume(key: string, policy: RateLimitPolicy, permits = 1): Promise<RateLimitDecision> {
    return this.decideOne({ key, policy, permits }, CONSUME);
  }

  /**
   * Whether one permit would be granted now, and what is left; charges nothing. A key never used
   * peeks as `{ allowed: true, remaining: limit, resetMs: 0 }`.
   * @throws TypeError / RangeError for a bad `key` or `policy`, as `consume`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  peek(key: string, policy: RateLimitPolicy): Promise<RateLimitDecision> {
    return this.decideOne({ key, policy }, PEEK);
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
    // checked once, however many tries it takes
    const limits = [checkStackedLimit({ key, policy, permits })];
    // on the engine's clock: forTesting's test clock moves a wait, as it moves the window
    const { clock } = this.engine;
    const deadline = clock.now() + (timeoutMs ?? Infinity);
    for (;;) {
      const decision = (await this.engine.decide(limits)).decisions[0]!;
      if (decision.allowed) return true;
      if (clock.now() + decision.retryAfterMs > deadline) return false;
      await sleepOn(clock, Math.max(1, decision.retryAfterMs));
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
    const target = checkedTarget(limit, options);
    assertGrantId(grantId);
    if (permits !== undefined) assertPositiveInteger(permits, 'permits');
    return this.engine.refund(target, grantId, permits, options);
  }

  /** `penalize` for one limit of a stack (its `permits` are ignored: `permits` is the charge).
   * @throws as `penalize`, and TypeError `limit` as `refundLimit`. */
  async penalizeLimit(limit: StackedLimit, permits: number, options: LimitOperationOptions = {}): Promise<RateLimitDecision> {
    const target = checkedTarget(limit, options);
    assertPenalty(permits, target.spec);
    return this.engine.penalize(target, permits, options);
  }

  /** `block` for one limit of a stack (its `permits` are ignored).
   * @throws as `block`, and TypeError `limit` as `refundLimit`. */
  async blockLimit(limit: StackedLimit, durationMs: number, options: LimitOperationOptions = {}): Promise<void> {
    const target = checkedTarget(limit, options);
    assertBlockDuration(durationMs);
    return this.engine.block(target, durationMs, options);
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
    await this.engine.reset(key, rateLimitSpec(policy));
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
    return this.engine.resetNamed(name, key);
  }

  /**
   * Where `key` stands with the limits declared with `name`, one sentence per counter: how much of
   * its limit is used in its window (or bucket), a lockout (`blockMs`) in force and for how long,
   * an override in force (the key's own or the name's, with its lapse), and a refusal this
   * process remembers in its refusal cache. Reads only: nothing is charged, counted or announced.
   * Works from any process on the same Redis and key prefix; a counter whose limit a user tier
   * decides per request is named, and read where its count does not depend on the limit.
   * @param name - the limits' `name`: a non-empty string
   * @param key - the resolved key, as the limit's `key` function (or the tracker) gave it
   * @throws TypeError `name` / `key` when not a non-empty string.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * await limiter.explain('login', 'ada@example.com');
   * // ['sliding-window, 60000 ms window: 5 of 5 used; refusing for 41210 ms; back to full in 59870 ms.']
   * ```
   */
  async explain(name: string, key: string): Promise<string[]> {
    assertKey(name, 'name');
    assertKey(key);
    return this.engine.explain(name, key);
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
  funnel(key: string, funnel: FunnelPolicy, quota = 1): Promise<RateLimitDecision> {
    return this.decideOne({ key, funnel, permits: quota }, CONSUME);
  }

  /**
   * Decides a stack of limits: all grant and all are charged, or none is. One atomic Redis call
   * when the stack's keys share a cluster slot (always off a cluster); otherwise one call per
   * slot, and what those charged is given back if another refuses (see DecisionEngine).
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
    const peek = options.peek === true;
    const checked = limits.map((limit, i) => checkStackedLimit(limit, peek, limits.length > 1 ? `limits[${i}]` : ''));
    return this.engine.decide(checked, options);
  }

  /** consume, peek and funnel: a stack of one limit the method built itself (an object with
   * nothing else, so only its values need checking), checked as `decide` would check it. A
   * failed check rejects, as every method here does. */
  private async decideOne(limit: StackedLimit, options: DecideOptions): Promise<RateLimitDecision> {
    const { decisions } = await this.engine.decide([checkStackedLimit(limit, options.peek)], options);
    return decisions[0]!;
  }
}

/** One limit of refundLimit, penalizeLimit or blockLimit, and their options, checked. */
function checkedTarget(limit: StackedLimit, options: LimitOperationOptions): CheckedTarget {
  assertLimitInput(limit, options);
  const { key, scope, spec } = checkTarget(limit);
  return { key, scope, spec };
}
