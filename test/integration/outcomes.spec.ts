import { RedisLimitEvents, type RateLimitPolicy, type RateLimiterService, type RedisLimitEvent, type StackedLimit } from '../../lib/index.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkStackedLimit, type CheckedLimit } from '../../lib/rate-limit/checked-limit.js';
import { DecisionEngine } from '../../lib/rate-limit/decision-engine.js';
import { Outcomes } from '../../lib/rate-limit/outcome.js';
import { RouteLog } from '../../lib/rate-limit/route-log.js';
import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { limiterModule, withLimiterApp } from '../harness/limiter-app.js';
import { until } from '../harness/until.js';

// refund, penalize and block through RateLimiterService, on the Redis clock unless a test needs
// explicit times (the `now` test hook of the stack-level forms).
describe('refund, penalize and block', () => {
  const ctx = withLimiterApp();
  const T0 = 2_000_000_000_000; // a multiple of 60_000
  let keyNo = 0;
  const nextKey = () => `o-${++keyNo}`;
  const ALGORITHMS = ['fixed-window', 'sliding-window', 'sliding-window-counter', 'token-bucket'] as const;
  const policyOf = (algorithm: (typeof ALGORITHMS)[number]): RateLimitPolicy => ({ limit: 5, windowMs: 60_000, algorithm });

  describe.each(ALGORITHMS)('%s', (algorithm) => {
    const policy = policyOf(algorithm);
    // On the server clock: a refund gives back only in its grant's fixed window, and a bucket
    // refills. A day's windows, none ending mid-test, keep every call of a test in one window.
    const live: RateLimitPolicy = { ...policy, windowMs: DAY_MS };
    beforeEach(() => awayFromWindowEnd(DAY_MS));

    it('refund gives a grant back once, in part then the rest, then 0', async () => {
      const { limiter } = ctx.app;
      const limit: StackedLimit = { key: nextKey(), policy };
      const grant = (await limiter.decide([{ ...limit, permits: 3 }], { now: T0 })).decisions[0]!;
      expect(grant.grantId).toEqual(expect.any(String));
      expect(await limiter.refundLimit(limit, grant.grantId!, 1, { now: T0 })).toBe(1);
      expect(await limiter.refundLimit(limit, grant.grantId!, undefined, { now: T0 })).toBe(2);
      expect(await limiter.refundLimit(limit, grant.grantId!, undefined, { now: T0 })).toBe(0);
      expect((await limiter.decide([limit], { now: T0, peek: true })).decisions[0]).toMatchObject({ allowed: true, remaining: 5 });
    });

    it('refund on the Redis clock: the short form, twice', async () => {
      const { limiter } = ctx.app;
      const key = nextKey();
      const grant = await limiter.consume(key, live, 2);
      // (a token bucket refills a little meanwhile: nothing was charged since, so all comes back)
      expect(await limiter.refund(key, live, grant.grantId!)).toBe(2);
      expect(await limiter.refund(key, live, grant.grantId!)).toBe(0);
    });

    it('refusals and peeks carry no grantId; penalties charge past the limit', async () => {
      const { limiter } = ctx.app;
      const key = nextKey();
      expect(await limiter.consume(key, live, 4)).toMatchObject({ allowed: true, remaining: 1 });
      expect((await limiter.consume(key, live, 2)).grantId).toBeUndefined();
      expect((await limiter.peek(key, live)).grantId).toBeUndefined();
      const penalty = await limiter.penalize(key, live, 7);
      expect(penalty).toMatchObject({ allowed: false, limit: 5, remaining: 0 });
      expect(penalty.grantId).toBeUndefined();
      expect(penalty.retryAfterMs).toBeGreaterThan(0);
      // more penalty, longer wait (a fixed window waits for its end whatever it holds)
      const more = await limiter.penalize(key, live, 7);
      expect(more.retryAfterMs).toBeGreaterThanOrEqual(algorithm === 'fixed-window' ? penalty.retryAfterMs - 1000 : penalty.retryAfterMs);
      expect(await limiter.consume(key, live)).toMatchObject({ allowed: false, remaining: 0 });
    });

    it('block refuses for its duration, then the key counts as before', async () => {
      const { limiter } = ctx.app;
      const key = nextKey();
      const limit: StackedLimit = { key, policy };
      await limiter.decide([{ ...limit, permits: 2 }], { now: T0 });
      await limiter.blockLimit(limit, 30_000, { now: T0 + 1 });
      expect(await limiter.decide([limit], { now: T0 + 2 })).toMatchObject({ allowed: false, retryAfterMs: 29_999 });
      expect((await limiter.decide([limit], { now: T0 + 2, peek: true })).decisions[0]).toMatchObject({ allowed: false, remaining: 0 });
      // a shorter block does not cut a longer one short
      await limiter.blockLimit(limit, 10, { now: T0 + 3 });
      expect(await limiter.decide([limit], { now: T0 + 30_000 })).toMatchObject({ allowed: false, retryAfterMs: 1 });
      // after: what the key used is still counted (the token bucket refilled some meanwhile)
      const after = await limiter.decide([limit], { now: T0 + 30_001 });
      expect(after.decisions[0]).toMatchObject({ allowed: true, remaining: algorithm === 'token-bucket' ? 4 : 2 });
    });
  });
});

describe('refund, penalize and block: each case', () => {
  const ctx = withLimiterApp();
  const T0 = 2_000_000_000_000;
  let keyNo = 0;
  const nextKey = () => `c-${++keyNo}`;

  it('a refund after the grant no longer counts is 0: its window ended, or it aged out', async () => {
    const { limiter } = ctx.app;
    for (const algorithm of ['fixed-window', 'sliding-window'] as const) {
      // a minute, not a second: the times are explicit, but keys expire in real time, and the
      // last call reads the key the one before wrote
      const limit: StackedLimit = { key: nextKey(), policy: { limit: 3, windowMs: 60_000, algorithm } };
      const { grantId } = (await limiter.decide([{ ...limit, permits: 3 }], { now: T0 + 30_000 })).decisions[0]!;
      expect(await limiter.refundLimit(limit, grantId!, undefined, { now: T0 + 90_000 })).toBe(0);
      // nothing came back: the next window (or span) has its full limit, not more
      expect((await limiter.decide([{ ...limit, permits: 3 }], { now: T0 + 90_000 })).allowed).toBe(true);
      expect((await limiter.decide([limit], { now: T0 + 90_000 })).allowed).toBe(false);
    }
  });

  it('a funnel gives its quota back like a token bucket, to its own key', async () => {
    const { limiter } = ctx.app;
    const key = nextKey();
    const funnel = { capacity: 4, leakingDurationMs: 60_000 };
    const taken = (await limiter.decide([{ key, funnel, permits: 3 }], { now: T0 })).decisions[0]!;
    // a token bucket with the same numbers is another counter: nothing to give back there
    const bucket = { limit: 4, windowMs: 60_000, algorithm: 'token-bucket' as const };
    expect(await limiter.refundLimit({ key, policy: bucket }, taken.grantId!, undefined, { now: T0 })).toBe(0);
    expect(await limiter.refundLimit({ key, funnel }, taken.grantId!, 2, { now: T0 })).toBe(2);
    expect(await limiter.refundLimit({ key, funnel }, taken.grantId!, undefined, { now: T0 })).toBe(1);
    expect((await limiter.decide([{ key, funnel }], { now: T0, peek: true })).decisions[0]).toMatchObject({ remaining: 4 });
  });

  it('a stack holding a blocked limit is refused whole and charges nothing', async () => {
    const { limiter } = ctx.app;
    // different keys: on a cluster, different slots (decided slot by slot)
    const open: StackedLimit = { key: nextKey(), policy: { limit: 5, windowMs: 60_000 } };
    const locked: StackedLimit = { key: nextKey(), policy: { limit: 5, windowMs: 60_000, algorithm: 'fixed-window' } };
    await limiter.blockLimit(locked, 5_000, { now: T0 });
    const stack = await limiter.decide([open, locked], { now: T0 + 1_000 });
    expect(stack.allowed).toBe(false);
    expect(stack.retryAfterMs).toBe(4_000);
    expect(stack.decisions.map((d) => [d.allowed, d.remaining, d.grantId])).toEqual([
      [true, 5, undefined],
      [false, 0, undefined],
    ]);
    expect((await limiter.decide([open, locked], { now: T0 + 5_000 })).allowed).toBe(true);
  });

  it('while blocked, the wait is the longer of the block and the counter’s own', async () => {
    const { limiter } = ctx.app;
    const limit: StackedLimit = { key: nextKey(), policy: { limit: 2, windowMs: 10_000, algorithm: 'fixed-window' } };
    await limiter.decide([{ ...limit, permits: 2 }], { now: T0 });
    await limiter.blockLimit(limit, 1_000, { now: T0 });
    expect(await limiter.decide([limit], { now: T0 + 500 })).toMatchObject({ allowed: false, retryAfterMs: 9_500 });
  });

  it('a block outlives the counter’s own expiry on the Redis clock, then ends', async () => {
    const { limiter, raw, prefix } = ctx.app;
    const key = nextKey();
    const policy = { limit: 3, windowMs: 1000, algorithm: 'token-bucket' as const };
    await limiter.consume(key, policy);
    await limiter.block(key, policy, 60_000);
    const ttl = await raw.pttl(`${prefix}tb2.1000:{${key}}`);
    // generous: the block's 60 s, not the bucket's refill time (under 1 s)
    expect(ttl).toBeGreaterThan(30_000);
    expect(await limiter.consume(key, policy)).toMatchObject({ allowed: false });
    await limiter.reset(key, policy);
    expect(await limiter.consume(key, policy)).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('refund, penalize and block are reported as events and counted', async () => {
    const { limiter, moduleRef } = ctx.app;
    const events = moduleRef.get(RedisLimitEvents);
    const seen: RedisLimitEvent[] = [];
    const stop = events.on((event) => seen.push(event));
    const before = events.counters().outcomes;
    const key = nextKey();
    // on the server clock: a day's window, none ending mid-test, so the refund finds its window
    await awayFromWindowEnd(DAY_MS);
    const policy = { limit: 5, windowMs: DAY_MS, algorithm: 'fixed-window' as const };
    const { grantId } = await limiter.consume(key, policy, 2);
    await limiter.refund(key, policy, grantId!);
    await limiter.penalize(key, policy, 3);
    await limiter.blockLimit({ key, scope: 'login', policy }, 1_000);
    stop();
    expect(seen.filter((e) => e.type !== 'redis-limit.decision')).toEqual([
      { type: 'redis-limit.refund', key, kind: 'fixed-window', limit: 5, permits: 2 },
      { type: 'redis-limit.penalize', key, kind: 'fixed-window', limit: 5, permits: 3, remaining: 2 },
      { type: 'redis-limit.block', key, scope: 'login', kind: 'fixed-window', limit: 5, durationMs: 1_000 },
    ]);
    const after = events.counters().outcomes;
    expect(after).toEqual({ refundedPermits: before.refundedPermits + 2, penalizedPermits: before.penalizedPermits + 3, blocks: before.blocks + 1 });
  });

  it('a forged or foreign grant id gives nothing back', async () => {
    const { limiter } = ctx.app;
    // on the server clock: a day's windows, none ending mid-test, so the key stays full
    await awayFromWindowEnd(DAY_MS);
    for (const algorithm of ['fixed-window', 'sliding-window', 'sliding-window-counter', 'token-bucket'] as const) {
      const key = nextKey();
      const policy = { limit: 5, windowMs: DAY_MS, algorithm };
      await limiter.consume(key, policy, 5);
      for (const id of ['x', '1:2:3', 'a1', '1:a1:1', '1:1:1:1:1:1']) expect(await limiter.refund(key, policy, id)).toBe(0);
      const other = await limiter.consume(nextKey(), policy, 1);
      expect(await limiter.refund(key, policy, other.grantId!)).toBe(0);
      expect(await limiter.peek(key, policy)).toMatchObject({ allowed: false });
    }
  });

  describe('bad input names the argument, before Redis is asked', () => {
    const policy: RateLimitPolicy = { limit: 5, windowMs: 1000 };
    const rows: [string, (l: RateLimiterService) => Promise<unknown>, typeof TypeError | typeof RangeError, RegExp][] = [
      ['refund: empty key', (l) => l.refund('', policy, 'g'), TypeError, /^key must be a non-empty string/],
      ['refund: bad policy', (l) => l.refund('k', { limit: 0, windowMs: 1 }, 'g'), RangeError, /^policy\.limit must be a positive integer/],
      ['refund: grantId not a string', (l) => l.refund('k', policy, 7 as unknown as string), TypeError, /^grantId must be/],
      ['refund: empty grantId', (l) => l.refund('k', policy, ''), TypeError, /^grantId must be/],
      ['refund: permits 0', (l) => l.refund('k', policy, 'g', 0), RangeError, /^permits must be a positive integer/],
      ['refund: permits 1.5', (l) => l.refund('k', policy, 'g', 1.5), RangeError, /^permits must be a positive integer/],
      ['refund: permits a string', (l) => l.refund('k', policy, 'g', '2' as unknown as number), TypeError, /^permits must be a positive integer/],
      ['penalize: permits 0', (l) => l.penalize('k', policy, 0), RangeError, /^permits must be a positive integer/],
      [
        'penalize: permits missing',
        (l) => (l.penalize as (k: string, p: RateLimitPolicy) => Promise<unknown>)('k', policy),
        TypeError,
        /^permits must be a positive integer/,
      ],
      [
        'penalize: a bucket past 2^53',
        (l) => l.penalize('k', { limit: 5, windowMs: 1000, algorithm: 'token-bucket' }, 2 ** 50),
        RangeError,
        /^permits \(\d+\) is too large for this bucket/,
      ],
      ['block: durationMs 0', (l) => l.block('k', policy, 0), RangeError, /^durationMs must be a positive integer/],
      ['block: durationMs a string', (l) => l.block('k', policy, '5' as unknown as number), TypeError, /^durationMs must be a positive integer/],
      ['block: empty key', (l) => l.block('', policy, 5), TypeError, /^key must be a non-empty string/],
      ['refundLimit: no limit', (l) => l.refundLimit(null as unknown as StackedLimit, 'g'), TypeError, /^limit must be an object/],
      [
        'blockLimit: policy and funnel',
        (l) => l.blockLimit({ key: 'k', policy, funnel: { capacity: 1, leakingDurationMs: 1 } }, 5),
        TypeError,
        /^limit takes a policy or a funnel/,
      ],
      [
        'penalizeLimit: bad funnel',
        (l) => l.penalizeLimit({ key: 'k', funnel: { capacity: -1, leakingDurationMs: 1 } }, 1),
        RangeError,
        /^funnel\.capacity must be/,
      ],
      ['refundLimit: bad now', (l) => l.refundLimit({ key: 'k', policy }, 'g', 1, { now: -1 }), RangeError, /^options\.now must be/],
      ['blockLimit: bad scope', (l) => l.blockLimit({ key: 'k', scope: '', policy }, 5), TypeError, /^scope must be a non-empty string/],
    ];

    it.each(rows)('%s', async (_label, call, type, message) => {
      const error = await call(ctx.app.limiter).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(type);
      expect((error as Error).message).toMatch(message);
    });
  });
});

// A lockout (blockMs) starts once: a refusal Redis gave while a block was in force never blocks
// again, whichever instance started it, even when the block call was slow to run (CI met this on
// Valkey: the process counted its lockout from before the call, Redis from when it ran, and a
// knock refused in between started a second lockout).
describe('lockouts from a guard decision', () => {
  const ctx = withLimiterApp();

  it('two instances behind round-robin: the lockout begins once and lasts blockMs, neither more nor less', async () => {
    const other = await limiterModule(ctx.redis, { keyPrefix: ctx.app.prefix });
    try {
      // a window of seconds, so 3 knocks fall in one however slow each is on a busy machine; the
      // lockout outlasts it, so the knock it lets in is granted
      const blockMs = 3_000;
      const limit: StackedLimit = { key: 'round-robin', scope: 'login', policy: { limit: 2, windowMs: 2_000, algorithm: 'fixed-window' } };
      // when each block call began and when it returned: Redis ran it in between
      const blocks: { called: number; returned: number }[] = [];
      const instances = [ctx.app, other].map(({ limiter, moduleRef }) => {
        const engine = moduleRef.get(DecisionEngine);
        const counting = {
          block: async (l: CheckedLimit, ms: number) => {
            const called = performance.now();
            const blocked = await engine.block(l, ms);
            blocks.push({ called, returned: performance.now() });
            return blocked;
          },
        } as unknown as DecisionEngine;
        return { limiter, outcomes: new Outcomes(counting, new RouteLog({ error: () => undefined })) };
      });
      const limits = [{ countIf: undefined, blockMs, at: '@RateLimit(#1)' }];
      const knock = async (n: number) => {
        const { limiter, outcomes } = instances[n % 2]!;
        const result = await limiter.decide([limit]);
        await outcomes.after({ ctx: undefined as never, route: 'POST /login', req: {}, res: undefined, stack: [checkStackedLimit(limit)], limits, result });
        return result.allowed;
      };
      // knock every 50 ms, alternating instances, until let in again after the lockout began
      let n = 0;
      let lockedAt: number | undefined;
      let letInAt: number | undefined;
      let lastRefusalSent = 0;
      const deadline = performance.now() + 20_000;
      while (letInAt === undefined && performance.now() < deadline) {
        const sent = performance.now();
        const allowed = await knock(n++);
        if (!allowed && lockedAt === undefined) lockedAt = blocks[0]?.called;
        if (!allowed) lastRefusalSent = sent;
        if (allowed && lockedAt !== undefined) letInAt = performance.now();
        await sleep(50);
      }
      expect({ blocks: blocks.length, letIn: letInAt !== undefined }).toEqual({ blocks: 1, letIn: true });
      // let in no sooner than the lockout's end (it began after the block call did)
      expect(letInAt! - lockedAt!).toBeGreaterThanOrEqual(blockMs - 5);
      // and no later: the lockout ended blockMs after Redis ran the block call, at the latest when
      // the call returned, and no knock sent after that was refused. (Not a bound on when the
      // knock that got in came back: a busy machine can stall the loop for seconds.)
      expect(lastRefusalSent).toBeLessThan(blocks[0]!.returned + blockMs);
    } finally {
      await other.close();
    }
  });

  it('a slow block call: knocks refused until Redis lets the key in block nothing more', async () => {
    const { limiter } = ctx.app;
    const engine = ctx.app.moduleRef.get(DecisionEngine);
    let blocks = 0;
    const slowBlocks = {
      block: async (limit: CheckedLimit, ms: number) => {
        blocks++;
        await sleep(150);
        return engine.block(limit, ms);
      },
    } as unknown as DecisionEngine;
    const errors: string[] = [];
    const outcomes = new Outcomes(slowBlocks, new RouteLog({ error: (message: string) => void errors.push(message) }));
    // a window of seconds, so the two knocks below fall in it however a busy machine stalls
    // between them; the lockout outlasts it, so the knock it lets in is granted
    const windowMs = 3_000;
    const limit: StackedLimit = { key: 'slow-block', scope: 'lockout', policy: { limit: 1, windowMs } };
    const knock = async () => {
      const result = await limiter.decide([limit]);
      const limits = [{ countIf: undefined, blockMs: windowMs + 500, at: '@RateLimit(#1)' }];
      await outcomes.after({ ctx: undefined as never, route: 'POST /pin', req: {}, res: undefined, stack: [checkStackedLimit(limit)], limits, result });
      return result.allowed;
    };
    expect([await knock(), await knock()]).toEqual([true, false]);
    await until(
      async () => (await sleep(10), await knock()),
      30_000,
      () => `still locked out after ${blocks} blocks`,
    );
    expect([blocks, errors]).toEqual([1, []]);
  });
});
