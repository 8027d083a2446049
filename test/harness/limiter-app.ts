import 'reflect-metadata';
import { Test, type TestingModule } from '@nestjs/testing';
import { RateLimiterService, RedisLimitModule, type RedisLimitModuleOptions } from '../../lib/index.js';
import { TestRedis as TestRedisClass, type StartOptions, type TestRedis } from './redis-server.js';

let prefixes = 0;

/** A key prefix no other test in this process uses, so tests sharing a server never collide. */
export function uniquePrefix(label = 't'): string {
  prefixes += 1;
  return `test:${label}:${process.pid}:${prefixes}:`;
}

/**
 * The Redis deadline of every module the harness starts unless a test sets its own: the library's
 * default (500 ms) is meant for production requests, and a loaded CI machine misses it in tests
 * that are not about deadlines (issue 28). Tests of deadlines and fail modes pass theirs.
 */
export const TEST_COMMAND_TIMEOUT_MS = 5_000;

/** Whether `key` is a limit's own counter, not the grant ids' secret (once per prefix that charged)
 * or the list of windows a named limit used (once per name). */
export const isLimitKey = (key: string): boolean => !key.endsWith('grant-secret:{rate-limit}') && !/counter-kinds:\{[^}]*\}$/.test(key);

/** A Nest testing module with RedisLimitModule against `redis`, plus a raw client to inspect keys. */
export async function limiterModule(redis: TestRedis, options: RedisLimitModuleOptions = {}) {
  const prefix = options.keyPrefix ?? uniquePrefix();
  const moduleRef: TestingModule = await Test.createTestingModule({
    imports: [RedisLimitModule.forRoot({ redis: redis.connection, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, ...options, keyPrefix: prefix })],
  }).compile();
  await moduleRef.init();
  const raw = redis.client();
  return {
    moduleRef,
    /** Every key this module writes starts with it. */
    prefix,
    limiter: moduleRef.get(RateLimiterService),
    raw,
    /** Every key matching `pattern`, on every master of a cluster. */
    keys: (pattern: string) => redis.keys(pattern),
    async close() {
      raw.disconnect();
      await moduleRef.close();
    },
  };
}

export type LimiterApp = Awaited<ReturnType<typeof limiterModule>>;

/**
 * For a describe block: a fresh redis-server and a limiter module on it, started before its
 * tests and stopped after (`server`: how it is started). Read the fields inside tests (they are set
 * in beforeAll).
 */
export function withLimiterApp(options: RedisLimitModuleOptions = {}, server: StartOptions = {}): { redis: TestRedis; app: LimiterApp } {
  const context = {} as { redis: TestRedis; app: LimiterApp };
  beforeAll(async () => {
    context.redis = await TestRedisClass.start(server);
    context.app = await limiterModule(context.redis, options);
  });
  afterAll(async () => {
    await context.app?.close();
    await context.redis?.stop();
  });
  return context;
}
