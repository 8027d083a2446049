import 'reflect-metadata';
import type { DynamicModule, INestApplication, LoggerService, Provider, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RedisLimitModule, type RedisLimitModuleOptions } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from './limiter-app.js';
import type { TestRedis } from './redis-server.js';

export interface ControllerAppSetup {
  controllers: Type[];
  /** Guards and the like the controllers name by class, so Nest can construct them. */
  providers?: Provider[];
  /** Passed to RedisLimitModule.forRoot after `redis`; without keyPrefix, a unique one. */
  options?: RedisLimitModuleOptions;
  /** More modules, e.g. feature modules mounted by RouterModule. */
  imports?: (Type | DynamicModule)[];
  /** Receives Nest's log lines (to count them); default: no logging. */
  logger?: LoggerService;
}

/**
 * A Nest application with RedisLimitModule against `redis` and the given controllers, not yet
 * initialised: decorator options are checked by app.init(), which callers handle differently.
 * The logger is off (unless `logger` is given) so expected 500s and start-up failures do not
 * flood the test output.
 */
async function createApp(redis: TestRedis, setup: ControllerAppSetup): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLimitModule.forRoot({ redis: redis.connection, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, ...setup.options }), ...(setup.imports ?? [])],
    controllers: setup.controllers,
    providers: setup.providers ?? [],
  }).compile();
  return moduleRef.createNestApplication({ logger: setup.logger ?? false });
}

/**
 * A started application serving the given controllers over HTTP, for tests that send requests
 * through the guards. `http` makes each request on a fresh ephemeral port (supertest's way).
 */
export async function controllerApp(redis: TestRedis, setup: ControllerAppSetup) {
  const keyPrefix = setup.options?.keyPrefix ?? uniquePrefix();
  const app = await createApp(redis, { ...setup, options: { ...setup.options, keyPrefix } });
  await app.init();
  return {
    app,
    http: request(app.getHttpServer()),
    close: () => app.close(),
  };
}

export type ControllerApp = Awaited<ReturnType<typeof controllerApp>>;

/**
 * What app.init() threw for an application serving `controller`, or undefined if it started.
 * The app is closed either way: a failed start still opened the Redis connection.
 */
export async function startupError(redis: TestRedis, controller: Type, options: RedisLimitModuleOptions = {}, providers: Provider[] = []): Promise<unknown> {
  const app = await createApp(redis, { controllers: [controller], options, providers });
  try {
    await app.init();
    return undefined;
  } catch (error) {
    return error;
  } finally {
    await app.close();
  }
}

/**
 * The status codes of `n` requests sent one after another, each after the previous answered,
 * so each sees the counters the earlier ones left.
 */
export async function statusesOf(send: () => PromiseLike<{ status: number }>, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await send()).status);
  return out;
}
