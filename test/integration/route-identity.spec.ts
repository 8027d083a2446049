import 'reflect-metadata';
import { Controller, Get, Module, Post, type ExecutionContext, type Type } from '@nestjs/common';
import { RouterModule } from '@nestjs/core';
import { MaxPending, RateLimit } from '../../lib/index.js';
import { controllerApp, startupError, statusesOf, type ControllerApp, type ControllerAppSetup } from '../harness/controller-app.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { TestRedis } from '../harness/redis-server.js';

// Which plan and which counter a request meets: one plan per (class, handler), so controllers
// sharing an inherited handler keep their own decorators; unnamed counters are scoped by the
// route (method, path, class and handler), so same-named classes on other paths never share one.
const owner = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-owner'] ?? 'u1';

class ListBase {
  @Get()
  list() {
    return 'ok';
  }
}

@Controller('limited')
@RateLimit({ limit: 1, windowMs: 60_000 })
class LimitedController extends ListBase {}

@Controller('free')
class FreeController extends ListBase {}

class CreateBase {
  @Post()
  create() {
    return 'created';
  }
}

@Controller('capped')
@MaxPending(1, { name: 'capped', ttlMs: 60_000, owner })
class CappedController extends CreateBase {}

@Controller('uncapped')
class UncappedController extends CreateBase {}

/** A class named UsersController at `path`, limited to `limit` per minute, unnamed. */
function usersController(path: string, limit = 1): Type {
  @Controller(path)
  @RateLimit({ limit, windowMs: 60_000 })
  class UsersController {
    @Get()
    list() {
      return 'ok';
    }
  }
  return UsersController;
}

@Module({ controllers: [usersController('users')] })
class V1Module {}

@Module({ controllers: [usersController('users')] })
class V2Module {}

describe('route identity', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  async function withApp(setup: ControllerAppSetup, use: (app: ControllerApp) => Promise<void>): Promise<void> {
    const app = await controllerApp(redis, setup);
    try {
      await use(app);
    } finally {
      await app.close();
    }
  }

  it.each([
    ['limited first', [LimitedController, FreeController]],
    ['free first', [FreeController, LimitedController]],
  ])('controllers inheriting one handler keep their own @RateLimit (%s)', async (_case, controllers) => {
    await withApp({ controllers }, async (app) => {
      expect(await statusesOf(() => app.http.get('/limited'), 3)).toEqual([200, 429, 429]);
      const free = await app.http.get('/free');
      expect(free.status).toBe(200);
      expect(free.headers['x-ratelimit-limit']).toBeUndefined();
    });
  });

  it.each([
    ['capped first', [CappedController, UncappedController]],
    ['uncapped first', [UncappedController, CappedController]],
  ])('controllers inheriting one handler keep their own @MaxPending (%s)', async (_case, controllers) => {
    await withApp({ controllers }, async (app) => {
      expect(await statusesOf(() => app.http.post('/capped'), 2)).toEqual([201, 429]);
      expect(await statusesOf(() => app.http.post('/uncapped'), 2)).toEqual([201, 201]);
    });
  });

  it('same-named classes on other paths count apart', async () => {
    await withApp({ controllers: [usersController('v1/users'), usersController('v2/users')] }, async (app) => {
      expect(await statusesOf(() => app.http.get('/v1/users'), 2)).toEqual([200, 429]);
      expect(await statusesOf(() => app.http.get('/v2/users'), 2)).toEqual([200, 429]);
    });
  });

  it('same-named classes on one controller path, mounted by RouterModule under other paths, count apart', async () => {
    const router = RouterModule.register([
      { path: 'v1', module: V1Module },
      { path: 'v2', module: V2Module },
    ]);
    await withApp({ controllers: [], imports: [V1Module, V2Module, router] }, async (app) => {
      expect(await statusesOf(() => app.http.get('/v1/users'), 2)).toEqual([200, 429]);
      expect(await statusesOf(() => app.http.get('/v2/users'), 2)).toEqual([200, 429]);
    });
  });

  it('a changed limit keeps the counter', async () => {
    const keyPrefix = uniquePrefix('identity');
    await withApp({ controllers: [usersController('users', 2)], options: { keyPrefix } }, async (before) => {
      expect(await statusesOf(() => before.http.get('/users'), 2)).toEqual([200, 200]);
    });
    await withApp({ controllers: [usersController('users', 3)], options: { keyPrefix } }, async (after) => {
      expect(await statusesOf(() => after.http.get('/users'), 2)).toEqual([200, 429]);
    });
  });

  it('two unnamed limits of one algorithm and window on one route are refused at start-up, naming the route', async () => {
    @Controller('twice')
    class TwiceController {
      @Get()
      @RateLimit({ limit: 5, windowMs: 1000 })
      @RateLimit({ limit: 10, windowMs: 1000 })
      list() {
        return 'ok';
      }
    }
    const error = await startupError(redis, TwiceController);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/TwiceController\.list: two limits share the counter of GET \/twice/);
  });

  it('two unnamed limits differing in algorithm or window start', async () => {
    @Controller('stacked')
    class StackedController {
      @Get()
      @RateLimit({ limit: 5, windowMs: 1000 })
      @RateLimit({ limit: 5, windowMs: 1000, algorithm: 'fixed-window' })
      @RateLimit({ limit: 50, windowMs: 60_000 })
      list() {
        return 'ok';
      }
    }
    expect(await startupError(redis, StackedController)).toBeUndefined();
  });
});
