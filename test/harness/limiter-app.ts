import 'reflect-metadata';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { RateLimiterService, RedisLimitModule, type RedisLimitModuleOptions } from '../../lib/index.js';
import type { TestRedis } from './redis-server.js';

let prefixes = 0;

/** A key prefix no other test in this process uses, so tests sharing a server never collide. */
export function uniquePrefix(label = 't'): string {
  prefixes += 1;
  return `test:${label}:${process.pid}:${prefixes}:`;
}

/** A Nest testing module with RedisLimitModule against `redis`, plus a raw client to inspect keys. */
export async function limiterModule(redis: TestRedis, options: RedisLimitModuleOptions = {}) {
  const moduleRef: TestingModule = await Test.createTestingModule({
    imports: [RedisLimitModule.forRoot({ redis: redis.url, keyPrefix: uniquePrefix(), ...options })],
  }).compile();
  await moduleRef.init();
  const raw = new Redis(redis.url);
  return {
    moduleRef,
    limiter: moduleRef.get(RateLimiterService),
    raw,
    async close() {
      raw.disconnect();
      await moduleRef.close();
    },
  };
}
