import { Controller, Get, type ExecutionContext } from '@nestjs/common';
import { RateLimiterService, RateLimit, RedisLimitEvents, type RedisLimitEvent } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { platformApp, type PlatformApp } from '../harness/platform-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// setOverride with `key` and `ttlMs` (issue 30 item 6): an override for one resolved key, which
// beats the name's, and overrides that lapse by themselves, in every instance.
const tenant = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<{ params: { tenant: string } }>().params.tenant;

@Controller('kov')
class TenantController {
  @Get('export/:tenant')
  @RateLimit({ name: 'export', limit: 3, windowMs: 60_000, key: tenant })
  export() {
    return {};
  }

  @Get('costly/:tenant')
  @RateLimit({ name: 'costly', limit: 10, windowMs: 60_000, cost: 3, key: tenant })
  costly() {
    return {};
  }
}

describe('per-key overrides and overrides that lapse', () => {
  let redis: TestRedis;
  let prefix: string;
  let app: PlatformApp;
  let other: PlatformApp;
  let limiter: RateLimiterService;
  const hashes = () => {
    const keys = app.app.get(RedisConnection).keys;
    return { byName: keys.build('ov', 'overrides'), byKey: keys.build('ov', 'overrides', 'keyed') };
  };
  /** Nest's logger is the one the last app set: every app's lines at `level`. */
  const logged = (level: 'warn' | 'error') => [app, other].flatMap((started) => started.log.of(level));
  const limitOf = async (started: PlatformApp, path: string) => (await started.http.get(path)).headers['x-ratelimit-limit'];
  const inForce = (started: PlatformApp, path: string, limit: string, what: string) =>
    until(
      async () => (await limitOf(started, path)) === limit,
      20_000,
      () => `${what}: ${path} with limit ${limit}`,
    );

  beforeAll(async () => {
    redis = await TestRedis.start();
    prefix = uniquePrefix('kov');
    app = await platformApp('express', redis, [TenantController], { keyPrefix: prefix });
    other = await platformApp('express', redis, [TenantController], { keyPrefix: prefix });
    limiter = app.app.get(RateLimiterService);
  });
  afterAll(async () => {
    await Promise.all([app?.close(), other?.close()]);
    await redis?.stop();
  });
  afterEach(async () => {
    const raw = redis.client();
    await raw.del(hashes().byName, hashes().byKey);
    raw.disconnect();
    await until(
      async () => Object.keys(await limiter.overrides()).length === 0,
      20_000,
      () => 'overrides removed',
    );
    // the counters of one test are not the next one's
    await redis.onEveryMaster('FLUSHALL');
  });

  it("beats the name's override for its key only, in every instance, and goes by key", async () => {
    await limiter.setOverride('export', { limit: 5 });
    await limiter.setOverride('export', { key: 'acme', limit: 1 });
    expect(await limitOf(app, '/kov/export/acme')).toBe('1');
    expect(await limitOf(app, '/kov/export/globex')).toBe('5');
    await inForce(other, '/kov/export/acme', '1', 'the per-key override in the other instance');
    expect(await limitOf(other, '/kov/export/globex')).toBe('5');
    expect(await limiter.overrides()).toEqual({
      export: { limit: 5, windowMs: 60_000 },
      'export:acme': { limit: 1, windowMs: 60_000, name: 'export', key: 'acme' },
    });

    // removing the key's leaves the name's, and the other way round
    await limiter.setOverride('export', null, { key: 'acme' });
    expect(await limiter.overrides()).toEqual({ export: { limit: 5, windowMs: 60_000 } });
    expect(await limitOf(app, '/kov/export/acme')).toBe('5');
    await limiter.setOverride('export', { key: 'acme', limit: 2 });
    await limiter.setOverride('export', null);
    expect(await limitOf(app, '/kov/export/acme')).toBe('2');
    expect(await limitOf(app, '/kov/export/globex')).toBe('3');
  });

  it('lets a refused key in at once when its override raises its limit: no refusal is kept past the change', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.http.get('/kov/export/initech')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    await limiter.setOverride('export', { key: 'initech', limit: 10 });
    const after = await app.http.get('/kov/export/initech');
    // the same counter (the window is kept): 4 of 10 used now
    expect([after.status, after.headers['x-ratelimit-remaining']]).toEqual([200, '6']);
  });

  it('lapses by itself after ttlMs on the server clock, in every instance, and is deleted from Redis', async () => {
    const seen: RedisLimitEvent[] = [];
    const stop = app.app.get(RedisLimitEvents).on((event) => seen.push(event));
    const raw = redis.client();
    try {
      const [seconds, micros] = await raw.time();
      const before = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      await limiter.setOverride('export', { key: 'acme', limit: 1, ttlMs: 2_000 });
      await limiter.setOverride('export', { limit: 7, ttlMs: 2_000 });
      const listed = await limiter.overrides();
      expect(listed['export:acme']).toEqual({ limit: 1, windowMs: 60_000, name: 'export', key: 'acme', expiresAt: expect.any(Number) });
      expect(listed['export']).toEqual({ limit: 7, windowMs: 60_000, expiresAt: expect.any(Number) });
      for (const { expiresAt } of Object.values(listed)) {
        expect(expiresAt).toBeGreaterThanOrEqual(before + 2_000);
        expect(expiresAt).toBeLessThan(before + 2_000 + 10_000);
      }
      expect(seen.filter((event) => event.type === 'redis-limit.override')[0]).toEqual({
        type: 'redis-limit.override',
        name: 'export',
        key: 'acme',
        override: { limit: 1, windowMs: 60_000, expiresAt: listed['export:acme']!.expiresAt },
      });
      expect(await limitOf(app, '/kov/export/acme')).toBe('1');

      // nobody removes them: each instance stops applying them, and Redis forgets them
      for (const started of [app, other]) {
        await inForce(started, '/kov/export/acme', '3', 'the declared limit after the lapse');
        await inForce(started, '/kov/export/globex', '3', "the declared limit after the name's lapse");
      }
      const [serverSeconds] = await raw.time();
      expect(Number(serverSeconds) * 1000).toBeGreaterThanOrEqual(before + 1_000);
      expect(await limiter.overrides()).toEqual({});
      expect([await raw.hlen(hashes().byKey), await raw.hlen(hashes().byName)]).toEqual([0, 0]);
    } finally {
      stop();
      raw.disconnect();
    }
  });

  it("ignores a stored per-key value its limits cannot take, with one warning naming the key; the name's applies", async () => {
    await expect(limiter.setOverride('costly', { key: 'acme', limit: 2 })).rejects.toThrow(
      /^policy\.limit \(2\) is below the cost 3 of TenantController\.costly/,
    );
    await limiter.setOverride('costly', { limit: 9 });
    const raw = redis.client();
    try {
      // written as another version or a hand edit would: below the cost, and not JSON at all
      await raw.hset(hashes().byKey, JSON.stringify(['costly', 'acme']), JSON.stringify({ limit: 2 }), 'junk', JSON.stringify({ limit: 4 }));
      await raw.publish(app.app.get(RedisConnection).keys.build('ov', 'changed'), 'costly');
      await until(
        async () => logged('warn').filter((line) => line.startsWith("override of 'costly' for key 'acme' (")).length === 2,
        20_000,
        () => `a warning from each instance: ${logged('warn').join(' | ')}`,
      );
      expect(await limitOf(app, '/kov/costly/acme')).toBe('9');
      // one warning per instance and change, however often the overrides are read
      await limiter.overrides();
      const junk = logged('warn').filter((line) => line.includes('"junk"'));
      expect(junk).toEqual([expect.stringMatching(/^override field "junk" is not \{ limit, windowMs\? \}/), expect.any(String)]);
      expect(logged('warn').filter((line) => line.startsWith("override of 'costly' for key 'acme' ("))).toHaveLength(2);
      expect(logged('error')).toEqual([]);
    } finally {
      raw.disconnect();
    }
  });

  it('refuses bad input, naming the argument, and stores nothing', async () => {
    await expect(limiter.setOverride('export', { limit: 1, key: '' })).rejects.toThrow(TypeError);
    await expect(limiter.setOverride('export', { limit: 1, ttlMs: 0 })).rejects.toThrow(/^policy\.ttlMs must be a positive integer, got 0$/);
    await expect(limiter.setOverride('export', { limit: 1 }, { key: 'acme' })).rejects.toThrow(/^opts is only for removing/);
    expect(await limiter.overrides()).toEqual({});
  });
});
