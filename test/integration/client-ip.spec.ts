import 'reflect-metadata';
import { request as httpRequest } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, Get, type INestApplication } from '@nestjs/common';
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimit, RedisLimitModule, type RedisLimitModuleOptions } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from '../harness/limiter-app.js';
import { TestRedis } from '../harness/redis-server.js';

// The default tracker behind a proxy: the app trusts the loopback proxy (Express `trust proxy`,
// Fastify `trustProxy`), so X-Forwarded-For says which client a request comes from. One IPv6
// client owns a whole prefix: addresses in one /56 (the default ipv6Subnet) share a counter. A
// port some proxies forward (`1.2.3.4:51234`) is no new client, nor is each port of a connection.
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
    imports: [
      RedisLimitModule.forRoot({ redis: redis.connection, keyPrefix: uniquePrefix('client-ip'), commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, ...options }),
    ],
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

/** The status of a GET over a Unix socket: the request has no client address at all. */
function getOverUnixSocket(socketPath: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath, path }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.on('error', reject);
    req.end();
  });
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

  it('a forwarded port is dropped: one IPv4 client, whichever port it came from', async () => {
    const from = await start();
    expect(await from('1.2.3.4:51234')).toBe(200);
    expect(await from('1.2.3.4:40000')).toBe(200);
    expect(await from('1.2.3.4:51234')).toBe(429);
    expect(await from('1.2.3.4')).toBe(429);
    expect(await from('1.2.3.5:51234')).toBe(200);
  });

  it('a forwarded port is dropped: one bracketed IPv6 client, whichever port it came from', async () => {
    const from = await start({ ipv6Subnet: false });
    expect(await from('[2001:db8::1]:443')).toBe(200);
    expect(await from('[2001:db8::1]:444')).toBe(200);
    expect(await from('[2001:db8::1]:445')).toBe(429);
    expect(await from('2001:db8::1')).toBe(429);
    expect(await from('[2001:db8::2]:443')).toBe(200);
  });

  it('a NAT64 address (64:ff9b::/96) counts as the IPv4 address it carries', async () => {
    const from = await start();
    expect(await from('192.0.2.1')).toBe(200);
    expect(await from('64:ff9b::c000:201')).toBe(200);
    expect(await from('64:ff9b::192.0.2.1')).toBe(429);
    // another IPv4 client through the same translator: a counter of its own, not the /56's
    expect(await from('64:ff9b::c000:202')).toBe(200);
  });

  it('a request without a client address is a 400, not a counter shared by all such requests', async () => {
    app = await behindProxy(redis, platform, {});
    const dir = await mkdtemp(join(tmpdir(), 'client-ip-'));
    const socketPath = join(dir, 'app.sock');
    const server = app.getHttpServer() as { listen(path: string, done: () => void): void };
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      // before: 200, 200, 429 (every such request under one key)
      for (let i = 0; i < 3; i++) expect(await getOverUnixSocket(socketPath, '/clients')).toBe(400);
    } finally {
      await app.close();
      app = undefined;
      await rm(dir, { recursive: true, force: true });
    }
  });
});
