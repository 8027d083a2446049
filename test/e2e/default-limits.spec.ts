import 'reflect-metadata';
import { Controller, Get, HttpException, Injectable, Module, Param, Post, type ExecutionContext, type INestApplication, type Provider } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimit, RateLimitGuard, RedisLimitModule, SkipRateLimit, type StackDecision } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from '../harness/limiter-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { inSequence, PLATFORMS, type Platform } from './sample-app.js';

// The throttler-style set-up over HTTP: one module line with defaultLimits, a health route
// skipped, one route tightened; skipIf; a RateLimitGuard subclass as APP_GUARD.
const header = (ctx: ExecutionContext, name: string) => ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers[name];

@Controller()
class HealthController {
  @Get('health')
  @SkipRateLimit()
  health() {
    return { status: 'ok' };
  }
}

@Controller('items')
class ItemsController {
  @Get()
  list() {
    return [];
  }

  @Get(':id')
  one(@Param('id') id: string) {
    return { id };
  }

  @Post()
  @RateLimit({ limit: 1, windowMs: 60_000 })
  create() {
    return { created: true };
  }
}

@Injectable()
class ByUserGuard extends RateLimitGuard {
  protected override getTracker(ctx: ExecutionContext): string {
    return header(ctx, 'x-user') ?? 'anon';
  }

  protected override throwTooManyRequests(_ctx: ExecutionContext, result: StackDecision): never {
    throw new HttpException({ code: 'SLOW_DOWN', waitMs: result.retryAfterMs }, 429);
  }
}

async function boot(platform: Platform, redis: TestRedis, providers: Provider[] = []) {
  @Module({
    imports: [
      RedisLimitModule.forRoot({
        redis: redis.connection,
        keyPrefix: uniquePrefix('defaults'),
        commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS,
        defaultLimits: [{ limit: 3, windowMs: 60_000 }],
        skipIf: (ctx) => header(ctx, 'x-internal') === 'yes',
      }),
    ],
    controllers: [HealthController, ItemsController],
    providers,
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app: INestApplication = moduleRef.createNestApplication(platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), {
    logger: false,
  });
  await app.init();
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return { app, http: request(app.getHttpServer()) };
}

describe.each(PLATFORMS)('defaultLimits on %s', (platform) => {
  let redis: TestRedis;
  let app: INestApplication | undefined;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());
  afterEach(() => app?.close());

  it('limit every route without a decorator, each route on its own counter', async () => {
    const booted = await boot(platform, redis);
    app = booted.app;
    const list = await inSequence(4, () => booted.http.get('/items'));
    expect(list.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(list.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['2', '1', '0', '0']);
    expect(list[3]!.body).toEqual({ statusCode: 429, message: 'Too Many Requests', retryAfterMs: expect.any(Number) });
    expect(Number(list[3]!.headers['retry-after'])).toBe(Math.ceil(list[3]!.body.retryAfterMs / 1000));
    expect((await inSequence(4, () => booted.http.get('/items/7'))).map((r) => r.status)).toEqual([200, 200, 200, 429]);
  });

  it('give way to a tighter decorator and to @SkipRateLimit', async () => {
    const booted = await boot(platform, redis);
    app = booted.app;
    const created = await inSequence(2, () => booted.http.post('/items'));
    expect(created.map((r) => [r.status, r.headers['x-ratelimit-limit']])).toEqual([
      [201, '1'],
      [429, '1'],
    ]);
    const health = await inSequence(5, () => booted.http.get('/health'));
    expect(health.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(health.filter((r) => 'x-ratelimit-limit' in r.headers)).toEqual([]);
  });

  it('skip a request skipIf exempts', async () => {
    const booted = await boot(platform, redis);
    app = booted.app;
    const internal = await inSequence(5, () => booted.http.get('/items').set('x-internal', 'yes'));
    expect(internal.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(internal.filter((r) => 'x-ratelimit-limit' in r.headers)).toEqual([]);
    expect((await inSequence(4, () => booted.http.get('/items'))).map((r) => r.status)).toEqual([200, 200, 200, 429]);
  });

  it('are decided by a RateLimitGuard subclass registered as APP_GUARD, with its tracker and refusal', async () => {
    const booted = await boot(platform, redis, [{ provide: APP_GUARD, useClass: ByUserGuard }]);
    app = booted.app;
    const alice = await inSequence(4, () => booted.http.get('/items').set('x-user', 'alice'));
    expect(alice.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(alice[3]!.body).toEqual({ code: 'SLOW_DOWN', waitMs: expect.any(Number) });
    expect(alice[3]!.headers['retry-after']).toBeDefined();
    expect((await booted.http.get('/items').set('x-user', 'bob')).status).toBe(200);
  });
});
