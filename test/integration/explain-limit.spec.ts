import 'reflect-metadata';
import { Controller, Get, Post } from '@nestjs/common';
import { RateLimit, RateLimiterService } from '../../lib/index.js';
import { account, isPro, LoginController } from '../harness/login-routes.js';
import { controllerApp, statusesOf, type ControllerApp } from '../harness/controller-app.js';
import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { limiterModule, uniquePrefix, type LimiterApp } from '../harness/limiter-app.js';
import { TestRedis } from '../harness/redis-server.js';

// RateLimiterService.explain(name, key) (issue 31 #3): one sentence per counter of the name for the
// key, read without charging: used of its limit, a lockout, an override in force, and a refusal
// the asking process remembers. From the app that declares the limits and from an admin process
// on the same prefix that declares nothing.

@Controller('auth')
class AuthController {
  // a tier decides this one's limit per request
  @Post('otp')
  @RateLimit({ name: 'otp', limit: (ctx) => (isPro(ctx) ? 5 : 2), windowMs: 60_000, algorithm: 'sliding-window', key: account })
  otp() {
    return 'ok';
  }

  @Get('other')
  @RateLimit({ name: 'other', limit: 4, windowMs: DAY_MS, algorithm: 'fixed-window', key: account })
  other() {
    return 'ok';
  }
}

describe('RateLimiterService.explain(name, key)', () => {
  let redis: TestRedis;
  let app: ControllerApp;
  let admin: LimiterApp;
  beforeAll(async () => {
    redis = await TestRedis.start();
    const keyPrefix = uniquePrefix('explain');
    app = await controllerApp(redis, { controllers: [LoginController, AuthController], options: { keyPrefix } });
    admin = await limiterModule(redis, { keyPrefix });
  });
  afterAll(async () => {
    await Promise.all([app?.close(), admin?.close()]);
    await redis?.stop();
  });
  beforeEach(() => awayFromWindowEnd(DAY_MS));

  const limiter = () => app.app.get(RateLimiterService);
  const login = (who: string) => app.http.post('/auth/login').set('x-account', who);

  it('reads each counter of the name without charging: used of its limit, and a lockout in force', async () => {
    expect(await limiter().explain('login', 'ada')).toEqual([
      `fixed-window, ${DAY_MS} ms window: 0 of 2 used.`,
      'token-bucket, 600000 ms window: 0 of 3 used.',
    ]);
    expect(await statusesOf(() => login('ada'), 3)).toEqual([201, 201, 429]);
    const said = await limiter().explain('login', 'ada');
    expect(said).toHaveLength(2);
    // the refusal locked the account out: the fixed window says for how long (the longer of the
    // lockout and the window's own wait, which ends with the day)
    const lockout = /^fixed-window, 86400000 ms window: 2 of 2 used; locked out for (\d+) ms more; back to full in \d+ ms/.exec(said[0]!);
    expect(lockout).not.toBeNull();
    expect(Number(lockout![1])).toBeGreaterThan(500_000);
    // a refused stack charged neither counter
    expect(said[1]).toMatch(/^token-bucket, 600000 ms window: 2 of 3 used; back to full in \d+ ms\.$/);
    // explaining charged nothing
    const again = await limiter().explain('login', 'ada');
    expect(again[0]).toMatch(/: 2 of 2 used; locked out/);
    expect(again[1]).toMatch(/: 2 of 3 used;/);
  });

  it("names the refusal the asking process remembers, and an admin process's answer has none", async () => {
    expect(await statusesOf(() => app.http.get('/auth/other').set('x-account', 'bo'), 6)).toEqual([200, 200, 200, 200, 429, 429]);
    const [here] = await limiter().explain('other', 'bo');
    expect(here).toMatch(
      /^fixed-window, 86400000 ms window: 4 of 4 used; refusing for \d+ ms; back to full in \d+ ms; this process refuses it from its refusal cache for \d+ ms more/,
    );
    // the admin process declares nothing: it reads the count, knows no limit, remembers nothing
    const [there] = await admin.limiter.explain('other', 'bo');
    expect(there).toMatch(/^fixed-window, 86400000 ms window: 4 of a limit this process does not declare used; back to full in \d+ ms\.$/);
  });

  it('reads a count whose limit a tier decides, or that the asking process does not declare', async () => {
    expect(await statusesOf(() => app.http.post('/auth/otp').set('x-account', 'cy'), 3)).toEqual([201, 201, 429]);
    expect(await limiter().explain('otp', 'cy')).toEqual([
      expect.stringMatching(
        /^sliding-window, 60000 ms window: 2 of a limit decided per request \(a user tier\) used; back to full in \d+ ms(; this process refuses it from its refusal cache for \d+ ms more, without asking Redis)?\.$/,
      ),
    ]);
    expect(await admin.limiter.explain('otp', 'cy')).toEqual([
      expect.stringMatching(/^sliding-window, 60000 ms window: 2 of a limit this process does not declare used; back to full in \d+ ms\.$/),
    ]);
    // a token bucket's level means nothing without its limit
    expect(await statusesOf(() => login('cy'), 1)).toEqual([201]);
    expect(await admin.limiter.explain('login', 'cy')).toEqual([
      expect.stringMatching(/^fixed-window, 86400000 ms window: 1 of a limit this process does not declare used; back to full in \d+ ms\.$/),
      'token-bucket, 600000 ms window: a limit this process does not declare, without which how much of it is used cannot be read.',
    ]);
  });

  it("names an override in force: the key's own beats the name's, with its lapse", async () => {
    await limiter().setOverride('other', { limit: 9 });
    try {
      expect(await limiter().explain('other', 'dee')).toEqual([
        `fixed-window, ${DAY_MS} ms window: 0 of 9 used; an override for every key is in force: 9 per ${DAY_MS} ms.`,
      ]);
      await limiter().setOverride('other', { limit: 1, key: 'dee', ttlMs: 600_000 });
      const [said] = await admin.limiter.explain('other', 'dee');
      expect(said).toMatch(
        new RegExp(`^fixed-window, ${DAY_MS} ms window: 0 of 1 used; an override for this key is in force: 1 per ${DAY_MS} ms until \\d{4}-\\d\\d-\\d\\dT`),
      );
      // another key still has the name's
      expect(await admin.limiter.explain('other', 'eve')).toEqual([expect.stringContaining('0 of 9 used; an override for every key')]);
    } finally {
      await limiter().setOverride('other', null, { key: 'dee' });
      await limiter().setOverride('other', null);
    }
  });

  it('says when no counter has the name, and names the argument it refuses', async () => {
    expect(await admin.limiter.explain('nothing-by-this-name', 'k')).toEqual([
      "No counter is named 'nothing-by-this-name': no process has used one, and this app declares none with a fixed window.",
    ]);
    await expect(admin.limiter.explain('', 'k')).rejects.toThrow(new TypeError('name must be a non-empty string, got ""'));
    await expect(admin.limiter.explain('login', 7 as unknown as string)).rejects.toThrow(/^key must be a non-empty string, got 7$/);
  });
});
