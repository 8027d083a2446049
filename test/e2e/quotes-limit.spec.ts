import { inSequence, PLATFORMS, withSampleApp } from './sample-app.js';

// GET /quotes/:symbol: 5 per 10 s per client IP (sliding window), default 'legacy' headers.
describe.each(PLATFORMS)('quotes per IP on %s', (platform) => {
  const ctx = withSampleApp(platform);

  it('allows 5 quotes with counting-down headers, then answers 429 with Retry-After', async () => {
    // different symbols: the limit is per client on the route, not per symbol
    const started = Date.now();
    const allowed = await inSequence(5, (i) => ctx.sample.http.get(`/quotes/${['ACME', 'GLOBX'][i % 2]}`));
    expect(allowed.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(allowed[1]!.body).toMatchObject({ symbol: 'GLOBX', currency: 'USD', price: expect.any(Number) });
    expect(allowed.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['4', '3', '2', '1', '0']);
    for (const r of allowed) {
      expect(r.headers['x-ratelimit-limit']).toBe('5');
      expect(r.headers['x-ratelimit-reset']).toBe('10'); // the newest grant frees in windowMs
      expect(r.headers['retry-after']).toBeUndefined();
    }

    const rejected = await ctx.sample.http.get('/quotes/ACME');
    const ranMs = Date.now() - started;
    expect(rejected.status).toBe(429);
    expect(rejected.body).toEqual({ statusCode: 429, message: expect.any(String), retryAfterMs: expect.any(Number) });
    const { retryAfterMs } = rejected.body as { retryAfterMs: number };
    // the oldest grant is as old as the requests took (a few ms, or seconds on a busy machine): it
    // frees the slot that much under 10 s from now
    expect(retryAfterMs).toBeGreaterThanOrEqual(10_000 - ranMs - 1);
    expect(retryAfterMs).toBeLessThanOrEqual(10_000);
    expect(rejected.headers['retry-after']).toBe(String(Math.ceil(retryAfterMs / 1000)));
    expect(rejected.headers['x-ratelimit-limit']).toBe('5');
    expect(rejected.headers['x-ratelimit-remaining']).toBe('0');
    // the newest grant frees in windowMs, less the time since it (rounded up): at most the time
    // the requests took
    expect(Number(rejected.headers['x-ratelimit-reset'])).toBeLessThanOrEqual(10);
    expect(Number(rejected.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(10 - Math.ceil(ranMs / 1000));
  });

  it('gives each route its own counter', async () => {
    await inSequence(5, () => ctx.sample.http.get('/quotes/ACME'));
    expect((await ctx.sample.http.get('/quotes/ACME')).status).toBe(429);
    const bulk = await ctx.sample.http.get('/quotes?symbols=ACME');
    expect(bulk.status).toBe(200);
    expect(bulk.headers['x-ratelimit-limit']).toBe('20');
  });
});
