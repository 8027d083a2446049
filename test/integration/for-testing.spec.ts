import 'reflect-metadata';
import { Socket } from 'node:net';
import { jest } from '@jest/globals';
import { Controller, Headers, Injectable, Post, type INestApplication } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import request from 'supertest';
import {
  DelayQueueService,
  ExpiringHashService,
  MaxPending,
  OnDelayed,
  PendingSlot,
  RateLimit,
  RateLimiterService,
  RedisLimitModule,
  RedisLimitTestClock,
  type DelayedMessage,
  type RedisLimitTestingOptions,
} from '../../lib/index.js';
import { until } from '../harness/until.js';

// forTesting(): the module with no Redis, on the in-memory engine, whose clock stands still until
// a test moves it. (The library's semantics on that engine are the `integration:memory`
// project's: the suites every server runs, run there too.)

const byUser = (context: { switchToHttp(): { getRequest(): { headers: Record<string, string | undefined> } } }) =>
  context.switchToHttp().getRequest().headers['x-user'] ?? 'anonymous';

@Injectable()
class Reminders {
  readonly sent: string[] = [];

  @OnDelayed('reminders')
  send({ payload }: DelayedMessage<string>): void {
    this.sent.push(payload);
  }
}

@Controller()
class ShopController {
  constructor(private readonly queue: DelayQueueService) {}

  @Post('search')
  @RateLimit({ limit: 2, windowMs: 60_000, key: byUser })
  search(): { ok: true } {
    return { ok: true };
  }

  @Post('orders')
  @MaxPending(2, { name: 'unpaid', ttlMs: 30_000, owner: byUser })
  async order(@PendingSlot() id: string, @Headers('x-user') user: string): Promise<{ id: string }> {
    await this.queue.enqueue('reminders', `${user}:${id}`, { delayMs: 10_000 });
    return { id };
  }
}

async function shop(options: RedisLimitTestingOptions = {}) {
  const moduleRef = await Test.createTestingModule({
    imports: [RedisLimitModule.forTesting(options)],
    controllers: [ShopController],
    providers: [Reminders],
  }).compile();
  const app: INestApplication = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return {
    app,
    clock: moduleRef.get(RedisLimitTestClock),
    reminders: moduleRef.get(Reminders),
    http: request(app.getHttpServer()),
  };
}

const statuses = async (send: () => request.Test, n: number) => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await send()).status);
  return out;
};

describe('RedisLimitModule.forTesting()', () => {
  let app: INestApplication | undefined;
  const modules: TestingModule[] = [];
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await Promise.all(modules.splice(0).map((moduleRef) => moduleRef.close()));
  });

  /** A started module with forTesting() alone, closed after the test. */
  async function engine(): Promise<TestingModule> {
    const moduleRef = await Test.createTestingModule({ imports: [RedisLimitModule.forTesting()] }).compile();
    modules.push(moduleRef);
    await moduleRef.init();
    return moduleRef;
  }

  it('serves @RateLimit, @MaxPending and an @OnDelayed consumer, and the test clock moves them all', async () => {
    const s = await shop();
    app = s.app;
    expect(await statuses(() => s.http.post('/search').set('x-user', 'ann'), 3)).toEqual([201, 201, 429]);
    expect(await statuses(() => s.http.post('/orders').set('x-user', 'ann'), 3)).toEqual([201, 201, 429]);
    // time stands still: the window, the slots' ttl and the reminders' delay with it
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await statuses(() => s.http.post('/search').set('x-user', 'ann'), 1)).toEqual([429]);
    expect(s.reminders.sent).toEqual([]);
    // 10 s on: the reminders are due, and the waiting consumer takes them at once
    s.clock.advance(10_000);
    await until(
      () => s.reminders.sent.length === 2,
      10_000,
      () => `reminders sent: ${s.reminders.sent.length}`,
    );
    expect(s.reminders.sent.every((text) => text.startsWith('ann:'))).toBe(true);
    expect(await statuses(() => s.http.post('/search').set('x-user', 'ann'), 1)).toEqual([429]);
    // 60 s on: a fresh window; 30 s on: both unpaid orders lapsed, freeing their slots
    s.clock.advance(50_000);
    expect(await statuses(() => s.http.post('/search').set('x-user', 'ann'), 3)).toEqual([201, 201, 429]);
    expect(await statuses(() => s.http.post('/orders').set('x-user', 'ann'), 3)).toEqual([201, 201, 429]);
  });

  it("limits: 'off' grants every rate limit, uncharged, and keeps @MaxPending's cap", async () => {
    const s = await shop({ limits: 'off' });
    app = s.app;
    expect(await statuses(() => s.http.post('/search').set('x-user', 'bo'), 5)).toEqual([201, 201, 201, 201, 201]);
    const limiter = s.app.get(RateLimiterService);
    const decision = await limiter.consume('k', { limit: 1, windowMs: 1000 });
    expect(decision).toEqual({ allowed: true, limit: 1, remaining: 1, retryAfterMs: 0, resetMs: 0 });
    expect((await limiter.consume('k', { limit: 1, windowMs: 1000 })).allowed).toBe(true);
    expect(await statuses(() => s.http.post('/orders').set('x-user', 'bo'), 3)).toEqual([201, 201, 429]);
    // a consumer's rate limit paces nothing either: 3 messages of one key, 1 allowed a minute
    const queue = s.app.get(DelayQueueService);
    const handled: string[] = [];
    const consumer = queue.consume<string>('paced', (message) => void handled.push(message.payload), {
      rateLimit: { limit: 1, windowMs: 60_000, key: () => 'one-key' },
    });
    await queue.enqueueMany('paced', [{ payload: 'a' }, { payload: 'b' }, { payload: 'c' }]);
    await until(
      () => handled.length === 3,
      10_000,
      () => `handled: ${handled.join()}`,
    );
    await consumer.stop();
  });

  it('moves recurring schedules, retries and override lapses with the clock', async () => {
    const moduleRef = await engine();
    const clock = moduleRef.get(RedisLimitTestClock);
    const queue = moduleRef.get(DelayQueueService);
    const ticks: number[] = [];
    const attempts: number[] = [];
    const ticking = queue.consume<string>('ticks', (message) => void ticks.push(message.runAt));
    const failing = queue.consume<string>(
      'flaky',
      (message) => {
        attempts.push(message.attempt);
        throw new Error('not yet');
      },
      { maxAttempts: 3, backoffMs: 5_000 },
    );
    await queue.enqueue('flaky', 'x');
    await until(
      () => attempts.length === 1,
      10_000,
      () => `attempts: ${attempts.length}`,
    );
    // the retry is due 5 s after the failure, on this clock: not before
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(attempts).toEqual([1]);
    clock.advance(5_000);
    await until(
      () => attempts.length === 2,
      10_000,
      () => `attempts: ${attempts.length}`,
    );
    await failing.stop();

    const { nextRunAt } = await queue.schedule('ticks', 'minutely', { everyMs: 60_000, payload: 'tick' });
    clock.advance(nextRunAt - clock.now());
    await until(
      () => ticks.length === 1,
      10_000,
      () => `ticks: ${ticks.length}`,
    );
    expect(ticks).toEqual([nextRunAt]);
    // three minutes on, with nothing running meanwhile: the latest tick runs, once
    clock.advance(180_000);
    await until(
      () => ticks.length === 2,
      10_000,
      () => `ticks: ${ticks.length}`,
    );
    expect(ticks[1]).toBe(nextRunAt + 180_000);
    await ticking.stop();

    const limiter = moduleRef.get(RateLimiterService);
    await limiter.setOverride('search', { limit: 5, ttlMs: 10_000 });
    expect(Object.keys(await limiter.overrides())).toEqual(['search']);
    clock.advance(10_000);
    expect(await limiter.overrides()).toEqual({});
  });

  it("sends an expiring field's notification once the clock has moved by its ttl, not before", async () => {
    const moduleRef = await engine();
    const clock = moduleRef.get(RedisLimitTestClock);
    const got: unknown[] = [];
    const consumer = moduleRef.get(DelayQueueService).consume('expired', (message) => void got.push(message.payload));
    await moduleRef.get(ExpiringHashService).set('carts', 'c1', 'v', 1_000, { notify: 'expired' });
    clock.advance(999);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(got).toEqual([]);
    clock.advance(1);
    await until(
      () => got.length === 1,
      10_000,
      () => `notifications: ${got.length}`,
    );
    expect(got).toEqual([{ key: 'carts', field: 'c1', value: 'v' }]);
    await consumer.stop();
  });

  it('moves a wait in acquire() with the clock: the window ends when the test says', async () => {
    const moduleRef = await engine();
    const clock = moduleRef.get(RedisLimitTestClock);
    const limiter = moduleRef.get(RateLimiterService);
    const policy = { limit: 1, windowMs: 60_000, algorithm: 'sliding-window' } as const;
    await limiter.consume('a', policy);
    expect(await limiter.acquire('a', policy, { timeoutMs: 59_999 })).toBe(false);
    let granted = false;
    const waiting = limiter.acquire('a', policy).then((result) => (granted = result));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(granted).toBe(false);
    clock.advance(60_000);
    await expect(waiting).resolves.toBe(true);
  });

  it("answers under jest's fake timers: neither the engine nor a decision waits on a faked timer", async () => {
    const moduleRef = await engine();
    jest.useFakeTimers();
    try {
      const clock = moduleRef.get(RedisLimitTestClock);
      const limiter = moduleRef.get(RateLimiterService);
      const policy = { limit: 1, windowMs: 60_000 };
      expect((await limiter.consume('f', policy)).allowed).toBe(true);
      expect((await limiter.consume('f', policy)).allowed).toBe(false);
      clock.advance(60_000);
      expect((await limiter.consume('f', policy)).allowed).toBe(true);
      const hash = moduleRef.get(ExpiringHashService);
      await hash.set('fake', 'f', 'v', 1_000);
      expect(await hash.count('fake')).toBe(1);
    } finally {
      jest.useRealTimers();
    }
  });

  it('opens no connection: every service works with no network at all', async () => {
    const connect = jest.spyOn(Socket.prototype, 'connect');
    try {
      const moduleRef = await engine();
      const clock = moduleRef.get(RedisLimitTestClock);
      const hash = moduleRef.get(ExpiringHashService);
      await hash.set('carts', 'c1', 'v', 1_000);
      expect(await hash.count('carts')).toBe(1);
      clock.advance(1_000);
      expect(await hash.count('carts')).toBe(0);
      const limiter = moduleRef.get(RateLimiterService);
      const policy = { limit: 1, windowMs: 5_000, algorithm: 'sliding-window' } as const;
      expect((await limiter.consume('u', policy)).allowed).toBe(true);
      expect(await limiter.consume('u', policy)).toMatchObject({ allowed: false, retryAfterMs: 5_000 });
      clock.advance(4_999);
      expect(await limiter.consume('u', policy)).toMatchObject({ allowed: false, retryAfterMs: 1 });
      clock.advance(1);
      expect((await limiter.consume('u', policy)).allowed).toBe(true);
      const queue = moduleRef.get(DelayQueueService);
      await queue.enqueue('jobs', 'x', { delayMs: 1_000 });
      expect(await queue.size('jobs')).toEqual({ scheduled: 1, inFlight: 0, dead: 0 });
      expect(connect).not.toHaveBeenCalled();
    } finally {
      connect.mockRestore();
    }
  });

  it('gives each call an engine of its own', async () => {
    const [one, two] = await Promise.all([engine(), engine()]);
    const policy = { limit: 1, windowMs: 60_000 };
    expect((await one.get(RateLimiterService).consume('k', policy)).allowed).toBe(true);
    expect((await two.get(RateLimiterService).consume('k', policy)).allowed).toBe(true);
    expect(one.get(RedisLimitTestClock)).not.toBe(two.get(RedisLimitTestClock));
  });

  it('refuses bad options when called, naming them, and a clock that would go back', () => {
    expect(() => RedisLimitModule.forTesting({ limits: 'none' as 'off' })).toThrow(
      new TypeError("RedisLimitModule.forTesting: limits must be 'enforce' or 'off', got \"none\""),
    );
    expect(() => RedisLimitModule.forTesting({ redis: 'redis://redis.invalid' } as RedisLimitTestingOptions)).toThrow(
      /^RedisLimitModule\.forTesting: redis is not an option here/,
    );
    expect(() => RedisLimitModule.forTesting('x' as unknown as RedisLimitTestingOptions)).toThrow(TypeError);
    const clock = new RedisLimitTestClock(1_000);
    expect(() => clock.advance(-1)).toThrow(RangeError);
    expect(() => clock.advance(1.5)).toThrow(/advance: ms must be a non-negative integer; got 1\.5/);
    clock.advance(0);
    expect(clock.now()).toBe(1_000);
  });
});
