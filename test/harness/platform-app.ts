import 'reflect-metadata';
import type { INestApplication, LoggerService, Type } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RedisLimitModule, type RedisLimitModuleOptions } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from './limiter-app.js';
import type { TestRedis } from './redis-server.js';

export type HttpPlatform = 'express' | 'fastify';

/** Keeps what Nest logs at warn and error level (message only), by level. */
export class LevelLog implements LoggerService {
  readonly lines: { level: 'warn' | 'error'; message: string }[] = [];
  error(message: unknown): void {
    this.lines.push({ level: 'error', message: String(message) });
  }
  warn(message: unknown): void {
    this.lines.push({ level: 'warn', message: String(message) });
  }
  log(): void {}
  debug(): void {}
  verbose(): void {}
  fatal(message: unknown): void {
    this.error(message);
  }
  of(level: 'warn' | 'error'): string[] {
    return this.lines.filter((line) => line.level === level).map((line) => line.message);
  }
}

/**
 * A started application on Express or Fastify serving `controllers`, with RedisLimitModule
 * against `redis` (own key prefix unless `options` has one) and a LevelLog.
 */
export async function platformApp(platform: HttpPlatform, redis: TestRedis, controllers: Type[], options: RedisLimitModuleOptions = {}) {
  const log = new LevelLog();
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLimitModule.forRoot({ redis: redis.connection, keyPrefix: uniquePrefix(platform), commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, ...options })],
    controllers,
  }).compile();
  const app: INestApplication = moduleRef.createNestApplication(platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), { logger: log });
  await app.init();
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return { app, http: request(app.getHttpServer()), log, close: () => app.close() };
}

export type PlatformApp = Awaited<ReturnType<typeof platformApp>>;
