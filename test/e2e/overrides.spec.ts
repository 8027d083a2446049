import { Controller, Get } from '@nestjs/common';
import { RateLimiterService, RateLimit, RedisLimitEvents } from '../../lib/index.js';
import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { platformApp, type PlatformApp } from '../harness/platform-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// Runtime overrides (issue 18) across two app instances on one Redis: a change made on one is in
// force on the other within about a second, in its headers, its refusal cache and its counters.
@Controller('ov')
class OverriddenController {
  @Get('raise')
  @RateLimit({ name: 'raise', limit: 2, windowMs: 60_000 })
  raise() {
    return { ok: true };
  }

  // a day's fixed window (and a half-day's, overridden): none ends mid-test
  @Get('window')
  @RateLimit({ name: 'window', limit: 2, windowMs: DAY_MS, algorithm: 'fixed-window' })
  window() {
    return { ok: true };
  }

  @Get('lower')
  @RateLimit({ name: 'lower', limit: 5, windowMs: 60_000 })
  lower() {
    return { ok: true };
  }
}

describe('runtime overrides across two app instances', () => {
  let redis: TestRedis;
  let a: PlatformApp;
  let b: PlatformApp;
  beforeAll(async () => {
    redis = await TestRedis.start();
    const options = { keyPrefix: uniquePrefix('ov'), headers: 'both' as const };
    [a, b] = await Promise.all([
      platformApp('express', redis, [OverriddenController], options),
      platformApp('express', redis, [OverriddenController], options),
    ]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await redis?.stop();
  });

  const limiter = (app: PlatformApp) => app.app.get(RateLimiterService);
  /** B answers `path` with this X-RateLimit-Limit (and status, if given), soon. */
  const bSees = (path: string, limit: number, status?: number) =>
    until(
      async () => {
        const r = await b.http.get(path);
        return r.headers['x-ratelimit-limit'] === String(limit) && (status === undefined || r.status === status);
      },
      20_000,
      () => `B applying limit ${limit} on ${path}`,
    );

  it('a raised limit reaches the other instance, its headers and its refusal cache', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await b.http.get('/ov/raise')).status);
    expect(statuses).toEqual([200, 200, 429, 429]);
    // B remembers the refusal (once its channel is up): later ones are refused without asking Redis
    const hits = () => b.app.get(RedisLimitEvents).counters().refusalCacheHits;
    await until(
      async () => (await b.http.get('/ov/raise')).status === 429 && hits() > 0,
      20_000,
      () => 'a refusal remembered on B',
    );

    await limiter(a).setOverride('raise', { limit: 4 });
    // the same counter, 2 used: 2 more now
    await bSees('/ov/raise', 4, 200);
    const r = await b.http.get('/ov/raise');
    expect(r.headers['ratelimit-policy']).toBe('"raise";q=4;w=60');
    expect((await b.http.get('/ov/raise')).status).toBe(429);
    expect(await limiter(b).overrides()).toEqual({ raise: { limit: 4, windowMs: 60_000 } });

    // removed: the declared 2 again, on both
    await limiter(a).setOverride('raise', null);
    await bSees('/ov/raise', 2, 429);
    expect((await a.http.get('/ov/raise')).headers['x-ratelimit-limit']).toBe('2');
    expect(await limiter(b).overrides()).toEqual({});
  });

  it('a lowered limit refuses on the other instance, keeping the counter', async () => {
    for (let i = 0; i < 2; i++) expect((await b.http.get('/ov/lower')).status).toBe(200);
    await limiter(a).setOverride('lower', { limit: 2 });
    await bSees('/ov/lower', 2, 429);
    await limiter(a).setOverride('lower', null);
  });

  it('a changed windowMs starts a fresh counter', async () => {
    await awayFromWindowEnd(DAY_MS / 2);
    for (let i = 0; i < 2; i++) expect((await b.http.get('/ov/window')).status).toBe(200);
    expect((await b.http.get('/ov/window')).status).toBe(429);
    await limiter(a).setOverride('window', { limit: 2, windowMs: DAY_MS / 2 });
    // the same limit, another window: the 2 used under the old one do not count
    await bSees('/ov/window', 2, 200);
    expect((await b.http.get('/ov/window')).headers['ratelimit-policy']).toBe('"window";q=2;w=43200');
    expect((await b.http.get('/ov/window')).status).toBe(429);
    expect(await limiter(b).overrides()).toEqual({ window: { limit: 2, windowMs: DAY_MS / 2 } });
    await limiter(a).setOverride('window', null);
  });
});
