import { setTimeout as sleep } from 'node:timers/promises';
import { Controller, Get, Post } from '@nestjs/common';
import { RateLimit, type RateLimitAlgorithm, type RateLimitPolicy } from '../../lib/index.js';
import { controllerApp, statusesOf } from '../harness/controller-app.js';
import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { withLimiterApp } from '../harness/limiter-app.js';

// A counter is its name (or route), key, algorithm and windowMs: two policies with different
// windows never share one, while a changed limit keeps it (issue 13, item 5).
describe('counter identity', () => {
  const ctx = withLimiterApp();
  const T0 = 1_700_000_040_000;
  let keyNo = 0;
  const nextKey = () => `who-${++keyNo}`;
  const at = (key: string, policy: RateLimitPolicy, now: number) => ctx.app.limiter.decide([{ key, policy }], { now }).then((r) => r.decisions[0]!);

  describe.each(['sliding-window', 'fixed-window', 'token-bucket'] as RateLimitAlgorithm[])('%s', (algorithm) => {
    const perMinute: RateLimitPolicy = { limit: 3, windowMs: 60_000, algorithm };
    // another window, on the server clock: a day, so no window ends (and no permit comes back)
    // between the charge and the peek that must still see it
    const perDay: RateLimitPolicy = { limit: 100, windowMs: DAY_MS, algorithm };

    it('two windows on one key keep two counters', async () => {
      const key = nextKey();
      // 2 a second, not 100: a bucket's key expires (on the server's clock) once it would be full
      // again, which for 99 of 100 per second is 10 ms, and a loaded CI machine took longer than
      // that between two calls here, so the bucket came back full
      const twoPerSecond: RateLimitPolicy = { limit: 2, windowMs: 1000, algorithm };
      for (let i = 0; i < 3; i++) expect((await at(key, perMinute, T0 + i)).allowed).toBe(true);
      expect(await at(key, twoPerSecond, T0 + 1100)).toMatchObject({ allowed: true, remaining: 1 });
      // the per-second call neither wiped nor joined the minute's history
      expect(await at(key, perMinute, T0 + 1100)).toMatchObject({ allowed: false, remaining: 0 });
      expect(await at(key, twoPerSecond, T0 + 1101)).toMatchObject({ allowed: true, remaining: 0 });
    });

    it('a changed limit keeps the counter', async () => {
      const key = nextKey();
      for (let i = 0; i < 3; i++) await at(key, perMinute, T0 + i);
      // (a fresh counter would leave 4; a bucket keeps the tokens it has, none)
      const kept = algorithm === 'token-bucket' ? { allowed: false, remaining: 0 } : { allowed: true, remaining: 1 };
      expect(await at(key, { ...perMinute, limit: 5 }, T0 + 10)).toMatchObject(kept);
    });

    it('reset(key, policy) forgets that counter only', async () => {
      await awayFromWindowEnd(DAY_MS);
      const key = nextKey();
      await ctx.app.limiter.consume(key, perMinute, 3);
      await ctx.app.limiter.consume(key, perDay, 50);
      await ctx.app.limiter.reset(key, perMinute);
      expect(await ctx.app.limiter.peek(key, perMinute)).toMatchObject({ remaining: 3, resetMs: 0 });
      expect((await ctx.app.limiter.peek(key, perDay)).remaining).toBeLessThan(100);
      await ctx.app.limiter.reset(key, perDay);
      expect(await ctx.app.keys(`${ctx.app.prefix}*{${key}}`)).toEqual([]);
    });
  });

  it("a shared name with two windows: the second route's calls leave the first's history alone", async () => {
    @Controller('login')
    class LoginController {
      @Post()
      @RateLimit({ name: 'login', limit: 3, windowMs: 60_000 })
      password() {}

      @Get('sso')
      @RateLimit({ name: 'login', limit: 100, windowMs: 1000 })
      sso() {}
    }
    const app = await controllerApp(ctx.redis, { controllers: [LoginController] });
    try {
      expect(await statusesOf(() => app.http.post('/login'), 3)).toEqual([201, 201, 201]);
      // once those grants are older than the second route's window, its calls must not drop them
      await sleep(1100);
      expect(await statusesOf(() => app.http.get('/login/sso'), 2)).toEqual([200, 200]);
      expect(await statusesOf(() => app.http.post('/login'), 2)).toEqual([429, 429]);
    } finally {
      await app.close();
    }
  });
});
