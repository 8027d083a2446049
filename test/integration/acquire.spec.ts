import { withLimiterApp } from '../harness/limiter-app.js';

describe('acquire()', () => {
  const ctx = withLimiterApp();
  const limiter = () => ctx.app.limiter;

  it('waits for the permit, then succeeds', async () => {
    const policy = { limit: 1, windowMs: 300 };
    // timed from before the grant, which frees 300 ms after it is made: a loaded machine's slow
    // reply to consume() no longer counts against the wait (beside a CPU hog it ate 190 ms)
    const started = performance.now();
    await limiter().consume('wait', policy);
    await expect(limiter().acquire('wait', policy)).resolves.toBe(true);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(290);
    expect(waited).toBeLessThan(5000);
  });

  it('returns false without waiting past the timeout', async () => {
    const policy = { limit: 1, windowMs: 60_000 };
    await limiter().consume('timeout', policy);
    const started = performance.now();
    await expect(limiter().acquire('timeout', policy, { timeoutMs: 5000 })).resolves.toBe(false);
    // the next permit is a minute away, so it gives up at once instead of sleeping the 5 s (a
    // bound far above a round trip, even on a loaded machine)
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('succeeds within the timeout when the permit comes in time', async () => {
    const policy = { limit: 1, windowMs: 200, algorithm: 'token-bucket' as const };
    await limiter().consume('in-time', policy);
    await expect(limiter().acquire('in-time', policy, { timeoutMs: 2000 })).resolves.toBe(true);
  });

  it('20 concurrent acquirers on a 5-per-second limiter all succeed, spread over seconds', async () => {
    const policy = { limit: 5, windowMs: 1000 };
    const started = performance.now();
    const doneAt: number[] = [];
    const results = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const ok = await limiter().acquire('crowd', policy);
        doneAt.push(performance.now() - started);
        return ok;
      }),
    );
    expect(results.every(Boolean)).toBe(true);
    const span = Math.max(...doneAt);
    // 5 now, 5 after 1 s, 5 after 2 s, 5 after 3 s: about 3 s (generous bounds: a noisy machine)
    expect(span).toBeGreaterThan(2500);
    expect(span).toBeLessThan(6500);
    // never more than 5 in any one-second span
    const sorted = [...doneAt].sort((a, b) => a - b);
    for (let i = 5; i < sorted.length; i++) expect(sorted[i]! - sorted[i - 5]!).toBeGreaterThan(900);
  });

  it('rejects a bad timeout with a RangeError', async () => {
    await expect(limiter().acquire('x', { limit: 1, windowMs: 1000 }, { timeoutMs: Number.NaN })).rejects.toThrow(RangeError);
  });
});
