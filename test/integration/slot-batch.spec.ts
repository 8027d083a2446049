import { RedisScriptError } from '../../lib/index.js';
import { RateLimiterService } from '../../lib/index.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { scriptCalls as countScriptCalls } from '../harness/script-calls.js';

// Slot operations made in the same tick travel as one script call (per cluster slot), as
// decisions do (decision-batch.spec.ts); each must still act as if alone, in call order, and fail
// alone.
describe('concurrency slot operations made together are sent together', () => {
  const ctx = withLimiterApp({ expiringHash: { sweepIntervalMs: 0 } });
  const limiter = () => ctx.app.moduleRef.get(RateLimiterService);
  let run = 0;
  const nextKey = () => `slots-${++run}`;

  const scriptCalls = () => countScriptCalls(ctx.redis);

  it('300 acquires of one key at once take exactly `limit` slots in a handful of calls; releasing them all frees them all', async () => {
    const key = nextKey();
    const opts = { limit: 5, name: 'exports' };
    const before = await scriptCalls();
    const slots = await Promise.all(Array.from({ length: 300 }, () => limiter().acquireSlot(key, opts)));
    const calls = (await scriptCalls()) - before;
    // in call order: the first five take the slots
    expect(slots.map((s) => s !== null)).toEqual(Array.from({ length: 300 }, (_, i) => i < 5));
    expect(calls).toBeGreaterThanOrEqual(3); // at most 128 operations per call
    expect(calls).toBeLessThanOrEqual(10);
    await Promise.all(slots.flatMap((s) => (s === null ? [] : [s.release()])));
    expect(await ctx.app.raw.zcard(`${ctx.app.prefix}cs:exports:{${key}}`)).toBe(0);
  });

  it('a release and an acquire in one batch run in call order', async () => {
    const key = nextKey();
    const opts = { limit: 1 };
    const held = await limiter().acquireSlot(key, opts);
    expect(held).not.toBeNull();
    // acquire before the release: refused; after it: taken
    const [refused, , taken] = await Promise.all([limiter().acquireSlot(key, opts), held!.release(), limiter().acquireSlot(key, opts)]);
    expect([refused, taken !== null]).toEqual([null, true]);
    await taken!.release();
  });

  it("a key holding another type fails its own acquire only, not the batch's others", async () => {
    const [key, broken] = [nextKey(), nextKey()];
    await ctx.app.raw.set(`${ctx.app.prefix}cs:{${broken}}`, 'not a sorted set');
    const outcomes = await Promise.allSettled([
      limiter().acquireSlot(key, { limit: 2 }),
      limiter().acquireSlot(broken, { limit: 2 }),
      limiter().acquireSlot(key, { limit: 2 }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const error = (outcomes[1] as PromiseRejectedResult).reason as Error;
    expect(error).toBeInstanceOf(RedisScriptError);
    expect(error.message).toMatch(/WRONGTYPE/);
    expect(await ctx.app.raw.get(`${ctx.app.prefix}cs:{${broken}}`)).toBe('not a sorted set');
    expect(await ctx.app.raw.zcard(`${ctx.app.prefix}cs:{${key}}`)).toBe(2);
    await Promise.all(outcomes.flatMap((o) => (o.status === 'fulfilled' && o.value !== null ? [o.value.release()] : [])));
  });
});
