import { setTimeout as sleep } from 'node:timers/promises';
import { inSequence, PLATFORMS, withSampleApp } from './sample-app.js';

// GET /quotes/:symbol/history: 3 per second and 5 per minute, both keyed by the x-api-key header.
describe.each(PLATFORMS)('stacked limits with a custom key on %s', (platform) => {
  const ctx = withSampleApp(platform);

  const history = (apiKey: string) => ctx.sample.http.get('/quotes/ACME/history').set('x-api-key', apiKey);
  const legacy = (r: { headers: Record<string, string> }) => ({
    limit: r.headers['x-ratelimit-limit'],
    remaining: r.headers['x-ratelimit-remaining'],
  });

  /**
   * Four requests in a row from a fresh API key, made again (with another key) while they took
   * long enough to stretch past the 1 s burst window: a loaded CI machine did that once on the
   * cluster, and the fourth was rightly granted.
   */
  async function burstOfFour(): Promise<{ key: string; burst: Awaited<ReturnType<typeof history>>[] }> {
    for (let attempt = 1; ; attempt++) {
      const key = `alice-${attempt}`;
      const started = performance.now();
      const burst = await inSequence(4, () => history(key));
      if (performance.now() - started < 700 || attempt === 5) return { key, burst };
    }
  }

  it('is all or nothing: a request the burst limit refuses is not charged to the minute limit', async () => {
    await history('warm-up'); // scripts loaded on every master, routes compiled
    const { key, burst } = await burstOfFour();
    expect(burst.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(burst[0]!.body).toMatchObject({ symbol: 'ACME', closes: expect.any(Array) });
    // headers describe the limit with the fewest left: the burst one
    expect(legacy(burst[2]!)).toEqual({ limit: '3', remaining: '0' });
    expect(legacy(burst[3]!)).toEqual({ limit: '3', remaining: '0' });
    expect(burst[3]!.body.retryAfterMs).toBeLessThanOrEqual(1_000);

    await sleep(1_100); // every burst grant has aged out
    // 3 of 5 used this minute (not 4): the minute limit is now the tightest, with 1 left
    const after = await inSequence(3, () => history(key));
    expect(after.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(legacy(after[0]!)).toEqual({ limit: '5', remaining: '1' });
    expect(legacy(after[1]!)).toEqual({ limit: '5', remaining: '0' });
    // refused by the minute limit now: the wait is for the first grant to leave the minute
    expect(legacy(after[2]!)).toEqual({ limit: '5', remaining: '0' });
    expect(Number(after[2]!.headers['retry-after'])).toBeGreaterThan(50);
    expect(Number(after[2]!.headers['retry-after'])).toBeLessThanOrEqual(60);
  });

  it('counts each API key apart, whatever IP it calls from', async () => {
    // a burst that a loaded machine stretched past the 1 s window is made again (see burstOfFour)
    const { burst: alice } = await burstOfFour();
    expect(alice.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    const bob = await history('bob');
    expect(bob.status).toBe(200);
    expect(legacy(bob)).toEqual({ limit: '3', remaining: '2' });
  });

  it('answers 401 without an API key, before any limit is charged', async () => {
    const missing = await ctx.sample.http.get('/quotes/ACME/history');
    expect(missing.status).toBe(401);
    expect(missing.headers['x-ratelimit-limit']).toBeUndefined();
  });
});
