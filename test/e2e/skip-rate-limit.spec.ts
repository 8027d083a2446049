import { inSequence, PLATFORMS, withSampleApp } from './sample-app.js';

// QuotesController is limited at class level (5 per 10 s); GET /quotes/health opts out.
describe.each(PLATFORMS)('@SkipRateLimit on %s', (platform) => {
  const ctx = withSampleApp(platform, {}, { own: true }); // one test stops its server

  it('never limits the health route, which the class-level limit would otherwise cover', async () => {
    const health = await inSequence(8, () => ctx.sample.http.get('/quotes/health'));
    expect(health.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(health[7]!.body).toEqual({ status: 'ok' });
    expect(health.filter((r) => 'x-ratelimit-limit' in r.headers)).toEqual([]);

    // the same controller's quote route does get the class-level limit
    const quotes = await inSequence(6, () => ctx.sample.http.get('/quotes/ACME'));
    expect(quotes.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it('still answers while Redis is down, since it never asks Redis', async () => {
    await ctx.redis.stop();
    try {
      expect((await ctx.sample.http.get('/quotes/health')).status).toBe(200);
      expect((await ctx.sample.http.get('/quotes/ACME')).status).toBe(503);
    } finally {
      await ctx.redis.resume();
    }
  });
});
