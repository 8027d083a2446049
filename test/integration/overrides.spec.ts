import { Controller, Get, type LoggerService } from '@nestjs/common';
import { Funnel, RateLimiterService, RateLimit, RedisLimitEvents, type RedisLimitEvent } from '../../lib/index.js';
import { DecisionEngine } from '../../lib/rate-limit/decision-engine.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { platformApp, type PlatformApp } from '../harness/platform-app.js';
import { itOnAServer } from '../harness/on-a-server.js';
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

// Limits an override can break only with a value setOverride refuses, or one only a request can
// judge (a tier's window, a cost function's permits): issue 26 #2. And a window change on each
// algorithm whose state would read another window's counter as its own: issue 26 #14.
@Controller('ovt')
class TrustController {
  @Get('bucket')
  @RateLimit({ name: 'bucket', limit: 2, windowMs: 60_000, algorithm: 'token-bucket' })
  bucket() {
    return {};
  }

  @Get('tier-bucket')
  @RateLimit({ name: 'tierBucket', limit: 2, windowMs: () => 60_000, algorithm: 'token-bucket' })
  tierBucket() {
    return {};
  }

  @Get('cost-fn')
  @RateLimit({ name: 'costFn', limit: 6, windowMs: 60_000, cost: () => 3 })
  costFn() {
    return {};
  }

  // (a day's windows: see the changed-windowMs test)
  @Get('wide')
  @RateLimit({ name: 'wide', limit: 2, windowMs: DAY_MS, algorithm: 'fixed-window' })
  wide() {
    return {};
  }

  @Get('slide')
  @RateLimit({ name: 'slide', limit: 2, windowMs: DAY_MS })
  slide() {
    return {};
  }

  @Get('refill')
  @RateLimit({ name: 'refill', limit: 2, windowMs: DAY_MS, algorithm: 'token-bucket' })
  refill() {
    return {};
  }

  @Get('login')
  @RateLimit({ name: 'login', limit: 6, windowMs: 60_000, cost: 2 })
  login() {
    return {};
  }

  @Get('pour')
  @Funnel({ name: 'pour', capacity: 4, leakingDurationMs: 60_000, quota: 2 })
  pour() {
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
    const started = await platformApp('express', redis, [NamedController, TrustController], {
      keyPrefix: prefix,
      defaultLimits: [{ name: 'global', limit: 100, windowMs: 60_000 }],
    });
    apps.push(started);
    return started;
  };
  /** The hash the overrides live in, written as another process (or a person) would. */
  const hash = () => app.app.get(RedisConnection).keys.build('ov', 'overrides');
  /** The channel a change is announced on. */
  const channel = () => app.app.get(RedisConnection).keys.build('ov', 'changed');
  /** Nest's logger is the one the last app set: every app's lines at `level`. */
  const logged = (level: 'warn' | 'error') => apps.flatMap((started) => started.log.of(level));
  /** The warnings that an override of `name` was ignored. */
  const ignored = (name: string) => logged('warn').filter((line) => line.startsWith(`override of '${name}' (`) && line.includes(' ignored'));
  /** `n` requests to `path`, one after another: each one's status and X-RateLimit-Limit. */
  const statuses = async (path: string, n: number) => {
    const answers: [number, string | undefined][] = [];
    for (let i = 0; i < n; i++) {
      const r = await app.http.get(path);
      answers.push([r.status, r.headers['x-ratelimit-limit']]);
    }
    return answers;
  };

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
      20_000,
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
    expect(Object.keys(named).sort()).toEqual([
      'bucket',
      'costFn',
      'costly',
      'drip',
      'global',
      'login',
      'pour',
      'refill',
      'shared',
      'slide',
      'tierBucket',
      'tiered',
      'twice',
      'wide',
    ]);
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

  itOnAServer('catches up on a change it did not hear: after a resubscribe, and by re-reading while unsubscribed', async () => {
    const raw = redis.client();
    try {
      // written without an announcement, right after every subscriber connection was dropped
      await redis.onEveryMaster('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await raw.hset(hash(), 'shared', JSON.stringify({ limit: 3 }));
      await until(
        async () => (await app.http.get('/ovi/long')).headers['x-ratelimit-limit'] === '3',
        20_000,
        () => 'read again on resubscribing',
      );

      // no subscription at all: re-read about every second
      const overrides = app.app.get(DecisionEngine).overrides as unknown as { subscription: { close(): void }; poll(on: boolean): void };
      overrides.subscription.close();
      overrides.poll(true);
      await raw.hset(hash(), 'shared', JSON.stringify({ limit: 4 }));
      await until(
        async () => (await app.http.get('/ovi/long')).headers['x-ratelimit-limit'] === '4',
        20_000,
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

  it('ignores a stored value setOverride would refuse: declared policy, no 500, one warning per change (issue 26 #2)', async () => {
    const errors = logged('error').length;
    // written straight into the hash (another app version on the prefix, a hand edit) and announced
    const stored: Record<string, object> = {
      costly: { limit: 1 }, // below its cost 3
      pour: { limit: 1 }, // below its quota 2
      bucket: { limit: 2 ** 40 }, // 2^40 × 60 s is above 2^53
      twice: { limit: 1, windowMs: 2_000 }, // one window for the two 'twice' limits of a route
      nobody: { limit: 1 }, // no limit here carries it: nothing to apply it to
      shared: { limit: 1, windowMs: Number.MAX_SAFE_INTEGER }, // a value setOverride takes: applied
    };
    const raw = redis.client();
    try {
      await raw.hset(hash(), Object.fromEntries(Object.entries(stored).map(([name, value]) => [name, JSON.stringify(value)])));
      await raw.publish(channel(), 'costly');
      await until(
        async () => (await app.http.get('/ovi/short')).headers['x-ratelimit-limit'] === '1',
        20_000,
        () => 'the announced overrides read',
      );

      // the declared policies: 10 with cost 3, capacity 4 with quota 2, a bucket of 2
      expect(await statuses('/ovi/costly', 4)).toEqual([
        [200, '10'],
        [200, '10'],
        [200, '10'],
        [429, '10'],
      ]);
      expect(await statuses('/ovt/pour', 3)).toEqual([
        [200, '4'],
        [200, '4'],
        [429, '4'],
      ]);
      expect(await statuses('/ovt/bucket', 3)).toEqual([
        [200, '2'],
        [200, '2'],
        [429, '2'],
      ]);
      expect((await statuses('/ovi/twice', 2)).map(([status]) => status)).toEqual([200, 200]);
      // a huge window is no reason to refuse: it is applied, and answers
      expect(await statuses('/ovi/long', 1)).toEqual([[429, '1']]);

      // more reads (announced, asked for, polled) and requests: still one warning a name per
      // instance (each app this suite started declares them; Nest's logger is the last app's)
      const instances = apps.length;
      await raw.publish(channel(), 'costly');
      await limiter.overrides();
      for (const name of ['costly', 'pour', 'bucket', 'twice']) expect([name, ignored(name).length]).toEqual([name, instances]);
      expect(ignored('costly')[0]).toMatch(/below the cost 3 of NamedController\.costly/);
      expect(ignored('nobody')).toEqual([]);
      expect(logged('error')).toHaveLength(errors);

      // another bad value is another change: one more warning
      await raw.hset(hash(), 'costly', JSON.stringify({ limit: 2 }));
      await raw.publish(channel(), 'costly');
      await until(
        async () => ignored('costly').length === 2 * instances,
        20_000,
        () => `a second warning for 'costly': ${ignored('costly').join(' | ')}`,
      );
      await limiter.overrides();
      expect(ignored('costly')).toHaveLength(2 * instances);
    } finally {
      raw.disconnect();
    }
  });

  it("checks an override against what a request resolves, a tier's window or a cost function's permits (issue 26 #2)", async () => {
    const errors = logged('error').length;
    // setOverride takes both (it knows no window of the tier, nor the cost function's permits),
    // and so does every instance reading them
    await limiter.setOverride('tierBucket', { limit: 2 ** 40 }); // above 2^53 with the tier's 60 s
    await limiter.setOverride('costFn', { limit: 2 }); // below the 3 the cost function resolves
    // the declared policies: a bucket of 2, 6 with cost 3
    for (let round = 0; round < 2; round++) {
      expect(await statuses('/ovt/tier-bucket', 3)).toEqual([
        [round === 0 ? 200 : 429, '2'],
        [round === 0 ? 200 : 429, '2'],
        [429, '2'],
      ]);
      expect(await statuses('/ovt/cost-fn', 3)).toEqual([
        [round === 0 ? 200 : 429, '6'],
        [round === 0 ? 200 : 429, '6'],
        [429, '6'],
      ]);
    }
    // said once per override and limit, by the instance that served the requests
    expect(ignored('tierBucket')).toEqual([expect.stringMatching(/TrustController\.tierBucket: @RateLimit\(#1\) is above 2\^53/)]);
    expect(ignored('costFn')).toEqual([expect.stringMatching(/below the cost 3 of TrustController\.costFn/)]);
    expect(logged('error')).toHaveLength(errors);
  });

  it('takes an override from a process that declares no such limit, with one warning; the others apply it by their rules (issue 26 #12)', async () => {
    // every app this suite started declares 'login'
    const declaring = apps.length;
    // an admin app (or a worker, a CLI) on the same Redis and key prefix, with no limits of its own
    const admin = await platformApp('express', redis, [], { keyPrefix: prefix });
    apps.push(admin);
    const adminLimiter = admin.app.get(RateLimiterService);
    const undeclared = () => logged('warn').filter((line) => line.startsWith(`override of 'login': no @RateLimit, @Funnel or defaultLimits entry`));

    // below the cost 2 this app declares: stored by the admin, ignored here
    await adminLimiter.setOverride('login', { limit: 1 });
    expect(undeclared()).toHaveLength(1);
    expect(await adminLimiter.overrides()).toEqual({ login: { limit: 1, windowMs: 0 } });
    await until(
      async () => ignored('login').length === declaring,
      20_000,
      () => `each app ignoring a login override below its cost: ${ignored('login').join(' | ')}`,
    );
    const declared = await app.http.get('/ovt/login');
    expect([declared.status, declared.headers['x-ratelimit-limit']]).toEqual([200, '6']);

    await adminLimiter.setOverride('login', { limit: 4 });
    expect(undeclared()).toHaveLength(2);
    expect(ignored('login')).toHaveLength(declaring);
    await until(
      async () => (await app.http.get('/ovt/login')).headers['x-ratelimit-limit'] === '4',
      20_000,
      () => 'the admin override in force in the app',
    );
    // where the name is declared, its rules still refuse at once
    await expect(limiter.setOverride('login', { limit: 1 })).rejects.toThrow(/^policy\.limit \(1\) is below the cost 2 of TrustController\.login/);
  });

  it.each([
    ['fixed-window', 'wide', 'fw4'],
    ['sliding-window', 'slide', 'sw5'],
    ['token-bucket', 'refill', 'tb2'],
  ])('%s: a changed windowMs counts on a fresh counter, leaving the old one as it was (issue 26 #14)', async (_algorithm, name, kind) => {
    // On the server clock: the old counter must stay as the refusal left it, and a fixed window's
    // key expires when its window ends. Windows of a day and a half-day (which end together), none
    // ending mid-test.
    await awayFromWindowEnd(DAY_MS / 2);
    const path = `/ovt/${name}`;
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await app.http.get(path)).status);
    expect(statuses).toEqual([200, 200, 429]);
    const [old, ...more] = await redis.keys(`${prefix}${kind}.${DAY_MS}:${name}:*`);
    expect([old, more]).toEqual([expect.any(String), []]);
    const raw = redis.client();
    try {
      const before = await raw.dumpBuffer(old!);

      await limiter.setOverride(name, { limit: 2, windowMs: DAY_MS / 2 });
      const fresh = await app.http.get(path);
      expect([fresh.status, fresh.headers['x-ratelimit-limit'], fresh.headers['x-ratelimit-remaining']]).toEqual([200, '2', '1']);
      // the request was counted on the half-day counter, and the day's is as the refusal left it
      expect(await redis.keys(`${prefix}${kind}.${DAY_MS / 2}:${name}:*`)).toEqual([old!.replace(`${kind}.${DAY_MS}:`, `${kind}.${DAY_MS / 2}:`)]);
      expect((await raw.dumpBuffer(old!)).equals(before)).toBe(true);
    } finally {
      raw.disconnect();
    }
  });
});
