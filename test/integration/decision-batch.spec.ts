import { RedisScriptError, type RateLimitPolicy } from '../../lib/index.js';
import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { scriptCalls as countScriptCalls } from '../harness/script-calls.js';

// Decisions made in the same tick travel as one script call (per cluster slot); each must still
// be decided as if alone, in call order, and fail alone.
describe('decisions made together are sent together', () => {
  const ctx = withLimiterApp({ expiringHash: { sweepIntervalMs: 0 } });
  // on the server clock: a day's window, and none ends mid-test (a batch may take several calls)
  const policy: RateLimitPolicy = { limit: 5, windowMs: DAY_MS, algorithm: 'fixed-window' };
  beforeEach(() => awayFromWindowEnd(DAY_MS));
  let run = 0;
  const nextKey = () => `batch-${++run}`;

  const scriptCalls = () => countScriptCalls(ctx.redis);

  it('300 concurrent decisions cost a handful of script calls, not 300', async () => {
    const key = nextKey(); // one user key (one slot), 300 scopes: batched on a cluster as well
    const before = await scriptCalls();
    const results = await Promise.all(Array.from({ length: 300 }, (_, i) => ctx.app.limiter.decide([{ key, scope: `s${i}`, policy, permits: 1 + (i % 5) }])));
    const calls = (await scriptCalls()) - before;
    results.forEach((r, i) => expect(r.decisions[0]).toMatchObject({ allowed: true, remaining: 4 - (i % 5) }));
    expect(calls).toBeGreaterThanOrEqual(3); // at most 128 stacks per call
    expect(calls).toBeLessThanOrEqual(10);
  });

  it('the same key several times in one batch is decided in call order', async () => {
    const key = nextKey();
    const results = await Promise.all(Array.from({ length: 8 }, () => ctx.app.limiter.consume(key, policy)));
    expect(results.map((r) => r.allowed)).toEqual([true, true, true, true, true, false, false, false]);
    expect(results.map((r) => r.remaining)).toEqual([4, 3, 2, 1, 0, 0, 0, 0]);
  });

  it('peeks, consumes and stacks mix in one batch', async () => {
    const key = nextKey();
    const [peek, consumed, stack, after] = await Promise.all([
      ctx.app.limiter.peek(key, policy),
      ctx.app.limiter.consume(key, policy, 2),
      ctx.app.limiter.decide([
        { key, policy, permits: 3 },
        { key, scope: 'other', policy: { limit: 1, windowMs: 1000, algorithm: 'token-bucket' } },
      ]),
      ctx.app.limiter.peek(key, policy),
    ]);
    expect(peek).toMatchObject({ allowed: true, remaining: 5 });
    expect(consumed).toMatchObject({ allowed: true, remaining: 3 });
    expect(stack.allowed).toBe(true);
    expect(stack.decisions.map((d) => d.remaining)).toEqual([0, 0]);
    expect(after).toMatchObject({ allowed: false, remaining: 0 });
  });

  it("a batch's refusals on one sliding window each wait for the grants their own permits need", async () => {
    // one call decides them all at one time: what it looks up for one refusal may serve another
    // only when both wait for the same grant
    const key = nextKey();
    const sliding: RateLimitPolicy = { limit: 3, windowMs: DAY_MS, algorithm: 'sliding-window' };
    await ctx.app.limiter.consume(key, sliding);
    await new Promise((resolve) => setTimeout(resolve, 60));
    await ctx.app.limiter.consume(key, sliding);
    await new Promise((resolve) => setTimeout(resolve, 60));
    const [two, one, twoMore, oneMore, three] = await Promise.all([
      ctx.app.limiter.consume(key, sliding, 2), // refused: waits for the first grant
      ctx.app.limiter.consume(key, sliding, 1), // granted: the window is full after it
      ctx.app.limiter.consume(key, sliding, 2), // refused: waits for the second grant
      ctx.app.limiter.consume(key, sliding, 1), // refused: waits for the first grant
      ctx.app.limiter.consume(key, sliding, 3), // refused: waits for the third grant
    ]);
    expect([two, one, twoMore, oneMore, three].map((d) => d.allowed)).toEqual([false, true, false, false, false]);
    expect(oneMore.retryAfterMs).toBe(two.retryAfterMs);
    expect(twoMore.retryAfterMs - two.retryAfterMs).toBeGreaterThanOrEqual(55);
    expect(three.retryAfterMs - twoMore.retryAfterMs).toBeGreaterThanOrEqual(55);
    expect(three.retryAfterMs).toBeLessThanOrEqual(DAY_MS);
  });

  it("a key holding another type fails its own decision only, not the batch's others", async () => {
    const key = nextKey();
    const broken = nextKey();
    await ctx.app.raw.hset(`${ctx.app.prefix}fw4.${DAY_MS}:{${broken}}`, 'f', 'not a string');
    // one run of six alike stacks: failures first, in a row and last each leave the others
    const outcomes = await Promise.allSettled([
      ctx.app.limiter.consume(broken, policy),
      ctx.app.limiter.consume(key, policy),
      ctx.app.limiter.consume(broken, policy),
      ctx.app.limiter.consume(broken, policy),
      ctx.app.limiter.consume(key, policy),
      ctx.app.limiter.consume(broken, policy),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled', 'rejected', 'rejected', 'fulfilled', 'rejected']);
    expect(outcomes[1]).toMatchObject({ status: 'fulfilled', value: { allowed: true, remaining: 4 } });
    expect(outcomes[4]).toMatchObject({ status: 'fulfilled', value: { allowed: true, remaining: 3 } });
    for (const outcome of [0, 2, 3, 5].map((i) => outcomes[i] as PromiseRejectedResult)) {
      expect(outcome.reason).toBeInstanceOf(RedisScriptError);
      expect((outcome.reason as Error).message).toMatch(/WRONGTYPE/);
    }
    expect(await ctx.app.raw.hgetall(`${ctx.app.prefix}fw4.${DAY_MS}:{${broken}}`)).toEqual({ f: 'not a string' });
    // alone in its call, the same failure is the call's, typed the same way
    await expect(ctx.app.limiter.consume(broken, policy)).rejects.toThrow(RedisScriptError);
  });
});
