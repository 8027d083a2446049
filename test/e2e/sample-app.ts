import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AppModule, type SampleAppOptions } from '../../sample-app/src/app.module.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { TestRedis, type StartOptions } from '../harness/redis-server.js';

export type Platform = 'express' | 'fastify';
/** For `describe.each(PLATFORMS)`: every e2e topic runs on both HTTP adapters. */
export const PLATFORMS: Platform[] = ['express', 'fastify'];

export interface SampleApp {
  app: INestApplication;
  http: ReturnType<typeof request>;
  close(): Promise<void>;
}

/** Boots the sample app on `platform` with a key prefix of its own, so no counter leaks between tests. */
export async function bootSample(platform: Platform, options: SampleAppOptions): Promise<SampleApp> {
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule.register({ keyPrefix: uniquePrefix('e2e'), ...options })],
  }).compile();
  const app = moduleRef.createNestApplication(platform === 'express' ? new ExpressAdapter() : new FastifyAdapter());
  await app.init();
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return { app, http: request(app.getHttpServer()), close: () => app.close() };
}

/** Sends `count` requests one after another (order matters to a limiter) and returns the responses. */
export async function inSequence(count: number, send: (i: number) => request.Test): Promise<request.Response[]> {
  const responses: request.Response[] = [];
  for (let i = 0; i < count; i++) responses.push(await send(i));
  return responses;
}

/**
 * For a describe block: one redis-server for the block, and a fresh sample app (own key prefix)
 * for each test. Read `sample` inside tests.
 */
export function withSampleApp(
  platform: Platform,
  options: Omit<SampleAppOptions, 'redis'> = {},
  server: StartOptions = {},
) {
  const context = {} as { redis: TestRedis; sample: SampleApp };
  beforeAll(async () => {
    context.redis = await TestRedis.start(server);
  });
  afterAll(() => context.redis.stop());
  beforeEach(async () => {
    context.sample = await bootSample(platform, { redis: context.redis.connection, ...options });
  });
  afterEach(() => context.sample.close());
  return context;
}
