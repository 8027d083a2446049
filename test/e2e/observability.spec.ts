import { jest } from '@jest/globals';
import { Controller, Get, Injectable, Logger, Module } from '@nestjs/common';
import { EventEmitterModule, OnEvent } from '@nestjs/event-emitter';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimit, RedisLimitEvents, RedisLimitModule, type RedisLimitEvent } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from '../harness/limiter-app.js';
import { RedisNode, TestRedis } from '../harness/redis-server.js';
import { bootSample, withSampleApp } from './sample-app.js';
import { until } from '../harness/until.js';

// What the module tells the app: events to listeners and EventEmitter2, counters, Prometheus text.
describe('observability', () => {
  describe('on the sample app', () => {
    const ctx = withSampleApp('express');
    const events = () => ctx.sample.app.get(RedisLimitEvents);

    it('announces and counts each decision of a guarded route', async () => {
      const seen: RedisLimitEvent[] = [];
      events().on((event) => seen.push(event));
      const statuses = [];
      for (let i = 0; i < 7; i++) statuses.push((await ctx.sample.http.get('/quotes/ACME')).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);

      const decisions = seen.filter((e) => e.type === 'redis-limit.decision');
      expect(decisions.map((e) => e.allowed)).toEqual([true, true, true, true, true, false, false]);
      expect(decisions[0]).toMatchObject({
        limits: [{ kind: 'sliding-window', limit: 5, remaining: 4, allowed: true, scope: expect.stringContaining('QuotesController.quote') }],
      });
      expect(decisions[6]).toMatchObject({ retryAfterMs: expect.any(Number), limits: [{ allowed: false, remaining: 0 }] });
      expect(events().counters().decisions).toEqual({ allowed: 5, refused: 2, shadowRefused: 0 });
      expect(events().prometheus()).toContain('nest_redis_limit_decisions_total{outcome="refused"} 2\n');
    });

    it('counts a @MaxPending refusal, naming the route and the owner', async () => {
      const seen: RedisLimitEvent[] = [];
      events().on((event) => seen.push(event));
      const order = () => ctx.sample.http.post('/orders').set('x-user-id', 'ada').send({ item: 'book', quantity: 1 });
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await order()).status);
      expect(statuses).toEqual([201, 201, 201, 429]);
      expect(seen.filter((e) => e.type === 'redis-limit.max-pending.refused')).toEqual([
        // the route's rate limit let the request through first: `decisions` had counted it allowed
        { type: 'redis-limit.max-pending.refused', route: 'OrdersController.create', owner: 'ada', max: 3, counted: 'allowed' },
      ]);
      expect(events().counters().maxPendingRefused).toBe(1);
    });

    it('a listener that throws breaks nothing, and is logged once', async () => {
      const errors = jest.spyOn(Logger.prototype, 'error');
      try {
        const stop = events().on(() => {
          throw new Error('listener bug');
        });
        for (let i = 0; i < 3; i++) expect((await ctx.sample.http.get('/quotes/GLOBEX')).status).toBe(200);
        stop();
        expect(events().counters().decisions.allowed).toBe(3);
        const logged = errors.mock.calls.map(([message]) => String(message)).filter((message) => message.includes('listener bug'));
        expect(logged).toEqual(['a listener threw on redis-limit.decision (logged once per listener): listener bug']);
      } finally {
        errors.mockRestore();
      }
    });
  });

  it('reports an outage once, and each request decided without Redis by its failMode', async () => {
    const redis = await RedisNode.start({ own: true });
    const sample = await bootSample('express', { redis: redis.url, failMode: 'open', commandTimeoutMs: 300 });
    try {
      const events = sample.app.get(RedisLimitEvents);
      const seen: RedisLimitEvent[] = [];
      events.on((event) => seen.push(event));
      expect((await sample.http.get('/quotes/ACME')).status).toBe(200);
      await redis.stop();
      for (let i = 0; i < 4; i++) expect((await sample.http.get('/quotes/ACME')).status).toBe(200);

      expect(seen.filter((e) => e.type === 'redis-limit.redis-down')).toHaveLength(1);
      const failures = seen.filter((e) => e.type === 'redis-limit.fail-mode');
      expect(failures).toHaveLength(4);
      expect(failures[0]).toMatchObject({ route: 'QuotesController.quote', failMode: 'open', error: expect.any(Error) });
      expect(events.counters()).toMatchObject({ failMode: { open: 4, closed: 0 }, outages: 1, redisUp: 0 });
      expect(events.prometheus('app_limits')).toContain('app_limits_redis_up 0\n');

      await redis.resume();
      // recovery takes what reconnecting takes: a loaded machine may need many seconds (issue 28)
      let status = 0;
      await until(
        async () => {
          status = (await sample.http.get('/quotes/ACME')).status;
          return seen.some((e) => e.type === 'redis-limit.redis-up');
        },
        30_000,
        () => `no redis-up event after the restart (last status ${status})`,
      );
      expect(status).toBe(200);
      expect(events.counters()).toMatchObject({ outages: 1, redisUp: 1 });
    } finally {
      await sample.close();
      await redis.stop();
    }
  });

  it("forwards every event to @nestjs/event-emitter's EventEmitter2 when the app has one", async () => {
    const received: RedisLimitEvent[] = [];
    const server = await TestRedis.start();

    @Injectable()
    class Audit {
      @OnEvent('redis-limit.decision')
      decided(event: RedisLimitEvent) {
        received.push(event);
      }
    }

    @Controller('ping')
    class PingController {
      @Get()
      @RateLimit({ limit: 1, windowMs: 60_000 })
      ping() {
        return 'pong';
      }
    }

    @Module({
      imports: [
        EventEmitterModule.forRoot(),
        RedisLimitModule.forRoot({ redis: server.connection, keyPrefix: uniquePrefix('events'), commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS }),
      ],
      controllers: [PingController],
      providers: [Audit],
    })
    class AppWithEmitter {}

    const moduleRef = await Test.createTestingModule({ imports: [AppWithEmitter] }).compile();
    const app = moduleRef.createNestApplication();
    await app.init();
    try {
      expect((await request(app.getHttpServer()).get('/ping')).status).toBe(200);
      expect((await request(app.getHttpServer()).get('/ping')).status).toBe(429);
      expect(received.map((e) => e.type === 'redis-limit.decision' && e.allowed)).toEqual([true, false]);
    } finally {
      await app.close();
      await server.stop();
    }
  });
});
