import 'reflect-metadata';
import { Controller, Get, type INestApplication } from '@nestjs/common';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimit, RedisLimitModule, type RedisLimitModuleOptions } from '../../lib/index.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { TestRedis } from '../harness/redis-server.js';

// The default tracker behind a proxy: the app trusts the loopback proxy (Express `trust proxy`,
// Fastify `trustProxy`), so X-Forwarded-For says which client a request comes from. One IPv6
// client owns a whole prefix: addresses in one /56 (the default ipv6Subnet) share a counter.
@Controller('clients')
@RateLimit({ limit: 2, windowMs: 60_000 })
class ClientsController {
  @Get()
  hit() {
    return 'ok';
  }
}

type Platform = 'express' | 'fastify';

async function behindProxy(redis: TestRedis, platform: Platform, options: RedisLimitModuleOptions): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLimitModule.forRoot({ redis: redis.connection, keyPrefix: uniquePrefix('client-ip'), ...options })],
    controllers: [ClientsController],
  }).compile();
  if (platform === 'express') {
    const app = moduleRef.createNestApplication<NestExpressApplication>(new ExpressAdapter(), { logger: false });
    app.set('trust proxy', 'loopback');
    return app.init();
  }
  const app = moduleRef.createNestApplication<NestFastifyApplication>(new FastifyAdapter({ trustProxy: 'loopback' }), { logger: false });
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  return app;
}

describe.each<Platform>(['express', 'fastify'])('the default tracker behind a proxy on %s', (platform) => {
  let redis: TestRedis;
  let app: INestApplication | undefined;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());
  afterEach(() => app?.close());

  async function start(options: RedisLimitModuleOptions = {}) {
    app = await behindProxy(redis, platform, options);
    const http = request(app.getHttpServer());
    return async (client: string) => (await http.get('/clients').set('x-forwarded-for', client)).status;
  }

  it('two addresses in one /56 share a counter; the next /56 has its own', async () => {
    const from = await start();
    expect(await from('2001:db8:0:ab01::1')).toBe(200);
    expect(await from('2001:DB8:0:ABFF:FFFF:FFFF:FFFF:FFFF')).toBe(200);
    expect(await from('2001:db8:0:ab42::7')).toBe(429);
    expect(await from('2001:db8:0:ac00::1')).toBe(200);
  });

  it('an IPv4-mapped IPv6 address counts as the IPv4 address', async () => {
    const from = await start();
    expect(await from('203.0.113.7')).toBe(200);
    expect(await from('::ffff:203.0.113.7')).toBe(200);
    expect(await from('::ffff:cb00:7107')).toBe(429);
    expect(await from('203.0.113.8')).toBe(200);
  });

  it('ipv6Subnet sets the prefix; false counts each address', async () => {
    const from64 = await start({ ipv6Subnet: 64 });
    expect(await from64('2001:db8:0:ab01::1')).toBe(200);
    expect(await from64('2001:db8:0:ab01::2')).toBe(200);
    expect(await from64('2001:db8:0:ab01:ffff::')).toBe(429);
    expect(await from64('2001:db8:0:ab02::1')).toBe(200);
    await app!.close();

    const fromWhole = await start({ ipv6Subnet: false });
    expect(await fromWhole('2001:db8::1')).toBe(200);
    expect(await fromWhole('2001:db8::1')).toBe(200);
    expect(await fromWhole('2001:db8:0:0:0:0:0:1')).toBe(429);
    expect(await fromWhole('2001:db8::2')).toBe(200);
  });
});
