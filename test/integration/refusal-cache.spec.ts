import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { RedisLimitEvents, type RateLimitAlgorithm, type RateLimitPolicy } from '../../lib/index.js';
import { DecisionEngine } from '../../lib/rate-limit/decision-engine.js';
import { counterKind, rateLimitSpec } from '../../lib/rate-limit/policy.js';
import type { Refusals } from '../../lib/rate-limit/refusals.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { limiterModule, uniquePrefix, type LimiterApp } from '../harness/limiter-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';
import { scriptCalls as countScriptCalls } from '../harness/script-calls.js';

// The refusal cache (issue 15): a flood from one key over its limit costs Redis no script call,
// and across two app instances sharing counters, with resets and refunds from either, it never
// refuses a request that Redis would have granted.
describe('refusal cache', () => {
  let redis: TestRedis;
  let prefix: string;
  let a: LimiterApp;
  let b: LimiterApp;
  /** Same counters, no cache: what Redis says. */
  let oracle: LimiterApp;
  let keyNo = 0;
  const nextKey = () => `rc-${++keyNo}`;

  beforeAll(async () => {
    redis = await TestRedis.start();
    prefix = uniquePrefix('rc');
    const options = { keyPrefix: prefix, expiringHash: { sweepIntervalMs: 0 } };
    [a, b, oracle] = await Promise.all([
      limiterModule(redis, options),
      limiterModule(redis, options),
      limiterModule(redis, { ...options, refusalCache: false }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([a, b, oracle].map((app) => app?.close()));
    await redis?.stop();
  });

  const refusalsOf = (app: LimiterApp) => app.moduleRef.get<DecisionEngine, { refusals: Refusals }>(DecisionEngine).refusals;
  const hits = (app: LimiterApp) => app.moduleRef.get(RedisLimitEvents).counters().refusalCacheHits;
  const counterOf = (app: LimiterApp, key: string, policy: RateLimitPolicy) =>
    app.moduleRef.get(RedisConnection).keys.build(counterKind(rateLimitSpec(policy)), key);

  const scriptCalls = () => countScriptCalls(redis);

  /** Refuses on `app` until a refusal is remembered (the channel opens on the first one). */
  async function refusedAndRemembered(app: LimiterApp, key: string, policy: RateLimitPolicy): Promise<void> {
    const counter = counterOf(app, key, policy);
    await until(
      async () => {
        expect((await app.limiter.consume(key, policy)).allowed).toBe(false);
        return refusalsOf(app).cache!.holds(counter);
      },
      20_000,
      () => `a refusal of ${key} remembered`,
    );
  }

  it('a flood over the limit costs Redis no script call, and says when to come back', async () => {
    const key = nextKey();
    const policy: RateLimitPolicy = { limit: 3, windowMs: 60_000, algorithm: 'sliding-window' };
    for (let i = 0; i < 3; i++) expect((await a.limiter.consume(key, policy)).allowed).toBe(true);
    await refusedAndRemembered(a, key, policy);
    const [calls, hitsBefore] = [await scriptCalls(), hits(a)];
    const flood = await Promise.all(Array.from({ length: 200 }, () => a.limiter.consume(key, policy)));
    expect(await scriptCalls()).toBe(calls + 0);
    expect(hits(a) - hitsBefore).toBe(200);
    for (const decision of flood) {
      expect(decision).toMatchObject({ allowed: false, remaining: 0, limit: 3 });
      expect(decision.retryAfterMs).toBeGreaterThan(50_000);
      expect(decision.retryAfterMs).toBeLessThanOrEqual(60_000);
    }
    // a cheaper request is not covered by a refusal of a dearer one, nor another limit (a tier)
    expect((await a.limiter.consume(key, { ...policy, limit: 4 })).allowed).toBe(true);
    expect(await scriptCalls()).toBe(calls + 1);
  });

  // The reply of a refused request queued behind a large one (issue 26 #5: a 40 MB reply on the
  // shared connection): a reset from another instance reaches Redis and this process's subscriber
  // before the refusal is read. It must not be remembered: Redis grants now.
  it('a reset heard while a refusal is in flight keeps that refusal out of the cache', async () => {
    // on the server clock: a day's window, none ending mid-test, so only the reset frees the key
    await awayFromWindowEnd(DAY_MS);
    const policy: RateLimitPolicy = { limit: 1, windowMs: DAY_MS, algorithm: 'fixed-window' };
    const key = nextKey();
    const counter = counterOf(a, key, policy);
    expect((await b.limiter.consume(key, policy)).allowed).toBe(true);
    await refusedAndRemembered(a, key, policy); // a's channel is open and live
    refusalsOf(a).cache!.invalidate(counter);
    const client = a.moduleRef.get(RedisConnection).client;
    const sockets = ('nodes' in client ? client.nodes('master') : [client]).map((node) => (node as unknown as { stream: Socket }).stream);
    const calls = await scriptCalls();
    sockets.forEach((socket) => socket.pause());
    try {
      const inFlight = a.limiter.consume(key, policy);
      await until(
        async () => (await scriptCalls()) > calls,
        10_000,
        () => 'the refused decision ran in Redis',
      );
      const heard = refusalsOf(a).cache!.mark;
      await b.limiter.reset(key, policy);
      await until(
        () => refusalsOf(a).cache!.mark > heard,
        10_000,
        () => 'a heard the reset',
      );
      sockets.forEach((socket) => socket.resume());
      expect((await inFlight).allowed).toBe(false);
    } finally {
      sockets.forEach((socket) => socket.resume());
    }
    expect(refusalsOf(a).cache!.holds(counter)).toBe(false);
    expect((await a.limiter.consume(key, policy)).allowed).toBe(true);
  });

  it('reset and refund from another instance reach this one', async () => {
    // on the server clock: a day's window, none ending mid-test, so the refund finds its window
    // and only the refund and the reset free the key
    await awayFromWindowEnd(DAY_MS);
    const policy: RateLimitPolicy = { limit: 2, windowMs: DAY_MS, algorithm: 'fixed-window' };
    const key = nextKey();
    const grants = [await a.limiter.consume(key, policy), await a.limiter.consume(key, policy)];
    await refusedAndRemembered(b, key, policy);
    expect(await a.limiter.refund(key, policy, grants[0]!.grantId!)).toBe(1);
    await until(
      async () => (await b.limiter.consume(key, policy)).allowed,
      20_000,
      () => 'b granted after the refund',
    );

    await refusedAndRemembered(b, key, policy);
    await a.limiter.reset(key, policy);
    await until(
      async () => (await b.limiter.consume(key, policy)).allowed,
      20_000,
      () => 'b granted after the reset',
    );
  });

  it('refusalCache: false asks Redis every time; bad options name the option', async () => {
    const key = nextKey();
    const policy: RateLimitPolicy = { limit: 1, windowMs: 60_000, algorithm: 'token-bucket' };
    await oracle.limiter.consume(key, policy);
    const calls = await scriptCalls();
    for (let i = 0; i < 5; i++) expect((await oracle.limiter.consume(key, policy)).allowed).toBe(false);
    expect(await scriptCalls()).toBe(calls + 5);
    expect(refusalsOf(oracle).cache).toBeUndefined();
    await expect(limiterModule(redis, { refusalCache: { maxEntries: 0 } })).rejects.toThrow(/refusalCache\.maxEntries must be a positive integer/);
    await expect(limiterModule(redis, { refusalCache: { size: 5 } as never })).rejects.toThrow(/refusalCache\.size is not an option/);
    await expect(limiterModule(redis, { refusalCache: 'yes' as never })).rejects.toThrow(/refusalCache must be a boolean or \{ maxEntries\? \}/);
  });

  // Random consumes, resets, refunds and pauses from two instances on short windows. Each refusal
  // answered from a cache is checked at once against Redis (the oracle has no cache, and a refusal
  // charges nothing): Redis must refuse it too. Nothing happens in between, and time only frees
  // permits, so a grant there would mean the cache refused what Redis would have granted; unless
  // the wait the cache gave had run out by the time Redis was asked, which proves nothing.
  it('never refuses what Redis would grant (model check across two instances)', async () => {
    const apps = () => [a, b] as const;
    const command = fc.oneof(
      // mostly one key and one permit, so refusals meet the same request again
      {
        weight: 8,
        arbitrary: fc.record({ op: fc.constant('consume' as const), on: fc.nat(1), permits: fc.constantFrom(1, 1, 1, 2), key: fc.constantFrom(0, 0, 0, 1) }),
      },
      { weight: 1, arbitrary: fc.record({ op: fc.constant('reset' as const), on: fc.nat(1), key: fc.nat(1) }) },
      { weight: 2, arbitrary: fc.record({ op: fc.constant('refund' as const), on: fc.nat(1), pick: fc.nat() }) },
      { weight: 2, arbitrary: fc.record({ op: fc.constant('pause' as const), ms: fc.integer({ min: 1, max: 60 }) }) },
    );
    const algorithm = fc.constantFrom<RateLimitAlgorithm>('fixed-window', 'sliding-window', 'token-bucket');

    await fc.assert(
      fc.asyncProperty(algorithm, fc.array(command, { minLength: 20, maxLength: 40 }), async (alg, commands) => {
        const run = nextKey();
        const policy: RateLimitPolicy = { limit: 3, windowMs: 200, algorithm: alg };
        const keys = [`${run}-x`, `${run}-y`];
        const grants: { key: string; grantId: string }[] = [];
        for (const c of commands) {
          if (c.op === 'pause') {
            await sleep(c.ms);
          } else if (c.op === 'consume') {
            const app = apps()[c.on]!;
            const key = keys[c.key]!;
            const [before, asked] = [hits(app), performance.now()];
            const decision = await app.limiter.consume(key, policy, c.permits);
            if (decision.allowed) grants.push({ key, grantId: decision.grantId! });
            else if (hits(app) > before) {
              const truth = await oracle.limiter.consume(key, policy, c.permits);
              // Conclusive only if Redis was asked before the wait the cache gave had passed. That
              // wait is whole ms rounded up, so the true one may be up to 1 ms shorter.
              const elapsed = performance.now() - asked;
              if (truth.allowed && elapsed < decision.retryAfterMs - 1) {
                throw new Error(`the cache refused ${JSON.stringify(decision)}; Redis granted it ${elapsed.toFixed(2)} ms after it was asked`);
              }
            }
          } else {
            const app = apps()[c.on]!;
            let counter: string;
            if (c.op === 'reset') {
              counter = counterOf(app, keys[c.key]!, policy);
              await app.limiter.reset(keys[c.key]!, policy);
            } else {
              if (grants.length === 0) continue;
              const grant = grants[c.pick % grants.length]!;
              counter = counterOf(app, grant.key, policy);
              await app.limiter.refund(grant.key, policy, grant.grantId);
            }
            // the other instance hears of it over pub/sub: the property holds once it has
            await until(
              () => apps().every((other) => !refusalsOf(other).cache!.holds(counter)),
              20_000,
              () => `${counter} invalidated everywhere`,
            );
          }
        }
      }),
      { numRuns: 15 },
    );
    expect(hits(a) + hits(b)).toBeGreaterThan(0);
  });
});
