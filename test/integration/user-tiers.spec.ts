import 'reflect-metadata';
import { BadRequestException, Controller, Get, type ExecutionContext } from '@nestjs/common';
import { RateLimit } from '../../lib/index.js';
import { startupError, statusesOf, type ControllerApp } from '../harness/controller-app.js';
import { withLoggedApp, type ErrorLog } from '../harness/logged-app.js';
import { TestRedis } from '../harness/redis-server.js';

// `limit` and `windowMs` as functions of the request (user tiers). A counter is its name (or
// route), key, algorithm and windowMs: a user whose limit changes keeps counting on one counter,
// one whose window changes starts another. A function that throws or resolves to something that
// is not a positive integer is handled as a `cost` function's: an HttpException answers as it
// is, anything else is a 500 logged at most once a minute per route.
const headers = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers;
const user = (ctx: ExecutionContext) => headers(ctx)['x-user'] ?? 'anonymous';
const isPro = (ctx: ExecutionContext) => headers(ctx)['x-plan'] === 'pro';
/** What the x-value header says, as a number when it reads as one. */
const value = (ctx: ExecutionContext): unknown => {
  const raw = headers(ctx)['x-value'];
  if (raw === 'throw') throw new Error('tier lookup failed');
  if (raw === 'bad-request') throw new BadRequestException('unknown plan');
  return raw !== undefined && /^-?[\d.e]+$|^NaN$/.test(raw) ? Number(raw) : raw;
};

@Controller('tiers')
class TiersController {
  // free 1, pro 3 per minute; async, as a plan looked up elsewhere would be
  @Get('limit')
  @RateLimit({ limit: async (ctx) => (isPro(ctx) ? 3 : 1), windowMs: 60_000, key: user })
  byLimit() {
    return 'ok';
  }

  // 1 per minute, or 1 per 30 minutes for pro: another window, another counter
  @Get('window')
  @RateLimit({ limit: 1, windowMs: (ctx) => (isPro(ctx) ? 1_800_000 : 60_000), key: user })
  byWindow() {
    return 'ok';
  }

  @Get('value')
  @RateLimit({ limit: value as () => number, windowMs: 60_000, key: user })
  byValue() {
    return 'ok';
  }

  @Get('window-value')
  @RateLimit({ limit: 5, windowMs: value as () => number, key: user })
  byWindowValue() {
    return 'ok';
  }

  // the cost is checked against the limit the request resolved
  @Get('cost')
  @RateLimit({ limit: (ctx) => (isPro(ctx) ? 3 : 1), windowMs: 60_000, cost: 2, key: user })
  costly() {
    return 'ok';
  }

  // a token bucket counts in 1/windowMs-token units: limit × windowMs must stay below 2^53
  @Get('bucket')
  @RateLimit({ limit: (ctx) => (isPro(ctx) ? 2 ** 40 : 10), windowMs: 2 ** 20, algorithm: 'token-bucket', key: user })
  bucket() {
    return 'ok';
  }

  // starts: the second window is known per request only; a request whose window lands on the
  // first limit's counter is refused then
  @Get('burst')
  @RateLimit({ limit: 10, windowMs: 1000, key: user })
  @RateLimit({ limit: 100, windowMs: (ctx) => (isPro(ctx) ? 1000 : 3_600_000), key: user })
  burst() {
    return 'ok';
  }
}

@Controller('tier-headers')
class TierHeadersController {
  @Get()
  @RateLimit({ limit: (ctx) => (isPro(ctx) ? 3 : 1), windowMs: 60_000, key: user })
  @RateLimit({ limit: 3, windowMs: 60_000, algorithm: 'fixed-window', key: user })
  list() {
    return 'ok';
  }
}

describe('user tiers: limit and windowMs as functions of the request', () => {
  const context = withLoggedApp({ controllers: [TiersController, TierHeadersController], options: { headers: 'both' } });
  let app: ControllerApp;
  let log: ErrorLog;
  beforeEach(() => {
    ({ app, log } = context);
  });

  const get = (path: string, who: string, plan = 'free', extra: Record<string, string> = {}) =>
    app.http.get(path).set({ 'x-user': who, 'x-plan': plan, ...extra });

  it('each tier gets its own limit, and the headers say it', async () => {
    expect(await statusesOf(() => get('/tiers/limit', 'ann'), 2)).toEqual([200, 429]);
    expect(await statusesOf(() => get('/tiers/limit', 'bob', 'pro'), 4)).toEqual([200, 200, 200, 429]);
    const pro = await get('/tiers/limit', 'cid', 'pro');
    expect(pro.headers).toMatchObject({ 'x-ratelimit-limit': '3', 'x-ratelimit-remaining': '2', 'ratelimit-policy': '"3-per-60000ms";q=3;w=60' });
    const free = await get('/tiers/limit', 'dee');
    expect(free.headers).toMatchObject({ 'x-ratelimit-limit': '1', 'x-ratelimit-remaining': '0', 'ratelimit-policy': '"1-per-60000ms";q=1;w=60' });
    expect(log.errors).toEqual([]);
  });

  it('a user whose limit changes keeps the counter', async () => {
    expect(await statusesOf(() => get('/tiers/limit', 'eve'), 2)).toEqual([200, 429]);
    // upgraded: the 1 already counted stays, 2 more fit in the pro limit of 3
    expect(await statusesOf(() => get('/tiers/limit', 'eve', 'pro'), 3)).toEqual([200, 200, 429]);
  });

  it('a user whose window changes counts on another counter', async () => {
    expect(await statusesOf(() => get('/tiers/window', 'fay'), 2)).toEqual([200, 429]);
    const pro = await get('/tiers/window', 'fay', 'pro');
    expect(pro.status).toBe(200);
    expect(pro.headers['ratelimit-policy']).toBe('"1-per-1800000ms";q=1;w=1800');
    expect((await get('/tiers/window', 'fay', 'pro')).status).toBe(429);
    // the free window's counter is still full
    expect((await get('/tiers/window', 'fay')).status).toBe(429);
  });

  it.each([
    ['0', /^TiersController\.byValue: @RateLimit\(#1\)\.limit resolved to 0; it must be a positive integer$/],
    ['1.5', /^TiersController\.byValue: @RateLimit\(#1\)\.limit resolved to 1\.5; it must be a positive integer$/],
    ['NaN', /^TiersController\.byValue: @RateLimit\(#1\)\.limit resolved to NaN; it must be a positive integer$/],
    ['1e300', /^TiersController\.byValue: @RateLimit\(#1\)\.limit resolved to 1e\+300; it must be a positive integer$/],
    ['five', /^TiersController\.byValue: @RateLimit\(#1\)\.limit resolved to "five"; it must be a positive integer$/],
    ['throw', /^TiersController\.byValue: @RateLimit\(#1\)\.limit threw Error: tier lookup failed/],
  ])('a limit of %s is a 500, logged once per route', async (given, line) => {
    expect(await statusesOf(() => get('/tiers/value', 'gil', 'free', { 'x-value': given }), 3)).toEqual([500, 500, 500]);
    expect(log.errors).toEqual([expect.stringMatching(line)]);
  });

  it('a windowMs that resolves badly is a 500 naming windowMs', async () => {
    expect(await statusesOf(() => get('/tiers/window-value', 'hal', 'free', { 'x-value': '-1' }), 2)).toEqual([500, 500]);
    expect(log.errors).toEqual([
      expect.stringMatching(/^TiersController\.byWindowValue: @RateLimit\(#1\)\.windowMs resolved to -1; it must be a positive integer$/),
    ]);
    expect((await get('/tiers/window-value', 'hal', 'free', { 'x-value': '60000' })).status).toBe(200);
  });

  it('an HttpException from a limit function answers as itself, unlogged', async () => {
    const response = await get('/tiers/value', 'ivy', 'free', { 'x-value': 'bad-request' });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ statusCode: 400, message: 'unknown plan' });
    expect(log.errors).toEqual([]);
  });

  it('a cost above the limit the request resolved is a 500', async () => {
    expect((await get('/tiers/cost', 'jan', 'pro')).status).toBe(200);
    expect((await get('/tiers/cost', 'jan')).status).toBe(500);
    expect(log.errors).toEqual([expect.stringMatching(/^TiersController\.costly: cost resolved to 2; it must be a positive integer <= 1$/)]);
  });

  it('a token bucket whose resolved limit × windowMs is above 2^53 is a 500', async () => {
    expect((await get('/tiers/bucket', 'kim')).status).toBe(200);
    expect((await get('/tiers/bucket', 'kim', 'pro')).status).toBe(500);
    expect(log.errors).toEqual([
      expect.stringMatching(/^TiersController\.bucket: @RateLimit\(#1\): limit × windowMs resolved to 1099511627776 × 1048576, above 2\^53/),
    ]);
  });

  it("a window that lands on another limit's counter is refused when it does, naming both", async () => {
    expect(await statusesOf(() => get('/tiers/burst', 'lou'), 2)).toEqual([200, 200]);
    expect(await statusesOf(() => get('/tiers/burst', 'lou', 'pro'), 2)).toEqual([500, 500]);
    expect(log.errors).toEqual([
      expect.stringMatching(
        /^TiersController\.burst: @RateLimit\(#2\)\.windowMs resolved to 1000: two limits share the counter of GET \/tiers\/burst .*\(sliding-window, windowMs 1000\)/,
      ),
    ]);
  });

  it('policy names are the resolved numbers, kept apart on a route', async () => {
    const free = await get('/tier-headers', 'max');
    expect(free.headers['ratelimit-policy']).toBe('"1-per-60000ms";q=1;w=60, "3-per-60000ms";q=3;w=60');
    // pro resolves to the numbers of the fixed-window limit: the algorithms tell them apart
    const pro = await get('/tier-headers', 'ned', 'pro');
    expect(pro.headers['ratelimit-policy']).toBe('"3-per-60000ms-sliding-window";q=3;w=60, "3-per-60000ms-fixed-window";q=3;w=60');
    expect(pro.headers['ratelimit']).toBe('"3-per-60000ms-sliding-window";r=2;t=60');
  });
});

describe('user tiers at start-up', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  const tier = () => 5;

  it.each([
    [
      'a string limit',
      { limit: '5', windowMs: tier },
      TypeError,
      /TierController\.handler: @RateLimit\(#1\)\.limit must be a positive integer or a function \(ctx\) => number, got "5"/,
    ],
    [
      'a null window',
      { limit: tier, windowMs: null },
      TypeError,
      /TierController\.handler: @RateLimit\(#1\)\.windowMs must be a positive integer or a function/,
    ],
    [
      'a zero window beside a limit function',
      { limit: tier, windowMs: 0 },
      RangeError,
      /TierController\.handler: @RateLimit\(#1\)\.windowMs must be a positive integer, got 0/,
    ],
    [
      'a fractional limit beside a window function',
      { limit: 2.5, windowMs: tier },
      RangeError,
      /TierController\.handler: @RateLimit\(#1\)\.limit must be a positive integer, got 2\.5/,
    ],
    [
      'an unknown algorithm',
      { limit: tier, windowMs: 1000, algorithm: 'leaky' },
      TypeError,
      /TierController\.handler: @RateLimit\(#1\)\.algorithm must be one of/,
    ],
    ['a cost of 0', { limit: tier, windowMs: 1000, cost: 0 }, RangeError, /TierController\.handler: @RateLimit\(#1\)\.cost must be a positive integer, got 0/],
  ])('%s fails app.init() naming the option', async (_case, options, kind, message) => {
    @Controller()
    class TierController {
      @Get()
      @RateLimit(options as never)
      handler() {
        return 'ok';
      }
    }
    const error = await startupError(redis, TierController);
    expect(error).toBeInstanceOf(kind);
    expect((error as Error).message).toMatch(message);
  });

  it('two unnamed limits with one fixed window still share a counter when one limit is a function', async () => {
    @Controller('twice')
    class TwiceController {
      @Get()
      @RateLimit({ limit: tier, windowMs: 1000 })
      @RateLimit({ limit: 10, windowMs: 1000 })
      list() {
        return 'ok';
      }
    }
    const error = await startupError(redis, TwiceController);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/TwiceController\.list: two limits share the counter of GET \/twice/);
  });
});

@Controller('plain')
class PlainController {
  @Get()
  get() {
    return 'ok';
  }
}

/** free 1, pro 3; or what x-value says */
const tierOrValue = (ctx: ExecutionContext) => (headers(ctx)['x-value'] === undefined ? (isPro(ctx) ? 3 : 1) : (value(ctx) as number));

describe('user tiers in defaultLimits', () => {
  const context = withLoggedApp({
    controllers: [PlainController],
    options: { defaultLimits: [{ limit: tierOrValue, windowMs: 60_000, key: user }] },
  });
  const get = (who: string, plan = 'free', extra: Record<string, string> = {}) =>
    context.app.http.get('/plain').set({ 'x-user': who, 'x-plan': plan, ...extra });

  it('apply per tier to a route without decorators', async () => {
    expect(await statusesOf(() => get('ann'), 2)).toEqual([200, 429]);
    expect(await statusesOf(() => get('bob', 'pro'), 4)).toEqual([200, 200, 200, 429]);
  });

  it('a bad result is a 500 naming the default', async () => {
    expect(await statusesOf(() => get('cid', 'free', { 'x-value': '0' }), 2)).toEqual([500, 500]);
    expect(context.log.errors).toEqual([
      expect.stringMatching(/^PlainController\.get: defaultLimits\[0\]\.limit resolved to 0; it must be a positive integer$/),
    ]);
  });

  it('a limit that is neither a number nor a function fails app.init() naming the default', async () => {
    const error = await startupError(context.redis, PlainController, { defaultLimits: [{ limit: '5' as never, windowMs: 1000 }] });
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/RedisLimitModule: defaultLimits\[0\]\.limit must be a positive integer or a function/);
  });
});
