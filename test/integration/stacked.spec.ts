import { withLimiterApp } from '../harness/limiter-app.js';
import type { RateLimitPolicy, StackedLimit } from '../../lib/index.js';

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
    const stack: StackedLimit[] = [
      { key, scope: 'second', policy: perSecond },
      { key, scope: 'minute', policy: perMinute },
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
});
