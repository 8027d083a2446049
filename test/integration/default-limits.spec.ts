import 'reflect-metadata';
import {
  BadRequestException,
  Controller,
  Get,
  HttpException,
  Inject,
  Injectable,
  Module,
  Post,
  UseGuards,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { MaxPending, RateLimit, RateLimitGuard, SkipRateLimit, type RedisLimitModuleOptions, type StackDecision } from '../../lib/index.js';
import { controllerApp, startupError, statusesOf, type ControllerApp, type ControllerAppSetup } from '../harness/controller-app.js';
import { TestRedis } from '../harness/redis-server.js';

// The module's defaultLimits and skipIf, and RateLimitGuard as an APP_GUARD (plain or a subclass):
// which limits a request meets, which counter they charge, and that it is decided once.
type Req = { headers: Record<string, string | undefined>; user?: { id: string } };
const req = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<Req>();
const userHeader = (ctx: ExecutionContext) => req(ctx).headers['x-user'] ?? 'anon';

@Controller('open')
class OpenController {
  @Get('a')
  a() {
    return 'a';
  }

  @Get('b')
  b() {
    return 'b';
  }

  @Get('health')
  @SkipRateLimit()
  health() {
    return 'ok';
  }
}

@Controller('own')
@RateLimit({ limit: 3, windowMs: 60_000 }) // replaces the unnamed default
class OwnController {
  @Get('class')
  fromClass() {
    return 'ok';
  }

  @Get('named')
  @RateLimit({ limit: 5, windowMs: 60_000, name: 'api' }) // replaces the default named 'api'
  named() {
    return 'ok';
  }
}

@Controller('skipped')
@SkipRateLimit()
class SkippedController {
  @Get()
  list() {
    return 'ok';
  }
}

@Controller('orders')
class OrdersController {
  @Post()
  @MaxPending(1, { name: 'orders', ttlMs: 60_000, owner: userHeader })
  create() {
    return 'created';
  }
}

@Controller('thrice')
@UseGuards(RateLimitGuard)
class ThriceController {
  @Get()
  @RateLimit({ limit: 3, windowMs: 60_000, name: 'thrice' })
  get() {
    return 'ok';
  }
}

/** Sets req.user from x-user, as an auth guard would; refuses requests without one. */
@Injectable()
class AuthGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const id = req(ctx).headers['x-user'];
    if (id === undefined) return false;
    req(ctx).user = { id };
    return true;
  }
}

@Controller('me')
@UseGuards(AuthGuard)
class MeController {
  // its key reads what the auth guard set: its guard must run after that one, defaults or not
  @Get()
  @RateLimit({ limit: 1, windowMs: 60_000, key: (ctx) => req(ctx).user!.id })
  get() {
    return 'ok';
  }
}

/** User ids are case-blind here. */
@Injectable()
class Users {
  idOf(ctx: ExecutionContext): string {
    return userHeader(ctx).toLowerCase();
  }
}

/** Counts by user (a provider of its own, injected by property) and refuses in its own words. */
@Injectable()
class ByUserGuard extends RateLimitGuard {
  @Inject(Users) private readonly users!: Users;

  protected override getTracker(ctx: ExecutionContext): string {
    return this.users.idOf(ctx);
  }

  protected override throwTooManyRequests(_ctx: ExecutionContext, result: StackDecision): never {
    throw new HttpException({ code: 'SLOW_DOWN', waitMs: result.retryAfterMs }, 429);
  }
}

// imported after RedisLimitModule, so the module's own guard is registered (and runs) first
@Module({ providers: [Users, { provide: APP_GUARD, useClass: ByUserGuard }] })
class ByUserGuardModule {}

const ALL = [OpenController, OwnController, SkippedController, OrdersController, ThriceController, MeController];

describe('default limits', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  async function withApp(options: RedisLimitModuleOptions, use: (app: ControllerApp) => Promise<void>, setup: Partial<ControllerAppSetup> = {}): Promise<void> {
    const app = await controllerApp(redis, { controllers: ALL, ...setup, options });
    try {
      await use(app);
    } finally {
      await app.close();
    }
  }
  const unnamed = { defaultLimits: [{ limit: 2, windowMs: 60_000 }] };

  it('apply to routes without decorators, an unnamed one counting per route', async () => {
    await withApp(unnamed, async ({ http }) => {
      const a = await Promise.all([0, 1].map(() => http.get('/open/a')));
      expect(a.map((r) => [r.status, r.headers['x-ratelimit-limit']])).toEqual([
        [200, '2'],
        [200, '2'],
      ]);
      const refused = await http.get('/open/a');
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({ statusCode: 429, message: 'Too Many Requests', retryAfterMs: expect.any(Number) });
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(await statusesOf(() => http.get('/open/b'), 3)).toEqual([200, 200, 429]);
    });
  });

  it('a named one shares one counter across the app, and a limit of that name replaces it (keeping its counter)', async () => {
    await withApp({ defaultLimits: [{ limit: 3, windowMs: 60_000, name: 'api' }] }, async ({ http }) => {
      expect(await statusesOf(() => http.get('/open/a'), 2)).toEqual([200, 200]);
      expect(await statusesOf(() => http.get('/open/b'), 2)).toEqual([200, 429]);
      expect((await http.get('/open/a')).status).toBe(429);
      // the handler's 'api' allows 5 on the same counter: 3 used, 2 left
      const named = await Promise.all([0, 1].map(() => http.get('/own/named')));
      expect(named.map((r) => [r.status, r.headers['x-ratelimit-limit']])).toEqual([
        [200, '5'],
        [200, '5'],
      ]);
      expect((await http.get('/own/named')).status).toBe(429);
    });
  });

  it('a class-level limit replaces an unnamed default; @SkipRateLimit skips them on a handler and on a class', async () => {
    await withApp(unnamed, async ({ http }) => {
      const own = await statusesOf(() => http.get('/own/class'), 4);
      expect(own).toEqual([200, 200, 200, 429]);
      expect((await http.get('/own/class')).headers['x-ratelimit-limit']).toBe('3');
      for (const path of ['/open/health', '/skipped']) {
        const responses = await Promise.all([0, 1, 2].map(() => http.get(path)));
        expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
        expect(responses.filter((r) => 'x-ratelimit-limit' in r.headers)).toEqual([]);
      }
    });
  });

  it('skipIf exempts a request from every limit, not from @MaxPending', async () => {
    const skipIf = (ctx: ExecutionContext) => req(ctx).headers['x-internal'] === 'yes';
    await withApp({ ...unnamed, skipIf }, async ({ http }) => {
      const internal = await statusesOf(() => http.get('/open/a').set('x-internal', 'yes'), 3);
      expect(internal).toEqual([200, 200, 200]);
      expect((await http.get('/open/a').set('x-internal', 'yes')).headers['x-ratelimit-limit']).toBeUndefined();
      expect(await statusesOf(() => http.get('/open/a'), 3)).toEqual([200, 200, 429]);
      // @MaxPending still caps an internal caller
      expect(await statusesOf(() => http.post('/orders').set('x-internal', 'yes').set('x-user', 'u1'), 2)).toEqual([201, 429]);
    });
  });

  it('a skipIf that throws or answers a non-boolean is a 500; an HttpException it throws answers as it is', async () => {
    const skipIf = (ctx: ExecutionContext): boolean => {
      const how = req(ctx).headers['x-internal'];
      if (how === 'bad-request') throw new BadRequestException('no');
      if (how === 'throw') throw new Error('boom');
      if (how === 'string') return 'yes' as unknown as boolean;
      return false;
    };
    await withApp({ ...unnamed, skipIf }, async ({ http }) => {
      expect((await http.get('/open/a').set('x-internal', 'bad-request')).status).toBe(400);
      expect((await http.get('/open/a').set('x-internal', 'throw')).status).toBe(500);
      expect((await http.get('/open/a').set('x-internal', 'string')).status).toBe(500);
      // none of them charged the route
      expect(await statusesOf(() => http.get('/open/a'), 3)).toEqual([200, 200, 429]);
    });
  });

  it("leave a decorated route to its own guard, in its place after the route's auth guard", async () => {
    await withApp(unnamed, async ({ http }) => {
      expect(await statusesOf(() => http.get('/me').set('x-user', 'u1'), 2)).toEqual([200, 429]);
      expect((await http.get('/me').set('x-user', 'u2')).status).toBe(200);
    });
  });

  it('decide a request once with the guard attached three ways (APP_GUARD, module, decorators)', async () => {
    const appGuard = { provide: APP_GUARD, useClass: RateLimitGuard };
    for (const setup of [{}, { providers: [appGuard] }]) {
      await withApp(
        { defaultLimits: [{ limit: 3, windowMs: 60_000 }] },
        async ({ http }) => {
          for (const path of ['/thrice', '/open/a']) {
            const responses = await Promise.all([0, 1, 2].map(() => http.get(path)));
            expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
            expect(responses.map((r) => r.headers['x-ratelimit-remaining']).sort()).toEqual(['0', '1', '2']);
            expect((await http.get(path)).status).toBe(429);
          }
        },
        setup,
      );
    }
  });

  it('RateLimitGuard as APP_GUARD limits decorated routes, and undecorated ones only by defaults', async () => {
    const providers = [{ provide: APP_GUARD, useClass: RateLimitGuard }];
    await withApp(
      {},
      async ({ http }) => {
        expect(await statusesOf(() => http.get('/thrice'), 4)).toEqual([200, 200, 200, 429]);
        const free = await http.get('/open/a');
        expect(free.status).toBe(200);
        expect(free.headers['x-ratelimit-limit']).toBeUndefined();
      },
      { providers },
    );
  });

  it("a subclass as APP_GUARD decides with its own tracker and refusal, the module's guard standing aside", async () => {
    await withApp(
      unnamed,
      async ({ http }) => {
        expect(await statusesOf(() => http.get('/open/a').set('x-user', 'alice'), 2)).toEqual([200, 200]);
        const refused = await http.get('/open/a').set('x-user', 'Alice');
        expect(refused.status).toBe(429);
        expect(refused.body).toEqual({ code: 'SLOW_DOWN', waitMs: expect.any(Number) });
        expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
        expect((await http.get('/open/a').set('x-user', 'bob')).status).toBe(200);
        // decorated routes too: it runs before their own guards
        expect(await statusesOf(() => http.get('/thrice').set('x-user', 'carol'), 2)).toEqual([200, 200]);
        expect((await http.get('/thrice').set('x-user', 'carol')).body).toMatchObject({ code: 'SLOW_DOWN' });
      },
      { imports: [ByUserGuardModule] },
    );
  });

  it.each<[string, unknown, typeof TypeError, RegExp]>([
    ['a limit out of range', [{ limit: 0, windowMs: 1000 }], RangeError, /^RedisLimitModule: defaultLimits\[0\]\.limit must be a positive integer, got 0/],
    [
      'an unknown option',
      [
        { limit: 5, windowMs: 1000 },
        { limit: 5, windowMs: 60_000, windowMS: 1 },
      ],
      TypeError,
      /^RedisLimitModule: defaultLimits\[1\]\.windowMS is not an option/,
    ],
    ['an element that is no object', [{ limit: 5, windowMs: 1000 }, null], TypeError, /^RedisLimitModule: defaultLimits\[1\] takes an options object/],
    ['not an array', { limit: 5, windowMs: 1000 }, TypeError, /^RedisLimitModule: defaultLimits must be an array/],
    [
      'two unnamed on one counter',
      [
        { limit: 5, windowMs: 1000 },
        { limit: 9, windowMs: 1000 },
      ],
      TypeError,
      /^RedisLimitModule: two limits share the counter/,
    ],
  ])('fail app.init() when bad: %s', async (_case, defaultLimits, kind, message) => {
    const error = await startupError(redis, OpenController, { defaultLimits: defaultLimits as never });
    expect(error).toBeInstanceOf(kind);
    expect((error as Error).message).toMatch(message);
  });

  it('a skipIf that is not a function fails when the module is created', async () => {
    await expect(startupError(redis, OpenController, { skipIf: true as never })).rejects.toThrow(
      /^RedisLimitModule: skipIf must be a function \(ctx\) => boolean, got true/,
    );
  });
});

describe('default limits while Redis is down', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start({ own: true }); // stopped by the test
  });
  afterAll(() => redis.stop());

  it("answer as the module's guard says an outage: 503 under failMode closed, through when a default is open", async () => {
    const closed = await controllerApp(redis, {
      controllers: [OpenController],
      options: { defaultLimits: [{ limit: 2, windowMs: 60_000 }], commandTimeoutMs: 300 },
    });
    const open = await controllerApp(redis, {
      controllers: [OpenController],
      options: { defaultLimits: [{ limit: 2, windowMs: 60_000, failMode: 'open' }], commandTimeoutMs: 300 },
    });
    await redis.stop();
    try {
      const refused = await closed.http.get('/open/a');
      expect(refused.status).toBe(503);
      expect(refused.body).toEqual({ statusCode: 503, message: 'Rate limiter unavailable' });
      expect((await open.http.get('/open/a')).status).toBe(200);
    } finally {
      await redis.resume();
      await Promise.all([closed.close(), open.close()]);
    }
  });
});
