import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Controller, Get, Param } from '@nestjs/common';
import { MaxConcurrent, RateLimit, RateLimiterService, RedisLimitEvents } from '../../lib/index.js';
import { controllerApp, startupError, type ControllerApp } from '../harness/controller-app.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { limiterModule, type LimiterApp } from '../harness/limiter-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

/** Requests the handlers below hold until the test lets them go, by tenant. */
const gates = new Map<string, () => void>();
const waitForGate = (tenant: string) => new Promise<void>((resolve) => gates.set(tenant, resolve));
const letGo = (tenant: string) => {
  gates.get(tenant)!();
  gates.delete(tenant);
};

@Controller('exports')
class ExportsController {
  @Get(':tenant')
  @RateLimit({ limit: 3, windowMs: 600_000, key: (ctx) => ctx.switchToHttp().getRequest<{ params: { tenant: string } }>().params.tenant })
  @MaxConcurrent(1, { key: (ctx) => ctx.switchToHttp().getRequest<{ params: { tenant: string } }>().params.tenant, name: 'exports' })
  async start(@Param('tenant') tenant: string) {
    await waitForGate(tenant);
    return { tenant };
  }

  @Get(':tenant/fails')
  @MaxConcurrent(1, { key: (ctx) => ctx.switchToHttp().getRequest<{ params: { tenant: string } }>().params.tenant })
  fails(): never {
    throw new Error('the export broke');
  }
}

describe('concurrency slots', () => {
  let redis: TestRedis;
  let limiterApp: LimiterApp;
  const limiter = () => limiterApp.moduleRef.get(RateLimiterService);
  beforeAll(async () => {
    redis = await TestRedis.start();
    limiterApp = await limiterModule(redis);
  });
  afterAll(async () => {
    await limiterApp?.close();
    await redis?.stop();
  });

  describe('RateLimiterService.acquireSlot', () => {
    it('hands out at most `limit` slots per key and name at once; a released slot is taken again', async () => {
      const opts = { limit: 2, name: 'exports' };
      const [a, b, c] = [await limiter().acquireSlot('t1', opts), await limiter().acquireSlot('t1', opts), await limiter().acquireSlot('t1', opts)];
      expect([a !== null, b !== null, c]).toEqual([true, true, null]);
      // another key, and another name, count apart
      const other = await limiter().acquireSlot('t2', opts);
      const unnamed = await limiter().acquireSlot('t1', { limit: 1 });
      expect([other !== null, unnamed !== null]).toEqual([true, true]);
      await a!.release();
      await a!.release(); // a second release gives nothing back twice
      const d = await limiter().acquireSlot('t1', opts);
      expect(d).not.toBeNull();
      expect(await limiter().acquireSlot('t1', opts)).toBeNull();
      await Promise.all([b, d, other, unnamed].map((slot) => slot!.release()));
    });

    it('renews a slot while it is held, so it outlives its lease', async () => {
      // a lease long enough that a busy machine's stalls (a second or so) do not end it between
      // renewals (every second here), short enough that the test outlives it twice
      const opts = { limit: 1, name: 'renewed', leaseMs: 3000 };
      const slot = await limiter().acquireSlot('t', opts);
      expect(slot).not.toBeNull();
      const twoLeasesOn = Date.now() + 7000;
      while (Date.now() < twoLeasesOn) {
        expect(await limiter().acquireSlot('t', opts)).toBeNull();
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      await slot!.release();
      expect(await limiter().acquireSlot('t', opts)).not.toBeNull();
    });

    it('gives back the slot of a holder that stopped renewing once its lease ends', async () => {
      const opts = { limit: 1, name: 'orphaned', leaseMs: 60_000 };
      // a holder that died: its slot, with a lease ending soon, never renewed
      const [seconds, micros] = await limiterApp.raw.time();
      const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      await limiterApp.raw.zadd(`${limiterApp.prefix}cs:orphaned:{dead}`, now + 400, 'a-dead-instance');
      expect(await limiter().acquireSlot('dead', opts)).toBeNull();
      let slot: { release(): Promise<void> } | null = null;
      await until(
        async () => (slot = await limiter().acquireSlot('dead', opts)) !== null,
        10_000,
        () => 'the dead holder kept its slot',
      );
      await slot!.release();
    });

    it("keeps a key's slots as long as its longest lease, and never shortens that", async () => {
      const slots = `${limiterApp.prefix}cs:leases:{t}`;
      const take = (leaseMs: number) => limiter().acquireSlot('t', { limit: 3, name: 'leases', leaseMs });
      const a = await take(60_000);
      // (a busy machine's seconds between the script and PTTL are far below these margins)
      expect(await limiterApp.raw.pttl(slots)).toBeGreaterThan(30_000);
      const b = await take(120_000);
      expect(await limiterApp.raw.pttl(slots)).toBeGreaterThan(90_000);
      const c = await take(1_000);
      expect(await limiterApp.raw.pttl(slots)).toBeGreaterThan(90_000);
      await Promise.all([a, b, c].map((slot) => slot!.release()));
      expect(await limiterApp.raw.exists(slots)).toBe(0);
      // a set taken again from empty is a new key: it gets its expiry afresh
      const d = await take(60_000);
      const ttl = await limiterApp.raw.pttl(slots);
      expect(ttl).toBeGreaterThan(30_000);
      expect(ttl).toBeLessThanOrEqual(60_000);
      await d!.release();
    });

    it('counts slots taken and refused', async () => {
      const before = limiterApp.moduleRef.get(RedisLimitEvents).counters().concurrencySlots;
      const slot = await limiter().acquireSlot('counted', { limit: 1 });
      await limiter().acquireSlot('counted', { limit: 1 });
      await slot!.release();
      const after = limiterApp.moduleRef.get(RedisLimitEvents).counters().concurrencySlots;
      expect([after.taken - before.taken, after.refused - before.refused]).toEqual([1, 1]);
    });
  });

  describe('@MaxConcurrent on HTTP', () => {
    let app: ControllerApp;
    beforeAll(async () => {
      app = await controllerApp(redis, { controllers: [ExportsController] });
    });
    afterAll(() => app?.close());

    it('refuses a second request of a key while the first runs (429, Retry-After), and frees the slot when it ends', async () => {
      const first = app.http.get('/exports/acme').then((r) => r);
      await until(
        () => gates.has('acme'),
        10_000,
        () => 'the first request never reached its handler',
      );
      const second = await app.http.get('/exports/acme');
      expect(second.status).toBe(429);
      expect(second.headers['retry-after']).toMatch(/^\d+$/);
      expect(second.body).toMatchObject({ statusCode: 429, retryAfterMs: expect.any(Number) });
      // another tenant is not held up
      const other = app.http.get('/exports/globex').then((r) => r);
      await until(
        () => gates.has('globex'),
        10_000,
        () => 'globex never reached its handler',
      );
      letGo('globex');
      expect((await other).status).toBe(200);
      letGo('acme');
      expect((await first).status).toBe(200);
      // the slot came back when the response ended: the third request is the rate limit's last
      const third = app.http.get('/exports/acme').then((r) => r);
      await until(
        () => gates.has('acme'),
        10_000,
        () => 'the third request never reached its handler',
      );
      letGo('acme');
      expect((await third).status).toBe(200);
      // a request the rate limit refuses takes no slot: it never gets that far
      const counters = app.app.get(RedisLimitEvents).counters().concurrencySlots;
      expect((await app.http.get('/exports/acme')).status).toBe(429);
      expect(app.app.get(RedisLimitEvents).counters().concurrencySlots).toEqual(counters);
    });

    it('holds the slot of a request whose client left until its handler ends', async () => {
      await app.app.listen(0, '127.0.0.1');
      const { port } = app.app.getHttpServer().address() as AddressInfo;
      const slots = app.app.get(RedisConnection).keys.build('cs', 'umbrella', 'exports');
      const leaving = httpRequest({ host: '127.0.0.1', port, path: '/exports/umbrella' });
      leaving.on('error', () => undefined);
      leaving.end();
      await until(
        () => gates.has('umbrella'),
        10_000,
        () => 'the request never reached its handler',
      );
      leaving.destroy(); // the client leaves; the export goes on, and keeps its slot
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await app.http.get('/exports/umbrella')).status).toBe(429);
      expect(await limiterApp.raw.zcard(slots)).toBe(1);
      letGo('umbrella');
      await until(
        async () => (await limiterApp.raw.zcard(slots)) === 0,
        10_000,
        () => 'the slot never came back',
      );
    });

    it('frees the slot when the handler throws', async () => {
      expect((await app.http.get('/exports/initech/fails')).status).toBe(500);
      expect((await app.http.get('/exports/initech/fails')).status).toBe(500);
    });
  });

  describe('@MaxConcurrent at start-up', () => {
    it.each([
      ['limit 0', 0, {}, RangeError, /ExportsBad\.start.*@MaxConcurrent\(limit\) must be a positive integer, got 0/],
      ['an unknown option', 1, { lease: 5 }, TypeError, /@MaxConcurrent\.lease is not an option \(key, name, leaseMs\)/],
      ['leaseMs 0', 1, { leaseMs: 0 }, RangeError, /@MaxConcurrent\.leaseMs must be a positive integer \(ms\)/],
      ['name ""', 1, { name: '' }, TypeError, /@MaxConcurrent\.name must be a non-empty string/],
      ['key not a function', 1, { key: 'tenant' }, TypeError, /@MaxConcurrent\.key must be a function/],
    ])('fails app.init() on %s, naming the handler', async (_label, limit, options, type, message) => {
      @Controller('bad')
      class ExportsBad {
        @Get()
        @MaxConcurrent(limit, options as never)
        start() {
          return 'ok';
        }
      }
      const error = await startupError(redis, ExportsBad);
      expect(error).toBeInstanceOf(type);
      expect((error as Error).message).toMatch(message);
    });
  });
});
