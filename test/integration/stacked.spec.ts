import { withLimiterApp } from '../harness/limiter-app.js';
import type { RateLimitAlgorithm, RateLimitPolicy, StackedLimit } from '../../lib/index.js';
import { clusterSlot } from '../../lib/redis/slot.js';

describe('stacked limits are decided all or nothing', () => {
  const ctx = withLimiterApp();
  const perSecond: RateLimitPolicy = { limit: 3, windowMs: 1000 };
  const perMinute: RateLimitPolicy = { limit: 5, windowMs: 60_000 };
  const T0 = 1_700_000_000_000;

  it('a request refused by the per-minute limit consumes nothing from the per-second one', async () => {
    const key = 'alice';
    const stack: StackedLimit[] = [
      { key, scope: 'second', policy: perSecond },
      { key, scope: 'minute', policy: perMinute },
    ];
    const decide = (now: number) => ctx.app.limiter.decide(stack, { now });
    // 3 + 2 grants spread over two seconds use up the minute
    for (const now of [T0, T0 + 10, T0 + 20, T0 + 1500, T0 + 1510]) expect((await decide(now)).allowed).toBe(true);

    const refused = await decide(T0 + 3000);
    expect(refused.allowed).toBe(false);
    expect(refused.decisions[0]).toMatchObject({ allowed: true, remaining: 3, retryAfterMs: 0 });
    expect(refused.decisions[1]).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 57_000 });
    expect(refused.retryAfterMs).toBe(57_000);

    // nothing was charged to the per-second limit by the refusal
    const peek = await ctx.app.limiter.decide([stack[0]!], { now: T0 + 3000, peek: true });
    expect(peek.decisions[0]).toMatchObject({ allowed: true, remaining: 3 });
  });

  it('a request refused by the per-second limit charges nothing to the per-minute one', async () => {
    const key = 'bob';
    // the same pair a minute and an hour long: the times are explicit, but keys expire in real
    // time, and a per-second key would be gone before a busy machine made the 10 calls below
    const stack: StackedLimit[] = [
      { key, scope: 'second', policy: { ...perSecond, windowMs: 60_000 } },
      { key, scope: 'minute', policy: { ...perMinute, windowMs: 3_600_000 } },
    ];
    for (let i = 0; i < 3; i++) await ctx.app.limiter.decide(stack, { now: T0 });
    for (let i = 0; i < 10; i++) expect((await ctx.app.limiter.decide(stack, { now: T0 + 1 })).allowed).toBe(false);
    const minute = await ctx.app.limiter.decide([stack[1]!], { now: T0 + 1, peek: true });
    expect(minute.decisions[0]).toMatchObject({ remaining: 2 });
  });

  it('mixes algorithms and funnels in one decision, under concurrency', async () => {
    const key = 'carol';
    const stack: StackedLimit[] = [
      { key, scope: 'a', policy: { limit: 50, windowMs: 60_000, algorithm: 'fixed-window' } },
      { key, scope: 'b', policy: { limit: 30, windowMs: 60_000, algorithm: 'token-bucket' } },
      { key, scope: 'c', funnel: { capacity: 40, leakingDurationMs: 60_000 } },
    ];
    const results = await Promise.all(Array.from({ length: 200 }, () => ctx.app.limiter.decide(stack, { now: T0 })));
    expect(results.filter((r) => r.allowed)).toHaveLength(30);
    const after = await ctx.app.limiter.decide(stack, { now: T0, peek: true });
    expect(after.decisions.map((d) => d.remaining)).toEqual([20, 0, 10]);
  });

  // The README's quotes example: a class limit per client IP and handler limits per API key,
  // whose keys fall in different Redis Cluster slots. On a cluster each slot is charged by its
  // own call and what was charged is given back when another slot refuses.
  describe('over keys in different cluster slots', () => {
    const hourly: RateLimitPolicy = { limit: 4, windowMs: 3_600_000 };
    // 3 per 10 s, not per second: the times are explicit, but keys expire in real time, and the
    // burst key must outlive the calls that read it after its last charge on a busy machine
    const burst: RateLimitPolicy = { limit: 3, windowMs: 10_000 };
    const minute: RateLimitPolicy = { limit: 5, windowMs: 60_000, algorithm: 'fixed-window' };
    const quotesStack = (ip: string, apiKey: string): StackedLimit[] => [
      { key: ip, scope: 'hourly', policy: hourly },
      { key: apiKey, scope: 'burst', policy: burst },
      { key: apiKey, scope: 'minute', policy: minute },
    ];
    const remaining = async (stack: StackedLimit[], now: number) =>
      (await ctx.app.limiter.decide(stack, { now, peek: true })).decisions.map((d) => d.remaining);

    it('is all or nothing: a refusal on one slot gives back what the others charged', async () => {
      const stack = quotesStack('203.0.113.7', 'key-1');
      expect(clusterSlot('203.0.113.7')).not.toBe(clusterSlot('key-1'));
      const T = T0 + 120_000; // 40 s before a minute ends: every grant below is in one fixed window
      for (let i = 0; i < 3; i++) expect((await ctx.app.limiter.decide(stack, { now: T + i })).allowed).toBe(true);

      // the burst limit refuses: the hourly charge on the IP's slot is given back
      const refused = await ctx.app.limiter.decide(stack, { now: T + 10 });
      expect(refused).toEqual({
        allowed: false,
        retryAfterMs: 9_990,
        decisions: [
          expect.objectContaining({ allowed: true, remaining: 1 }),
          expect.objectContaining({ allowed: false, remaining: 0, retryAfterMs: 9_990 }),
          expect.objectContaining({ allowed: true, remaining: 2 }),
        ],
      });
      expect(await remaining(stack, T + 10)).toEqual([1, 0, 2]);

      expect((await ctx.app.limiter.decide(stack, { now: T + 10_000 })).allowed).toBe(true);
      // now the IP's hour is used up: the API key's limits are given back
      const byIp = await ctx.app.limiter.decide(stack, { now: T + 20_000 });
      expect(byIp.allowed).toBe(false);
      expect(byIp.decisions.map((d) => [d.allowed, d.remaining])).toEqual([
        [false, 0],
        [true, 3],
        [true, 1],
      ]);
      expect(await remaining(stack, T + 20_000)).toEqual([0, 3, 1]);
    });

    it.each(['fixed-window', 'sliding-window', 'token-bucket', 'funnel'] as (RateLimitAlgorithm | 'funnel')[])(
      'gives back a %s charge exactly',
      async (algorithm) => {
        const mine: StackedLimit =
          algorithm === 'funnel'
            ? { key: `mine-${algorithm}`, scope: 'a', funnel: { capacity: 10, leakingDurationMs: 60_000 }, permits: 3 }
            : { key: `mine-${algorithm}`, scope: 'a', policy: { limit: 10, windowMs: 60_000, algorithm }, permits: 3 };
        const theirs: StackedLimit = { key: `theirs-${algorithm}`, scope: 'b', policy: { limit: 1, windowMs: 60_000 } };
        const T = T0 + 180_000;
        expect((await ctx.app.limiter.decide([mine, theirs], { now: T })).allowed).toBe(true);
        for (let i = 1; i <= 3; i++) {
          const refused = await ctx.app.limiter.decide([mine, theirs], { now: T + i });
          expect(refused.allowed).toBe(false);
          expect(refused.decisions[0]).toMatchObject({ allowed: true, remaining: 7 });
        }
        expect((await ctx.app.limiter.decide([mine], { now: T + 5, peek: true })).decisions[0]!.remaining).toBe(7);
      },
    );

    it('never grants more than any limit allows under concurrency, and gives back every refused charge', async () => {
      const ips = ['198.51.100.1', '198.51.100.2'];
      const apiKeys = ['k-1', 'k-2', 'k-3'];
      const hour: RateLimitPolicy = { limit: 20, windowMs: 3_600_000 };
      const perKey: RateLimitPolicy = { limit: 7, windowMs: 60_000, algorithm: 'fixed-window' };
      const bucket: RateLimitPolicy = { limit: 9, windowMs: 60_000, algorithm: 'token-bucket' };
      const stackOf = (ip: string, apiKey: string): StackedLimit[] => [
        { key: ip, scope: 'c-hour', policy: hour },
        { key: apiKey, scope: 'c-minute', policy: perKey },
        { key: apiKey, scope: 'c-bucket', policy: bucket },
      ];
      const T = T0 + 240_000;
      const requests = Array.from({ length: 300 }, (_, i) => [ips[i % 2]!, apiKeys[i % 3]!] as const);
      const results = await Promise.all(requests.map(([ip, apiKey]) => ctx.app.limiter.decide(stackOf(ip, apiKey), { now: T })));
      const granted = (pick: (r: readonly [string, string]) => string, name: string) =>
        requests.filter((r, i) => results[i]!.allowed && pick(r) === name).length;
      for (const ip of ips) expect(granted((r) => r[0], ip)).toBeLessThanOrEqual(20);
      for (const apiKey of apiKeys) expect(granted((r) => r[1], apiKey)).toBeLessThanOrEqual(7);
      expect(results.filter((r) => r.allowed).length).toBeGreaterThan(0);
      // every refused stack's charges came back: each counter holds exactly its grants
      for (const ip of ips) expect((await remaining([stackOf(ip, 'k-1')[0]!], T))[0]).toBe(20 - granted((r) => r[0], ip));
      for (const apiKey of apiKeys) {
        expect(await remaining(stackOf('x', apiKey).slice(1), T)).toEqual([7 - granted((r) => r[1], apiKey), 9 - granted((r) => r[1], apiKey)]);
      }
    });
  });
});
