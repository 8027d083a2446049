import { Controller, Get, type LoggerService } from '@nestjs/common';
import { Funnel, RateLimiterService, RateLimit, RedisLimitEvents, type RedisLimitEvent } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { platformApp, type PlatformApp } from '../harness/platform-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// RateLimiterService.setOverride / overrides (issue 18): what an override may be, how overrides()
// reports it, and how a process learns of one it did not make (start-up, pub/sub, re-reads).
@Controller('ovi')
class NamedController {
  @Get('short')
  @RateLimit({ name: 'shared', limit: 5, windowMs: 1_000 })
  short() {
    return {};
  }

  @Get('long')
  @RateLimit({ name: 'shared', limit: 50, windowMs: 60_000 })
  long() {
    return {};
  }

  @Get('costly')
  @RateLimit({ name: 'costly', limit: 10, windowMs: 60_000, cost: 3 })
  costly() {
    return {};
  }

  @Get('twice')
  @RateLimit({ name: 'twice', limit: 5, windowMs: 1_000 })
  @RateLimit({ name: 'twice', limit: 50, windowMs: 60_000 })
  twice() {
    return {};
  }

  @Get('drip')
  @Funnel({ name: 'drip', capacity: 4, leakingDurationMs: 60_000, quota: 2 })
  drip() {
    return {};
  }

  @Get('tiered')
  @RateLimit({ name: 'tiered', limit: () => 100, windowMs: () => 60_000 })
  tiered() {
    return {};
  }
}

/** Keeps every line logged at 'log' level. */
class Lines implements LoggerService {
  readonly lines: string[] = [];
  log(message: unknown): void {
    this.lines.push(String(message));
  }
  error(): void {}
  warn(message: unknown): void {
    this.lines.push(`warn: ${String(message)}`);
  }
}

describe('runtime limit overrides', () => {
  let redis: TestRedis;
  let prefix: string;
  let app: PlatformApp;
  let limiter: RateLimiterService;
  const apps: PlatformApp[] = [];
  const start = async () => {
    const started = await platformApp('express', redis, [NamedController], {
      keyPrefix: prefix,
      defaultLimits: [{ name: 'global', limit: 100, windowMs: 60_000 }],
    });
    apps.push(started);
    return started;
  };
  /** The hash the overrides live in, written as another process (or a person) would. */
  const hash = () => app.app.get(RedisConnection).keys.build('ov', 'overrides');

  beforeAll(async () => {
    redis = await TestRedis.start();
    prefix = uniquePrefix('ovi');
    app = await start();
    limiter = app.app.get(RateLimiterService);
  });
  afterAll(async () => {
    await Promise.all(apps.map((started) => started.close()));
    await redis?.stop();
  });
  afterEach(async () => {
    const raw = redis.client();
    await raw.del(hash());
    raw.disconnect();
    await until(
      async () => Object.keys(await limiter.overrides()).length === 0,
      5000,
      () => 'overrides removed',
    );
  });

  it('refuses bad input, naming the argument, and stores nothing', async () => {
    const bad: [unknown, unknown, ErrorConstructor, RegExp][] = [
      ['', { limit: 1 }, TypeError, /^name must be a non-empty string/],
      [7, { limit: 1 }, TypeError, /^name must be/],
      ['shared', undefined, TypeError, /^policy must be an object/],
      ['shared', { limit: 0 }, RangeError, /^policy\.limit must be a positive integer, got 0/],
      ['shared', { limit: 1.5 }, RangeError, /^policy\.limit/],
      ['shared', { limit: '5' }, TypeError, /^policy\.limit/],
      ['shared', { limit: 5, windowMs: -1 }, RangeError, /^policy\.windowMs/],
      ['shared', { limit: 5, window: 1 }, TypeError, /^policy\.window is not an option/],
      ['nobody', { limit: 5 }, TypeError, /^name: no @RateLimit, @Funnel or defaultLimits entry of this app is named "nobody"/],
      ['costly', { limit: 2 }, RangeError, /below the cost 3 of NamedController\.costly/],
      ['drip', { limit: 1 }, RangeError, /below the cost 2 of NamedController\.drip/],
      ['twice', { limit: 5, windowMs: 2_000 }, RangeError, /^policy\.windowMs: .*twice/],
    ];
    for (const [name, policy, kind, message] of bad) {
      const attempt = limiter.setOverride(name as string, policy as { limit: number });
      await expect(attempt).rejects.toThrow(kind);
      await expect(attempt).rejects.toThrow(message);
    }
    expect(await limiter.overrides()).toEqual({});
  });

  it('lists the names this app declares, each with its limits', () => {
    const named = limiter.namedLimits();
    expect(Object.keys(named).sort()).toEqual(['costly', 'drip', 'global', 'shared', 'tiered', 'twice']);
    expect(named['shared']).toEqual([
      { at: 'NamedController.short: @RateLimit(#1)', algorithm: 'sliding-window', limit: 5, windowMs: 1_000 },
      { at: 'NamedController.long: @RateLimit(#1)', algorithm: 'sliding-window', limit: 50, windowMs: 60_000 },
    ]);
    expect(named['drip']).toEqual([{ at: 'NamedController.drip: @Funnel(#1)', algorithm: 'funnel', limit: 4, windowMs: 60_000 }]);
    expect(named['tiered']).toEqual([{ at: 'NamedController.tiered: @RateLimit(#1)', algorithm: 'sliding-window' }]);
    // defaultLimits: once as declared, and on every route they reach
    expect(named['global']).toContainEqual({ at: 'RedisLimitModule: defaultLimits[0]', algorithm: 'sliding-window', limit: 100, windowMs: 60_000 });
  });

  it('reports the window that applies, emits one event per change and logs it once', async () => {
    const lines = new Lines();
    app.app.useLogger(lines);
    const seen: RedisLimitEvent[] = [];
    const stop = app.app.get(RedisLimitEvents).on((event) => seen.push(event));
    try {
      await limiter.setOverride('shared', { limit: 7 });
      await limiter.setOverride('tiered', { limit: 3 });
      await limiter.setOverride('global', { limit: 50 });
      await limiter.setOverride('drip', { limit: 6, windowMs: 10_000 });
      await limiter.setOverride('twice', { limit: 5 });
      await limiter.setOverride('costly', { limit: 3 });
      await limiter.setOverride('costly', null);
    } finally {
      stop();
      app.app.useLogger(app.log);
    }
    expect(await limiter.overrides()).toEqual({
      // declared with 1 s and 60 s: each keeps its own, the shortest is reported
      shared: { limit: 7, windowMs: 1_000 },
      // a tier's window is known per request only
      tiered: { limit: 3, windowMs: 0 },
      global: { limit: 50, windowMs: 60_000 },
      drip: { limit: 6, windowMs: 10_000 },
      twice: { limit: 5, windowMs: 1_000 },
    });
    const changes = seen.filter((event) => event.type === 'redis-limit.override');
    expect(changes).toHaveLength(7);
    expect(changes[0]).toEqual({ type: 'redis-limit.override', name: 'shared', override: { limit: 7, windowMs: 1_000 } });
    expect(changes[6]).toEqual({ type: 'redis-limit.override', name: 'costly', override: null });
    expect(lines.lines.filter((line) => line.includes("'costly'"))).toEqual(["override of 'costly': limit 3, windowMs 60000", "override of 'costly' removed"]);
  });

  it('applies to funnels, tiers and defaultLimits, each limit of a name keeping its window', async () => {
    await limiter.setOverride('drip', { limit: 2 });
    await limiter.setOverride('tiered', { limit: 1 });
    await limiter.setOverride('global', { limit: 1_000 });
    await limiter.setOverride('twice', { limit: 1 });
    const drip = await app.http.get('/ovi/drip');
    expect([drip.status, drip.headers['x-ratelimit-limit']]).toEqual([200, '2']);
    expect((await app.http.get('/ovi/drip')).status).toBe(429);
    expect((await app.http.get('/ovi/tiered')).headers['x-ratelimit-limit']).toBe('1');
    expect((await app.http.get('/ovi/tiered')).status).toBe(429);
    const twice = await app.http.get('/ovi/twice');
    expect(twice.headers['x-ratelimit-limit']).toBe('1');
    expect(twice.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('a new instance obeys stored overrides from its first request', async () => {
    const raw = redis.client();
    await raw.hset(hash(), 'shared', JSON.stringify({ limit: 2 }));
    raw.disconnect();
    const late = await start();
    const first = await late.http.get('/ovi/long');
    expect(first.headers['x-ratelimit-limit']).toBe('2');
  });

  it('catches up on a change it did not hear: after a resubscribe, and by re-reading while unsubscribed', async () => {
    const raw = redis.client();
    try {
      // written without an announcement, right after every subscriber connection was dropped
      await redis.onEveryMaster('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await raw.hset(hash(), 'shared', JSON.stringify({ limit: 3 }));
      await until(
        async () => (await app.http.get('/ovi/long')).headers['x-ratelimit-limit'] === '3',
        5000,
        () => 'read again on resubscribing',
      );

      // no subscription at all: re-read about every second
      const overrides = limiter.limitOverrides as unknown as { subscription: { close(): void }; poll(on: boolean): void };
      overrides.subscription.close();
      overrides.poll(true);
      await raw.hset(hash(), 'shared', JSON.stringify({ limit: 4 }));
      await until(
        async () => (await app.http.get('/ovi/long')).headers['x-ratelimit-limit'] === '4',
        5000,
        () => 'read again while unsubscribed',
      );
    } finally {
      raw.disconnect();
    }
  });

  it('ignores a stored value that is not an override, with one warning', async () => {
    const raw = redis.client();
    await raw.hset(hash(), 'costly', 'ten', 'shared', JSON.stringify({ limit: 9 }));
    raw.disconnect();
    // Nest's logger is the one the last app set: look in every app's log
    const warnings = () => apps.flatMap((started) => started.log.of('warn')).filter((line) => line.includes("'costly'"));
    expect(await limiter.overrides()).toEqual({ shared: { limit: 9, windowMs: 1_000 } });
    expect(warnings()).toContain(`override of 'costly' is not { limit, windowMs? } (ten): ignored`);
    const warned = warnings().length;
    await limiter.overrides();
    expect(warnings()).toHaveLength(warned);
  });
});
