import { RateLimiterService } from '../../lib/index.js';
import { until } from '../harness/until.js';
import { inSequence, PLATFORMS, withSampleApp } from './sample-app.js';

// POST /login: 5 failed attempts per 15 min per account (countIf: only 401s count), then a
// 15 min lockout (blockMs).
const FIFTEEN_MINUTES_MS = 15 * 60_000;
const LOGIN = { limit: 5, windowMs: FIFTEEN_MINUTES_MS };

describe.each(PLATFORMS)('login attempts on %s', (platform) => {
  const ctx = withSampleApp(platform);
  const login = (account: string, password: string) => ctx.sample.http.post('/login').send({ account, password });
  const left = async (account: string) =>
    (await ctx.sample.app.get(RateLimiterService).decide([{ key: account, scope: 'login', policy: LOGIN }], { peek: true })).decisions[0]!.remaining;

  it('counts only failures: 5, then the account is locked out for 15 minutes', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await login('alice', 'wonderland')).status).toBe(200);
      // the success's permit comes back once its response is sent
      await until(
        async () => (await left('alice')) === 5,
        20_000,
        async () => `${await left('alice')} left`,
      );
    }
    const failures = await inSequence(5, () => login('alice', 'guess'));
    expect(failures.map((r) => r.status)).toEqual([401, 401, 401, 401, 401]);
    const locked = await login('alice', 'wonderland');
    expect(locked.status).toBe(429);
    expect(locked.body.retryAfterMs).toBeGreaterThan(FIFTEEN_MINUTES_MS - 60_000);
    expect(locked.body.retryAfterMs).toBeLessThanOrEqual(FIFTEEN_MINUTES_MS);
    // account names are counted case-blind; other accounts are untouched
    expect((await login('ALICE', 'wonderland')).status).toBe(429);
    expect((await login('bob', 'guess')).status).toBe(401);
  });

  it('answers a malformed attempt with 400, charging nobody', async () => {
    const bad = await ctx.sample.http.post('/login').send({ account: 'alice' });
    expect(bad.status).toBe(400);
    expect(bad.headers['x-ratelimit-limit']).toBeUndefined();
    expect(await left('alice')).toBe(5);
  });
});
