import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { Controller, Get, Post } from '@nestjs/common';
import { Funnel, MaxPending, RateLimit, RedisLimitEvents, type RedisLimitEvent } from '../../lib/index.js';
import { controllerApp, startupError, statusesOf, type ControllerApp } from '../harness/controller-app.js';
import { TEST_COMMAND_TIMEOUT_MS } from '../harness/limiter-app.js';
import { ErrorLog } from '../harness/logged-app.js';
import { RedisNode } from '../harness/redis-server.js';

// failMode 'local' on a stopped server: each route grants at most ceil(limit / localDivisor) per
// window from this process's memory, refuses like Redis after that (429, Retry-After, headers),
// and hands back to Redis's counters once the server answers again.

const LIMIT = 5;
const DIVISOR = 2;
const LOCAL = Math.ceil(LIMIT / DIVISOR); // 3
// long windows: no window ends or refills while a test runs (a fixed window of a year, aligned to
// the epoch, ends at a new year only)
const YEAR_MS = 365 * 24 * 3_600_000;
const HOUR_MS = 3_600_000;

@Controller('local')
class LocalController {
  @Get('fixed')
  @RateLimit({ limit: LIMIT, windowMs: YEAR_MS, algorithm: 'fixed-window', failMode: 'local' })
  fixed() {
    return 'ok';
  }

  @Get('sliding')
  @RateLimit({ limit: LIMIT, windowMs: HOUR_MS, failMode: 'local' })
  sliding() {
    return 'ok';
  }

  @Get('bucket')
  @RateLimit({ limit: LIMIT, windowMs: HOUR_MS, algorithm: 'token-bucket', failMode: 'local' })
  bucket() {
    return 'ok';
  }

  @Get('funnel')
  @Funnel({ capacity: LIMIT, leakingDurationMs: HOUR_MS, failMode: 'local' })
  funnel() {
    return 'ok';
  }

  // the strictest mode decides a stack: closed over local, local over open
  @Get('closed-wins')
  @RateLimit({ limit: LIMIT, windowMs: HOUR_MS, failMode: 'local' })
  @RateLimit({ limit: 100, windowMs: HOUR_MS, name: 'closed-wins', failMode: 'closed' })
  closedWins() {
    return 'ok';
  }

  @Get('local-wins')
  @RateLimit({ limit: LIMIT, windowMs: HOUR_MS, failMode: 'local' })
  @RateLimit({ limit: 1, windowMs: HOUR_MS, name: 'local-wins', failMode: 'open' })
  localWins() {
    return 'ok';
  }

  // the module's failMode: 'local' in these apps
  @Get('default')
  @RateLimit({ limit: LIMIT, windowMs: HOUR_MS })
  byDefault() {
    return 'ok';
  }

  // a shadow never refuses, in memory as in Redis
  @Get('shadow')
  @RateLimit({ limit: 1, windowMs: HOUR_MS, shadow: true })
  shadow() {
    return 'ok';
  }

  // a lockout lives in Redis: a local refusal starts none (and does not wait on the dead server)
  @Get('lockout')
  @RateLimit({ limit: 1, windowMs: HOUR_MS, blockMs: HOUR_MS })
  lockout() {
    return 'ok';
  }

  // a module-wide 'local' is 'closed' for a pending cap
  @Post('pending')
  @MaxPending(3, { name: 'local-pending', ttlMs: 60_000 })
  pending() {
    return 'ok';
  }
}

describe("failMode 'local' while Redis is down", () => {
  let redis: RedisNode;
  let ctx: ControllerApp;
  let events: RedisLimitEvent[];
  const log = new ErrorLog();
  beforeAll(async () => {
    redis = await RedisNode.start({ own: true }); // stopped and restarted by the tests
    ctx = await controllerApp(redis, {
      controllers: [LocalController],
      logger: log,
      // a generous deadline: while the server is stopped every command is refused at once (the
      // client queues nothing), and after its restart a decision or hand-over charge that outlived
      // a short one is charged in Redis all the same (and the charge sent again): a permit more
      // than the test counts
      options: { failMode: 'local', localDivisor: DIVISOR, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS },
    });
    events = [];
    ctx.app.get(RedisLimitEvents).on((event) => events.push(event));
    await redis.stop();
  });
  afterAll(async () => {
    await ctx.close();
    await redis.stop();
  });
  const get = (path: string) => ctx.http.get(`/local/${path}`);

  it.each(['fixed', 'sliding', 'bucket', 'funnel', 'default'])('/%s grants ceil(limit / localDivisor) in a window, then answers 429', async (path) => {
    expect(await statusesOf(() => get(path), LOCAL + 3)).toEqual([...Array(LOCAL).fill(200), 429, 429, 429]);
    const refused = await get(path);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ statusCode: 429, message: expect.any(String), retryAfterMs: expect.any(Number) });
    expect(refused.body.retryAfterMs).toBeGreaterThan(0);
    expect(Number(refused.headers['retry-after'])).toBe(Math.max(1, Math.ceil(refused.body.retryAfterMs / 1000)));
    expect(refused.headers['x-ratelimit-limit']).toBe(String(LOCAL));
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('a stack with a closed limit answers 503; a local one over an open one limits locally', async () => {
    expect((await get('closed-wins')).status).toBe(503);
    // the open limit of 1 counts too, divided like any other (1 / 2 rounds up to 1)
    expect(await statusesOf(() => get('local-wins'), 3)).toEqual([200, 429, 429]);
  });

  it('shadow limits never refuse while decided locally; a local refusal starts no lockout', async () => {
    expect(await statusesOf(() => get('shadow'), 4)).toEqual([200, 200, 200, 200]);
    const shadowRefused = events.filter((event) => event.type === 'redis-limit.shadow-refused');
    expect(shadowRefused.length).toBe(3);
    expect(await statusesOf(() => get('lockout'), 3)).toEqual([200, 429, 429]);
    expect(log.errors.filter((line) => line.includes('could not block'))).toEqual([]);
  });

  it("@MaxPending takes a module-wide 'local' as 'closed'", async () => {
    expect((await ctx.http.post('/local/pending')).status).toBe(503);
  });

  it('counts and announces each local decision', () => {
    const counters = ctx.app.get(RedisLimitEvents).counters();
    expect(counters.failMode.local).toBe(counters.localDecisions.allowed + counters.localDecisions.refused);
    expect(counters.localDecisions.allowed).toBeGreaterThanOrEqual(5 * LOCAL);
    expect(counters.localDecisions.refused).toBeGreaterThanOrEqual(5 * 4);
    expect(ctx.app.get(RedisLimitEvents).prometheus('x')).toContain(`x_fail_mode_total{fail_mode="local"} ${counters.failMode.local}\n`);
    const local = events.filter((e) => e.type === 'redis-limit.local-decision');
    expect(local).toHaveLength(counters.failMode.local);
    expect(local[0]).toEqual({
      type: 'redis-limit.local-decision',
      route: expect.stringContaining('LocalController.fixed'),
      allowed: true,
      retryAfterMs: 0,
      limits: [{ key: expect.any(String), scope: expect.any(String), kind: 'fixed-window', limit: LOCAL, allowed: true, remaining: LOCAL - 1 }],
    });
    expect(events.filter((e) => e.type === 'redis-limit.fail-mode' && e.failMode === 'local')).toHaveLength(counters.failMode.local);
    expect(events.filter((e) => e.type === 'redis-limit.redis-down')).toHaveLength(1);
  });

  it("Redis's counters take over once it answers again, charged with what was granted locally", async () => {
    await redis.resume();
    // ioredis reconnects with backoff; the first request Redis decides says the whole limit
    let first: Awaited<ReturnType<typeof get>> | undefined;
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100)) {
      const response = await get('sliding');
      if (response.headers['x-ratelimit-limit'] === String(LIMIT)) {
        first = response;
        break;
      }
      expect(response.status).toBe(429); // still local, and this key is spent
    }
    expect(first?.status).toBe(200);
    // the restarted server lost its counters, but this instance charged them with its local
    // grants as it reconnected (test/integration/local-hand-over.spec.ts): Redis grants the rest
    const left = Number(first!.headers['x-ratelimit-remaining']);
    expect(left).toBe(LIMIT - LOCAL - 1);
    expect(await statusesOf(() => get('sliding'), left + 1)).toEqual([...Array(left).fill(200), 429]);
    expect(events.filter((e) => e.type === 'redis-limit.redis-up')).toHaveLength(1);
  });
});

describe("failMode 'local': options", () => {
  let redis: RedisNode;
  beforeAll(async () => {
    redis = await RedisNode.start();
  });
  afterAll(() => redis.stop());

  @Controller('c')
  class PlainController {
    @Get()
    @RateLimit({ limit: 1, windowMs: 1000 })
    get() {
      return 'ok';
    }
  }

  it.each([
    [0, RangeError],
    [-2, RangeError],
    [1.5, RangeError],
    ['2', TypeError],
  ])('localDivisor %p fails naming it', async (localDivisor, kind) => {
    const error = await startupError(redis, PlainController, { localDivisor: localDivisor as number }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(kind);
    expect((error as Error).message).toMatch(/^RedisLimitModule: localDivisor must be a positive integer, got /);
  });

  it("failMode 'locale' fails, as module option and decorator option", async () => {
    const error = await startupError(redis, PlainController, { failMode: 'locale' as never }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/^RedisLimitModule: failMode must be 'closed' or 'open', got locale \(or 'local'/);

    @Controller('d')
    class TypoController {
      @Get()
      @RateLimit({ limit: 1, windowMs: 1000, failMode: 'locale' as never })
      get() {
        return 'ok';
      }
    }
    const typo = await startupError(redis, TypoController);
    expect(typo).toBeInstanceOf(TypeError);
    expect((typo as Error).message).toMatch(/TypoController\.get: @RateLimit\(#1\)\.failMode must be 'closed' or 'open', got locale/);
  });

  it("an explicit @MaxPending failMode 'local' fails app.init(), naming the handler and why", async () => {
    @Controller('orders')
    class OrdersController {
      @Post()
      @MaxPending(3, { name: 'orders', ttlMs: 60_000, failMode: 'local' })
      create() {
        return 'ok';
      }
    }
    const error = await startupError(redis, OrdersController);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(
      /OrdersController\.create: @MaxPending\.failMode 'local' cannot take effect: .*one process's memory cannot keep it/,
    );
  });
});
