import 'reflect-metadata';
import { Controller, Get, Post } from '@nestjs/common';
import { RateLimit, RateLimiterService } from '../../lib/index.js';
import { account, isPro, LoginController } from '../harness/login-routes.js';
import { controllerApp, statusesOf, type ControllerApp } from '../harness/controller-app.js';
import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { limiterModule, uniquePrefix, type LimiterApp } from '../harness/limiter-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// resetLimit(name, key) (issue 26 #3): a guard's counters are scoped by their name, which reset(key,
// policy) never reaches. resetLimit reaches every counter of the name for that resolved key —
// every algorithm and window, a tier's and an override's windows too — lifts lockouts, and empties
// every instance's refusal cache, from any process on the prefix (an admin app declaring nothing).

@Controller('auth')
class AuthController {
  // the same name elsewhere, with a tier's window
  @Post('otp')
  @RateLimit({ name: 'login', limit: 1, windowMs: (ctx) => (isPro(ctx) ? 120_000 : 90_000), key: account })
  otp() {
    return 'ok';
  }

  @Get('other')
  @RateLimit({ name: 'other', limit: 1, windowMs: 60_000, key: account })
  other() {
    return 'ok';
  }
}

describe('resetLimit(name, key)', () => {
  let redis: TestRedis;
  let keyPrefix: string;
  let a: ControllerApp;
  let b: ControllerApp;
  let admin: LimiterApp;
  beforeAll(async () => {
    redis = await TestRedis.start();
    keyPrefix = uniquePrefix('reset-limit');
    const start = () => controllerApp(redis, { controllers: [LoginController, AuthController], options: { keyPrefix } });
    [a, b] = await Promise.all([start(), start()]);
    admin = await limiterModule(redis, { keyPrefix });
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close(), admin?.close()]);
    await redis?.stop();
  });

  const login = (app: ControllerApp, who: string) => app.http.post('/auth/login').set('x-account', who);
  const otp = (app: ControllerApp, who: string, plan = 'free') => app.http.post('/auth/otp').set('x-account', who).set('x-plan', plan);

  it('lifts a lockout that reset(key, policy) does not reach, on every instance', async () => {
    await awayFromWindowEnd(DAY_MS);
    expect(await statusesOf(() => login(a, 'ada'), 4)).toEqual([201, 201, 429, 429]);
    // b has remembered the refusal too
    expect(await statusesOf(() => login(b, 'ada'), 2)).toEqual([429, 429]);
    const limiter = a.app.get(RateLimiterService);
    await limiter.reset('ada', { limit: 2, windowMs: DAY_MS, algorithm: 'fixed-window' });
    expect((await login(b, 'ada')).status).toBe(429);

    // both counters of the route: the fixed window (and its block) and the token bucket
    expect(await limiter.resetLimit('login', 'ada')).toBe(2);
    expect((await login(a, 'ada')).status).toBe(201);
    // b forgets its refusal when the message reaches it (a moment later on a cluster's bus)
    await until(
      async () => (await login(b, 'ada')).status === 201,
      10_000,
      () => 'b still refuses ada',
    );
    // the other account and the other name were left alone
    expect(await statusesOf(() => login(a, 'bob'), 3)).toEqual([201, 201, 429]);
    expect(await limiter.resetLimit('login', 'nobody')).toBe(0);
  });

  it('reaches every window a tier resolved to, from an admin process that declares nothing', async () => {
    expect(await statusesOf(() => otp(a, 'cy'), 2)).toEqual([201, 429]);
    expect(await statusesOf(() => otp(b, 'cy', 'pro'), 2)).toEqual([201, 429]);
    expect((await a.http.get('/auth/other').set('x-account', 'cy')).status).toBe(200);
    expect(await admin.limiter.resetLimit('login', 'cy')).toBe(2);
    expect([(await otp(b, 'cy')).status, (await otp(a, 'cy', 'pro')).status]).toEqual([201, 201]);
    expect((await a.http.get('/auth/other').set('x-account', 'cy')).status).toBe(429);
  });

  it('reaches the window an override set', async () => {
    const limiter = a.app.get(RateLimiterService);
    await limiter.setOverride('other', { limit: 1, windowMs: 45_000 });
    try {
      // the override reaches b within about a second: until both refuse, it is not in force
      let statuses: number[] = [];
      for (const deadline = Date.now() + 20_000; !(statuses[0] === 429 && statuses[1] === 429) && Date.now() < deadline;) {
        statuses = [(await a.http.get('/auth/other').set('x-account', 'dee')).status, (await b.http.get('/auth/other').set('x-account', 'dee')).status];
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(statuses).toEqual([429, 429]);
      expect(await limiter.resetLimit('other', 'dee')).toBeGreaterThanOrEqual(1);
      await until(
        async () => (await b.http.get('/auth/other').set('x-account', 'dee')).status === 200,
        10_000,
        () => 'b still refuses dee',
      );
    } finally {
      await limiter.setOverride('other', null);
    }
  });

  it('names the argument it refuses', async () => {
    const limiter = admin.limiter;
    await expect(limiter.resetLimit('', 'k')).rejects.toThrow(new TypeError('name must be a non-empty string, got ""'));
    await expect(limiter.resetLimit('login', 7 as unknown as string)).rejects.toThrow(/^key must be a non-empty string, got 7$/);
  });
});
