import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { Controller, Get, HttpCode, Injectable, Module, Post, type DynamicModule, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter, type FastifyAdapter as Fastify } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { DelayQueueService, MaxPending, OnDelayed, RateLimit, RedisLimitDashboardModule, RedisLimitModule, type DelayedMessage } from '../../lib/index.js';
import { DecisionSeries } from '../../lib/dashboard/decision-series.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import type { HttpPlatform } from '../harness/platform-app.js';
import type { TestRedis } from '../harness/redis-server.js';

export const JOBS = 'jobs';
export const ADMIN_KEY = 'browser-admin-key';

/** A message of JOBS fails while `failing` holds its id, and is remembered once it ran. */
@Injectable()
export class Jobs {
  readonly failing = new Set<string>();
  readonly ran = new Set<string>();

  @OnDelayed(JOBS, { maxAttempts: 1 })
  run(message: DelayedMessage<unknown>): void {
    if (this.failing.has(message.id)) throw new Error(`job ${message.id} failed <b>on purpose</b>`);
    this.ran.add(message.id);
  }
}

@Controller('hello')
export class HelloController {
  @Get()
  @RateLimit({ name: 'greetings', limit: 3, windowMs: 60_000 })
  hello() {
    return { hello: 'world' };
  }

  /** Rate limits first (the guard nearest the method runs first), then 7 live orders per client. */
  @Post('orders')
  @HttpCode(201)
  @MaxPending(7, { name: 'browser-orders', ttlMs: 600_000 })
  @RateLimit({ limit: 1000, windowMs: 60_000 })
  order() {
    return { ordered: true };
  }

  /** @MaxPending alone: no rate limit decides these requests. */
  @Post('carts')
  @HttpCode(201)
  @MaxPending(2, { name: 'browser-carts', ttlMs: 600_000 })
  cart() {
    return { carted: true };
  }
}

@Module({ controllers: [HelloController], providers: [Jobs] })
class HelloModule {}

/** Who may see the dashboard in these tests: whoever sends the admin key. */
export const adminOnly = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<{ headers: Record<string, unknown> }>().headers['x-admin-key'] === ADMIN_KEY;

export interface DashboardApp {
  app: INestApplication;
  /** http://127.0.0.1:port */
  origin: string;
  jobs: Jobs;
  queue: DelayQueueService;
  /** Writes the decisions counted so far to Redis now (they are written every few seconds). */
  flushDecisions(): Promise<void>;
  close(): Promise<void>;
}

/** An app with a limited route, a queue and the dashboard at /redis-limit, listening on loopback. */
export async function dashboardApp(
  platform: HttpPlatform,
  redis: TestRedis,
  {
    readOnly = false,
    keyPrefix = uniquePrefix(`dash-${platform}`),
    fastify = {},
  }: { readOnly?: boolean; keyPrefix?: string; fastify?: ConstructorParameters<typeof Fastify>[0] } = {},
): Promise<DashboardApp> {
  const dashboard: DynamicModule = RedisLimitDashboardModule.register({ canActivate: adminOnly, readOnly });
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLimitModule.forRoot({ redis: redis.connection, keyPrefix }), HelloModule, dashboard],
  }).compile();
  const app = moduleRef.createNestApplication(platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(fastify), {
    logger: false,
    // Chromium keeps idle connections open: close() must not wait for them
    forceCloseConnections: true,
  });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return {
    app,
    origin: `http://127.0.0.1:${port}`,
    jobs: app.get(Jobs),
    queue: app.get(DelayQueueService),
    flushDecisions: () => app.get(DecisionSeries).flush(),
    close: () => app.close(),
  };
}
