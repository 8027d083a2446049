import 'reflect-metadata';
import { Controller, Get } from '@nestjs/common';
import { RateLimit, SkipRateLimit } from '../../lib/index.js';
import { controllerApp, statusesOf, type ControllerApp } from '../harness/controller-app.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { TestRedis } from '../harness/redis-server.js';

// How the guard reads declarations: shared names, class vs handler, stacking, resolver mistakes.
const header = (id: string) => () => id;

@Controller('login')
class LoginController {
  @Get('password')
  @RateLimit({ limit: 2, windowMs: 60_000, name: 'login' })
  password() {
    return 'ok';
  }

  @Get('otp')
  @RateLimit({ limit: 2, windowMs: 60_000, name: 'login' })
  otp() {
    return 'ok';
  }
}

@Controller('reports')
@RateLimit({ limit: 100, windowMs: 60_000 })
@RateLimit({ limit: 4, windowMs: 60_000, name: 'daily' })
class ReportsController {
  @Get('inherited')
  inherited() {
    return 'ok';
  }

  // replaces the unnamed class limit; the named 'daily' one still stacks
  @Get('tight')
  @RateLimit({ limit: 1, windowMs: 60_000 })
  tight() {
    return 'ok';
  }

  // replaces 'daily' only
  @Get('own-daily')
  @RateLimit({ limit: 10, windowMs: 60_000, name: 'daily' })
  ownDaily() {
    return 'ok';
  }

  @Get('free')
  @SkipRateLimit()
  free() {
    return 'ok';
  }
}

@Controller('mistakes')
class MistakesController {
  @Get('empty-key')
  @RateLimit({ limit: 5, windowMs: 1000, key: header('') })
  emptyKey() {
    return 'ok';
  }

  @Get('bad-cost')
  @RateLimit({ limit: 5, windowMs: 1000, cost: () => 0 })
  badCost() {
    return 'ok';
  }

  @Get('open')
  @RateLimit({ limit: 5, windowMs: 1000, failMode: 'open' })
  open() {
    return 'ok';
  }
}

describe('guard rules', () => {
  let redis: TestRedis;
  let app: ControllerApp;
  const get = (path: string) => app.http.get(path);
  const statuses = (path: string, n: number) => statusesOf(() => get(path), n);

  beforeAll(async () => {
    redis = await TestRedis.start({ own: true }); // one test stops it
  });
  afterAll(() => redis.stop());
  beforeEach(async () => {
    app = await controllerApp(redis, {
      controllers: [LoginController, ReportsController, MistakesController],
      options: { keyPrefix: uniquePrefix('guard') },
    });
  });
  afterEach(() => app.close());

  it('limits sharing a name share one counter across routes', async () => {
    expect(await statuses('/login/password', 1)).toEqual([200]);
    expect(await statuses('/login/otp', 2)).toEqual([200, 429]);
    expect(await statuses('/login/password', 1)).toEqual([429]);
  });

  it('class limits apply to every handler', async () => {
    expect(await statuses('/reports/inherited', 5)).toEqual([200, 200, 200, 200, 429]);
    const last = await get('/reports/inherited');
    expect(last.headers['x-ratelimit-limit']).toBe('4');
  });

  it('a handler limit replaces the class limit of the same name (unnamed for unnamed); others stack', async () => {
    expect(await statuses('/reports/tight', 2)).toEqual([200, 429]);
    // own-daily: 10 replaces 4, and the unnamed 100 still applies
    expect(await statuses('/reports/own-daily', 6)).toEqual([200, 200, 200, 200, 200, 200]);
    expect((await get('/reports/own-daily')).headers['x-ratelimit-limit']).toBe('10');
  });

  it('@SkipRateLimit exempts a handler of a limited controller', async () => {
    const res = await get('/reports/free');
    expect(res.status).toBe(200);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('a key resolver that yields nothing and a cost that is not a positive integer are 500s', async () => {
    expect((await get('/mistakes/empty-key')).status).toBe(500);
    expect((await get('/mistakes/bad-cost')).status).toBe(500);
  });

  it("a decorator's failMode overrides the module's when Redis is down", async () => {
    await redis.stop();
    try {
      expect((await get('/mistakes/open')).status).toBe(200);
      expect((await get('/reports/inherited')).status).toBe(503);
    } finally {
      await redis.resume();
    }
  });
});
