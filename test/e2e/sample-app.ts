import 'reflect-metadata';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { jest } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AppModule, setUpSampleApp, type Platform, type SampleAppOptions } from '../../sample-app/src/app.module.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from '../harness/limiter-app.js';
import { TestRedis, type StartOptions } from '../harness/redis-server.js';

// On Fastify the sample app serves GraphQL with mercurius, which requires @fastify/static, which
// requires content-disposition 3, an ES module: Node loads that (require(esm)), Jest's module
// loader cannot. It only serves GraphiQL's files, which no test asks for: the CommonJS
// content-disposition 2 Express uses stands in. (The app imports the driver when it is built.)
const require = createRequire(import.meta.url);
jest.doMock(require.resolve('content-disposition', { paths: [require.resolve('@fastify/static')] }), () => require('content-disposition'));

export type { Platform };
/** For `describe.each(PLATFORMS)`: every e2e topic runs on both HTTP adapters. */
export const PLATFORMS: Platform[] = ['express', 'fastify'];

export interface SampleApp {
  app: INestApplication;
  http: ReturnType<typeof request>;
  /** Starts listening on an ephemeral loopback port (for WebSocket clients), once, and returns it. */
  listen(): Promise<number>;
  close(): Promise<void>;
}

/** Boots the sample app on `platform` with a key prefix of its own, so no counter leaks between tests. */
export async function bootSample(platform: Platform, options: SampleAppOptions): Promise<SampleApp> {
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule.register({ keyPrefix: uniquePrefix('e2e'), platform, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, ...options })],
  }).compile();
  const app = setUpSampleApp(moduleRef.createNestApplication(platform === 'express' ? new ExpressAdapter() : new FastifyAdapter()));
  await app.init();
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  let listening: Promise<number> | undefined;
  return {
    app,
    http: request(app.getHttpServer()),
    listen: () => (listening ??= app.listen(0, '127.0.0.1').then(() => (app.getHttpServer().address() as AddressInfo).port)),
    close: () => app.close(),
  };
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
export function withSampleApp(platform: Platform, options: Omit<SampleAppOptions, 'redis'> = {}, server: StartOptions = {}) {
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
