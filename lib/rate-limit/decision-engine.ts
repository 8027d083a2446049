import { Inject, Injectable, Optional, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { Telemetry, type DecisionSpan } from '../observability/telemetry.js';
import type { Clock } from '../redis/clock.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { RateLimitReply } from '../redis/replies.js';
import { checkedLimit, type CheckedLimit } from './checked-limit.js';
import { CounterScopes } from './counter-scopes.js';
import { DecisionBatcher, type DecidedStack } from './decision-batch.js';
import type { DecideOptions, LimitOperationOptions, StackDecision } from './decision.types.js';
import { GrantIds } from './grant-ids.js';
import { grantedWithoutCharge, LIMITS_OFF } from './limits-off.js';
import { countersOf, explainCounter, PROBE_LIMIT, readableWithoutLimit, type CounterReading } from './limit-explanation.js';
import { Overrides } from './overrides.js';
import { counterKind, KIND_NAMES, type LimitSpec, type RateLimitDecision } from './policy.js';
import { Refusals } from './refusals.js';
import { bySlot, decisionEvent, parseGroup, stackOf, verdictOf, type ParsedGroup } from './stack-verdict.js';

/** One limit as refund, penalize and block act on it: its counter, whatever its permits. */
export type CheckedTarget = Pick<CheckedLimit, 'key' | 'scope' | 'spec'>;

/**
 * Deciding, under RateLimiterService and the guards: checked limits in, Redis's verdict out, with
 * the refusal cache, grant ids, batching, cross-slot stacks and events on the way. It checks
 * nothing it is given: RateLimiterService checks public input, the guards' plans were checked at
 * start-up, so no request is checked twice.
 */
@Injectable()
export class DecisionEngine implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly batcher: DecisionBatcher;
  private readonly refusals: Refusals;
  private readonly grants: GrantIds;
  private readonly scopes: CounterScopes;
  /** The runtime overrides in force here; route plans read them and declare their names. */
  readonly overrides: Overrides;

  constructor(
    @Inject(RedisConnection) private readonly redis: RedisConnection,
    @Inject(Telemetry) private readonly telemetry: Telemetry,
    /** forTesting({ limits: 'off' }): every decision grants, uncharged. */
    @Optional() @Inject(LIMITS_OFF) private readonly limitsOff: boolean = false,
  ) {
    this.batcher = new DecisionBatcher(redis.scripts, redis.cluster);
    this.refusals = new Refusals(redis);
    this.grants = new GrantIds(redis);
    this.scopes = new CounterScopes(redis);
    // a refusal remembered under the old numbers must not outlive a raised limit
    this.overrides = new Overrides(redis, () => this.refusals.clear());
  }

  /** After every route's plan is compiled (their names declared), before the first request. */
  async onApplicationBootstrap(): Promise<void> {
    await this.overrides.start();
  }

  onApplicationShutdown(): void {
    this.refusals.close();
    this.overrides.close();
  }

  /** The time waits go by: the system's, or forTesting's test clock. */
  get clock(): Clock {
    return this.redis.clock;
  }

  /** A limit's counter: its Redis key. */
  counter({ key, scope, spec }: CheckedTarget): string {
    return this.redis.keys.build(counterKind(spec), key, scope);
  }

  /**
   * Decides a stack: all grant and all are charged, or none is. One atomic Redis call when the
   * stack's keys share a cluster slot (always off a cluster); otherwise one call per slot, and
   * what those charged is given back if another refuses (see decideAcrossSlots). A refusal
   * remembered by the refusal cache answers without Redis. `limits` of a peek carry 1 permit.
   */
  decide(limits: readonly CheckedLimit[], options: DecideOptions = {}): Promise<StackDecision> {
    if (this.limitsOff) return Promise.resolve(grantedWithoutCharge(limits));
    // a peek decides nothing: no span, as no event
    const span = options.peek ? undefined : this.telemetry.startDecision();
    return span === undefined ? this.decideStack(limits, options, undefined) : span.around(this.decideStack(limits, options, span));
  }

  private async decideStack(limits: readonly CheckedLimit[], options: DecideOptions, span: DecisionSpan | undefined): Promise<StackDecision> {
    const keys = limits.map((limit) => this.counter(limit));
    // peeks and the test clock ask Redis every time
    const cached = options.peek || options.now !== undefined ? undefined : this.refusals.lookup(keys, limits);
    if (cached !== undefined && 'hit' in cached) {
      const result: StackDecision = { allowed: false, ...cached.hit, cached: true };
      const event = () => ({ ...decisionEvent(result, limits, options.route), cached: true as const });
      this.redis.events.decision('refused', event);
      span?.decided(event());
      return result;
    }
    let secret: string | Promise<string> | undefined;
    if (!options.peek) {
      // resetLimit finds a name's counters by the kinds they have used (names are finite: declared in code)
      for (let i = 0; i < limits.length; i++) {
        const scope = limits[i]!.scope;
        if (scope !== undefined && this.overrides.declared.has(scope)) this.scopes.note(scope, counterKind(limits[i]!.spec));
      }
      // the grants are signed when they come back; a process's first asks for the secret on the
      // way, ahead of the decision on the same connection (a failure is the decision's, below)
      secret = this.grants.ready();
      if (secret instanceof Promise) secret.catch(() => undefined);
    }
    const sign = (i: number, grant: string) => this.grants.sign(keys[i]!, grant);
    const groups = this.redis.cluster ? bySlot(keys) : undefined;
    let result: StackDecision;
    if (groups === undefined || groups.length === 1) {
      // one call for the whole stack, its limits in stack order
      const reply = await this.batcher.decide(keys, options.peek ? '0' : '1', limits, options.now);
      if (secret instanceof Promise) await secret;
      result = stackOf(limits, [parseGroup(reply, everyIndex(limits.length), limits)], sign);
    } else {
      // slot by slot, charges are refunded when one refuses: nothing charged before the secret is here
      if (secret instanceof Promise) await secret;
      result = await this.decideAcrossSlots(groups, limits, keys, options, sign);
    }
    const { outcome, cacheable } = verdictOf(result, limits.length, options);
    if (cached !== undefined && cacheable) this.refusals.remember(cached.sent, result.retryAfterMs, result.decisions);
    // a peek decides nothing: not counted, not announced
    if (!options.peek && outcome !== undefined) {
      const event = () => decisionEvent(result, limits, options.route, outcome);
      this.redis.events.decision(outcome, event);
      span?.decided(event());
    }
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
    limits: readonly CheckedLimit[],
    keys: string[],
    options: DecideOptions,
    sign: (index: number, grant: string) => string,
  ): Promise<StackDecision> {
    const settled = await Promise.allSettled(groups.map((group) => this.send(group, limits, keys, options)));
    const parsed = settled.map((s, g) => (s.status === 'fulfilled' ? parseGroup(s.value, groups[g]!, limits) : undefined));
    const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    const allowed = failure === undefined && parsed.every((group) => group!.allowed);
    if (!allowed && !options.peek) {
      const charged = parsed.filter((group): group is ParsedGroup => group?.allowed === true);
      await Promise.all(charged.map((group) => this.refundGroup(group, limits, keys, options).catch(() => undefined)));
    }
    if (failure) throw failure.reason;
    return stackOf(limits, parsed as ParsedGroup[], sign, allowed);
  }

  /** One slot's limits (indexes into the stack) in one decide.lua call. */
  private send(group: number[], limits: readonly CheckedLimit[], keys: string[], options: DecideOptions): Promise<DecidedStack> {
    return this.batcher.decide(
      group.map((i) => keys[i]!),
      options.peek ? '0' : '1',
      group.map((i) => limits[i]!),
      options.now,
    );
  }

  /** Gives back what one slot's call charged; the limits' `remaining` then counts it again. */
  private async refundGroup(group: ParsedGroup, limits: readonly CheckedLimit[], keys: string[], options: DecideOptions): Promise<void> {
    const states = group.limits.map(({ index }) => keys[index]!);
    const grants = group.limits.map(({ index, grant }) => ({ ...limits[index]!, grant }));
    const { given } = await this.redis.scripts.call('rateLimitRefund', {
      keys: { states },
      args: { now: options.now, limits: grants, channel: this.refusals.publishChannel },
    });
    this.refusals.forget(states);
    group.limits.forEach((limit, i) => {
      limit.decision.remaining = Math.min(limit.decision.limit, limit.decision.remaining + given[i]!);
    });
  }

  /** Gives back up to `permits` (undefined: all) of the grant `grantId` names on `limit`'s counter;
   * resolves to how many came back (0 for an id this library did not issue for it). */
  async refund(limit: CheckedTarget, grantId: string, permits: number | undefined, options: LimitOperationOptions = {}): Promise<number> {
    const { key, spec } = limit;
    const counter = this.counter(limit);
    // an id this library did not issue for this counter never reaches a script
    const opened = this.grants.open(counter, grantId);
    const grant = opened instanceof Promise ? await opened : opened;
    if (grant === undefined) return 0;
    // a grant never holds more than the limit, so the limit stands for "all of it"
    const ask = Math.min(permits ?? spec.limit, spec.limit);
    const { given } = await this.redis.scripts.call('rateLimitRefund', {
      keys: { states: [counter] },
      args: { now: options.now, limits: [{ ...spec, permits: ask, grant }], channel: this.refusals.publishChannel },
    });
    const back = given[0]!;
    this.refusals.forget([counter]);
    this.redis.events.refund(back, () => ({
      type: 'redis-limit.refund',
      key,
      ...scopeOf(limit),
      kind: KIND_NAMES[spec.kind],
      limit: spec.limit,
      permits: back,
    }));
    return back;
  }

  /** Charges `permits` on `limit`'s counter whether or not they fit; the verdict on one more after. */
  async penalize(limit: CheckedTarget, permits: number, options: LimitOperationOptions = {}): Promise<RateLimitDecision> {
    const { key, spec } = limit;
    const args = { ...spec, now: options.now, permits };
    const { verdict, remaining, retryAfterMs, resetMs } = await this.redis.scripts.call('rateLimitPenalize', { keys: { state: this.counter(limit) }, args });
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
      ...scopeOf(limit),
      kind: KIND_NAMES[spec.kind],
      limit: spec.limit,
      permits,
      remaining: decision.remaining,
    }));
    return decision;
  }

  /** Refuses `limit`'s counter for `durationMs` (a longer block in force stays). */
  async block(limit: CheckedTarget, durationMs: number, options: LimitOperationOptions = {}): Promise<void> {
    const { key, spec } = limit;
    const counter = this.counter(limit);
    const args = { ...spec, now: options.now, durationMs, channel: this.refusals.publishChannel };
    await this.redis.scripts.call('rateLimitBlock', { keys: { state: counter }, args });
    this.refusals.forget([counter]);
    this.redis.events.block(() => ({ type: 'redis-limit.block', key, ...scopeOf(limit), kind: KIND_NAMES[spec.kind], limit: spec.limit, durationMs }));
  }

  /** Forgets `key`'s counter of `spec`'s algorithm and window (no scope), and any block. */
  async reset(key: string, spec: LimitSpec): Promise<void> {
    const counter = this.counter({ key, scope: undefined, spec });
    await this.redis.scripts.bounded(this.redis.client.del(counter), 'DEL');
    // not awaited: this process forgets at once, others when the message arrives, which waiting
    // would not hasten (refund and block publish from their scripts instead)
    this.refusals.invalidate([counter]).catch(() => undefined);
  }

  /**
   * Where `key` stands with each counter of the limits named `name`, one sentence per counter
   * (limit-explanation.ts): used of its limit, a lockout, an override in force, a refusal this
   * process remembers. Two round trips: the name's counter kinds and the overrides, then one peek
   * of every counter (they share the key's hash slot). A peek charges, counts and announces nothing.
   */
  async explain(name: string, key: string): Promise<string[]> {
    const [used, listed] = await Promise.all([this.scopes.kinds(name), this.overrides.list()]);
    const own = Object.values(listed).find((o) => o.name === name && o.key === key);
    const named = listed[name]?.key === undefined ? listed[name] : undefined;
    const counters = countersOf(used, this.overrides.declared.list()[name] ?? [], own, named);
    if (counters.length === 0) return [`No counter is named '${name}': no process has used one, and this app declares none with a fixed window.`];
    const readable = counters.map((c) => c.limit !== undefined || readableWithoutLimit(c.spec.kind));
    const peeks = counters.flatMap((c, i) => (readable[i] ? [checkedLimit(key, name, { ...c.spec, limit: c.limit ?? PROBE_LIMIT }, 1)] : []));
    const peeked = peeks.length === 0 ? undefined : await this.decide(peeks, { peek: true });
    let at = 0;
    return counters.map((counter, i) => {
      const reading: CounterReading = {};
      if (readable[i]) {
        const j = at++;
        reading.decision = peeked!.decisions[j]!;
        reading.lockedOut = peeked!.lockedOut?.includes(j) ?? false;
        if (counter.limit === undefined) reading.probeLimit = PROBE_LIMIT;
      }
      const cached = this.refusals.refusingFor(this.counter({ key, scope: name, spec: { ...counter.spec, limit: 0 } }));
      if (cached !== undefined) reading.cachedForMs = cached;
      return explainCounter(counter, reading);
    });
  }

  /** Forgets every counter of the limits named `name` for `key`; resolves to how many held something. */
  async resetNamed(name: string, key: string): Promise<number> {
    const counters = (await this.scopes.kinds(name)).map((kind) => this.redis.keys.build(kind, key, name));
    if (counters.length === 0) return 0;
    // one hash tag, the key's: one slot, one call
    const reset = await this.redis.scripts.bounded(this.redis.client.del(...counters), 'DEL');
    await this.refusals.invalidate(counters);
    return reset;
  }
}

const scopeOf = ({ scope }: CheckedTarget) => (scope === undefined ? {} : { scope });

/** [0, 1, ..., n - 1], made once per length: a stack decided in one call, in stack order. */
const EVERY_INDEX: (readonly number[])[] = [];
function everyIndex(n: number): readonly number[] {
  return (EVERY_INDEX[n] ??= Object.freeze(Array.from({ length: n }, (_, i) => i)));
}
