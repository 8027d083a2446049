import { inSequence, PLATFORMS, withSampleApp } from './sample-app.js';

// GET /quotes/:symbol: 5 per 10 s per client IP (sliding window), default 'legacy' headers.
describe.each(PLATFORMS)('quotes per IP on %s', (platform) => {
  const ctx = withSampleApp(platform);

  it('allows 5 quotes with counting-down headers, then answers 429 with Retry-After', async () => {
    // different symbols: the limit is per client on the route, not per symbol
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
    expect(rejected.status).toBe(429);
    expect(rejected.body).toEqual({ statusCode: 429, message: expect.any(String), retryAfterMs: expect.any(Number) });
    const { retryAfterMs } = rejected.body as { retryAfterMs: number };
    // the oldest grant is a few ms old: it frees the slot a little under 10 s from now
    expect(retryAfterMs).toBeGreaterThan(5_000);
    expect(retryAfterMs).toBeLessThanOrEqual(10_000);
    expect(rejected.headers['retry-after']).toBe(String(Math.ceil(retryAfterMs / 1000)));
    expect(rejected.headers['x-ratelimit-limit']).toBe('5');
    expect(rejected.headers['x-ratelimit-remaining']).toBe('0');
    expect(rejected.headers['x-ratelimit-reset']).toBe('10');
  });

  it('gives each route its own counter', async () => {
    await inSequence(5, () => ctx.sample.http.get('/quotes/ACME'));
    expect((await ctx.sample.http.get('/quotes/ACME')).status).toBe(429);
    const bulk = await ctx.sample.http.get('/quotes?symbols=ACME');
    expect(bulk.status).toBe(200);
    expect(bulk.headers['x-ratelimit-limit']).toBe('20');
  });
});
