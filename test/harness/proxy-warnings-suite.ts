import 'reflect-metadata';
import { Controller, Get, type INestApplication } from '@nestjs/common';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimit, RedisLimitModule, type RedisLimitModuleOptions } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from './limiter-app.js';
import { LevelLog, type HttpPlatform } from './platform-app.js';
import { TestRedis } from './redis-server.js';

@Controller('proxied')
@RateLimit({ limit: 100, windowMs: 60_000 })
class ProxiedController {
  @Get()
  hit() {
    return 'ok';
  }
}

/** Express `trust proxy` / Fastify `trustProxy` (which takes no hop count); undefined: not set. */
type Trust = boolean | number | string | string[] | undefined;

const NO_TRUST = /X-Forwarded-For reached an app that trusts no proxy/;
const TRUST_ALL = /trusts every proxy/;

/**
 * The proxy set-up warnings, on one platform. They are once per process, and jest gives each spec
 * file a process of its own (module registry): one file per platform, and within it each warning
 * is expected in one test only.
 */
export function proxyWarningsSuite(platform: HttpPlatform): void {
  describe(`proxy set-up warnings on ${platform}`, () => {
    let redis: TestRedis;
    const apps: INestApplication[] = [];
    beforeAll(async () => {
      redis = await TestRedis.start();
    });
    afterAll(() => redis.stop());
    afterEach(async () => {
      await Promise.all(apps.splice(0).map((app) => app.close()));
    });

    /** An app with `trust` and a LevelLog; `send` makes a request, with X-Forwarded-For when given. */
    async function start(trust: Trust, options: RedisLimitModuleOptions = {}) {
      const log = new LevelLog();
      const moduleRef = await Test.createTestingModule({
        imports: [
          RedisLimitModule.forRoot({
            redis: redis.connection,
            keyPrefix: uniquePrefix('proxy-warnings'),
            commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS,
            ...options,
          }),
        ],
        controllers: [ProxiedController],
      }).compile();
      let app: INestApplication;
      if (platform === 'express') {
        const express = moduleRef.createNestApplication<NestExpressApplication>(new ExpressAdapter(), { logger: log });
        if (trust !== undefined) express.set('trust proxy', trust);
        app = express;
      } else {
        const trustProxy = trust as Exclude<Trust, number>;
        app = moduleRef.createNestApplication(new FastifyAdapter(trustProxy === undefined ? {} : { trustProxy }), { logger: log });
      }
      apps.push(app);
      await app.init();
      if (platform === 'fastify') await (app.getHttpAdapter().getInstance() as { ready(): Promise<unknown> }).ready();
      const http = request(app.getHttpServer());
      const send = async (forwardedFor?: string) => {
        const req = http.get('/proxied');
        expect((await (forwardedFor === undefined ? req : req.set('x-forwarded-for', forwardedFor))).status).toBe(200);
      };
      return { log, send };
    }

    it('none when the app trusts its proxies by list or hop count, has a tracker, or sees no X-Forwarded-For', async () => {
      const logs: LevelLog[] = [];
      const lists: Trust[] = ['loopback', '127.0.0.1, ::1', ['127.0.0.1', '::1']];
      for (const trust of platform === 'express' ? [...lists, 1] : lists) {
        const { log, send } = await start(trust);
        await send('203.0.113.9');
        await send('203.0.113.9, 198.51.100.4');
        logs.push(log);
      }
      const tracked = await start(undefined, { tracker: () => 'everyone' });
      await tracked.send('203.0.113.9');
      const direct = await start(undefined);
      await direct.send();
      await direct.send();
      logs.push(tracked.log, direct.log);
      expect(logs.flatMap((log) => log.of('warn'))).toEqual([]);
    });

    it('an X-Forwarded-For reaching an app that trusts no proxy: one warning per process', async () => {
      const first = await start(undefined);
      await first.send();
      expect(first.log.of('warn')).toEqual([]);
      await first.send('203.0.113.9');
      await first.send('198.51.100.4');
      expect(first.log.of('warn')).toEqual([expect.stringMatching(NO_TRUST)]);
      const second = await start(false);
      await second.send('203.0.113.9');
      expect(second.log.of('warn')).toEqual([]);
    });

    it('a trust of every hop: one warning per process, at the first request keyed by address', async () => {
      const first = await start(true);
      await first.send();
      await first.send('203.0.113.9');
      expect(first.log.of('warn')).toEqual([expect.stringMatching(TRUST_ALL)]);
      const second = await start(true);
      await second.send('203.0.113.9');
      expect(second.log.of('warn')).toEqual([]);
    });
  });
}
