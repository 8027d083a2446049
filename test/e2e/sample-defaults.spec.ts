import { RedisLimitEvents, type LimitVerdict, type RedisLimitEvent } from '../../lib/index.js';
import { inSequence, PLATFORMS, withSampleApp } from './sample-app.js';

// The sample app's app-wide default: 100 per minute per client IP on every handler without a
// limit of its own; GET /health is exempt.
const LIMIT = 100;

describe.each(PLATFORMS)("the sample app's default limit on %s", (platform) => {
  const ctx = withSampleApp(platform);

  it('reaches an undecorated route: the 101st request within a minute is a 429', async () => {
    const responses = await inSequence(LIMIT + 1, () => ctx.sample.http.get('/'));
    expect(responses.slice(0, LIMIT).every((r) => r.status === 200)).toBe(true);
    expect(responses[0]!.headers['x-ratelimit-limit']).toBe(String(LIMIT));
    expect(responses.map((r) => r.headers['x-ratelimit-remaining']).slice(0, 3)).toEqual(['99', '98', '97']);
    const refused = responses[LIMIT]!;
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ statusCode: 429, retryAfterMs: expect.any(Number) });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
  });

  it('never limits GET /health', async () => {
    const responses = await inSequence(LIMIT + 5, () => ctx.sample.http.get('/health'));
    expect(responses.filter((r) => r.status !== 200)).toEqual([]);
    expect(responses.filter((r) => 'x-ratelimit-limit' in r.headers)).toEqual([]);
    expect(responses[0]!.body).toEqual({ status: 'ok' });
  });

  it("gives way to a route's own unnamed limit: one limit decides GET /quotes/:symbol", async () => {
    const limits: LimitVerdict[][] = [];
    ctx.sample.app.get(RedisLimitEvents).on((event: RedisLimitEvent) => {
      if (event.type === 'redis-limit.decision') limits.push(event.limits);
    });
    const [quote] = await inSequence(1, () => ctx.sample.http.get('/quotes/ACME'));
    expect(quote!.headers['x-ratelimit-limit']).toBe('5');
    expect(limits).toEqual([[expect.objectContaining({ limit: 5, remaining: 4 })]]);
  });
});
