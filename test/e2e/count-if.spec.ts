import { setTimeout as sleep } from 'node:timers/promises';
import { Body, Controller, Get, HttpCode, NotFoundException, Post, UnauthorizedException, type ExecutionContext } from '@nestjs/common';
import { Funnel, RateLimit, RateLimiterService, RedisLimitEvents, type RequestOutcome } from '../../lib/index.js';
import { startupError } from '../harness/controller-app.js';
import { platformApp, type PlatformApp } from '../harness/platform-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';
import { inSequence, PLATFORMS } from './sample-app.js';

// Outcome-aware limits over HTTP: countIf gives a request back after the response when it says
// false (the status actually sent decides); blockMs locks a key out after a refusal.
const account = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<{ body?: { account?: string } }>().body?.account ?? 'nobody';
const LOGIN = { limit: 5, windowMs: 60_000 };
const seen: RequestOutcome[] = [];
// The lockout routes' window: the requests a test expects inside it must stay there however long a
// busy machine stalls between them, so a few seconds, not a few hundred ms. Under 10 s, so a
// refusal's wait (at most the window) still tells a window's refusal from a lockout's.
const LOCKOUT_WINDOW_MS = 4_000;

@Controller()
class OutcomeController {
  @Post('login')
  @HttpCode(200)
  @RateLimit({ name: 'login', ...LOGIN, key: account, countIf: (_, outcome) => outcome.statusCode >= 400 })
  login(@Body() body: { password?: string }) {
    if (body.password !== 'right') throw new UnauthorizedException();
    return { ok: true };
  }

  // a 404 from the handler is not the client's fault here: only other answers count
  @Get('lookup')
  @RateLimit({
    name: 'lookup',
    limit: 3,
    windowMs: 60_000,
    key: () => 'me',
    countIf: (_, outcome) => {
      seen.push(outcome);
      return outcome.statusCode !== 404;
    },
  })
  lookup() {
    throw new NotFoundException();
  }

  @Get('buggy')
  @RateLimit({
    name: 'buggy',
    limit: 3,
    windowMs: 60_000,
    key: () => 'me',
    countIf: () => {
      throw new Error('countIf bug');
    },
  })
  buggy() {
    return { ok: true };
  }

  // 2 per window, then locked out for a minute
  @Post('pin')
  @RateLimit({ name: 'pin', limit: 2, windowMs: LOCKOUT_WINDOW_MS, key: () => 'card', blockMs: 60_000 })
  pin() {
    return { ok: true };
  }

  // 1 per window; the lockout outlasts the window, so the knock it lets in is granted
  @Post('short-lockout')
  @RateLimit({ name: 'short', limit: 1, windowMs: LOCKOUT_WINDOW_MS, key: () => 'card', blockMs: LOCKOUT_WINDOW_MS + 1_000 })
  shortLockout() {
    return { ok: true };
  }
}

describe.each(PLATFORMS)('outcome-aware limits on %s', (platform) => {
  let redis: TestRedis;
  let app: PlatformApp;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());
  beforeEach(async () => {
    seen.length = 0;
    app = await platformApp(platform, redis, [OutcomeController]);
  });
  afterEach(() => app.close());

  /** What `name`'s counter of `key` has left now (charges nothing). */
  const remaining = async (name: string, key: string, policy = LOGIN) => {
    const { decisions } = await app.app.get(RateLimiterService).decide([{ key, scope: name, policy }], { peek: true });
    return decisions[0]!.remaining;
  };
  /** Waits until the counter shows `expected` left: a refund lands after the response is sent. */
  const settled = (name: string, key: string, expected: number, policy = LOGIN) =>
    until(
      async () => (await remaining(name, key, policy)) === expected,
      20_000,
      async () => `${name}:${key} has ${await remaining(name, key, policy)} left, not ${expected}`,
    );
  const login = (password: string, who = 'ada') => app.http.post('/login').send({ account: who, password });

  it('count failed logins only: successes give their permit back, the 6th failure is refused', async () => {
    for (let i = 0; i < 3; i++) {
      const ok = await login('right');
      expect([ok.status, ok.headers['x-ratelimit-remaining']]).toEqual([200, '4']);
      await settled('login', 'ada', 5);
    }
    const failures = await inSequence(5, () => login('wrong'));
    expect(failures.map((r) => [r.status, r.headers['x-ratelimit-remaining']])).toEqual([
      [401, '4'],
      [401, '3'],
      [401, '2'],
      [401, '1'],
      [401, '0'],
    ]);
    // now refused before the handler, right password or not
    expect((await login('right')).status).toBe(429);
    expect((await login('wrong')).status).toBe(429);
    // per account
    expect((await login('right', 'bob')).status).toBe(200);
  });

  it('leave the count where it was after a success', async () => {
    await inSequence(2, () => login('wrong'));
    await settled('login', 'ada', 3);
    expect((await login('right')).status).toBe(200);
    await settled('login', 'ada', 3);
    // the next failure is charged from 3, not 2
    expect((await login('wrong')).headers['x-ratelimit-remaining']).toBe('2');
  });

  it('see the status an exception filter sent, and the handler error', async () => {
    const responses = await inSequence(5, () => app.http.get('/lookup'));
    expect(responses.map((r) => r.status)).toEqual([404, 404, 404, 404, 404]);
    await until(
      () => seen.length === 5,
      20_000,
      () => `${seen.length} outcomes seen`,
    );
    expect(seen[0]).toEqual({ statusCode: 404, error: expect.any(NotFoundException) });
    await settled('lookup', 'me', 3, { limit: 3, windowMs: 60_000 });
  });

  it('keep the charge when countIf throws, and log it once a minute per route', async () => {
    const responses = await inSequence(4, () => app.http.get('/buggy'));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    await until(
      () => app.log.of('error').length > 0,
      20_000,
      () => 'nothing logged',
    );
    expect(app.log.of('error')).toEqual([
      expect.stringMatching(/^OutcomeController\.buggy: @RateLimit\(#1\)\.countIf threw Error: countIf bug; the request stays counted/),
    ]);
  });

  it('lock a key out for blockMs after a refusal, even once the window would allow again', async () => {
    const first = await inSequence(3, () => app.http.post('/pin'));
    expect(first.map((r) => r.status)).toEqual([201, 201, 429]);
    // the window has passed since the last grant: only the lockout refuses now
    await sleep(LOCKOUT_WINDOW_MS + 100);
    const locked = await app.http.post('/pin');
    expect(locked.status).toBe(429);
    expect(locked.body.retryAfterMs).toBeGreaterThan(10_000);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(10);
  });

  it('start a lockout once, however often a locked-out client knocks, and let it in when it ends', async () => {
    let blocks = 0;
    app.app.get(RedisLimitEvents).on((event) => void (event.type === 'redis-limit.block' && blocks++));
    expect((await inSequence(2, () => app.http.post('/short-lockout'))).map((r) => r.status)).toEqual([201, 429]);
    // knocking all through the lockout neither extends it nor blocks again
    let status = 0;
    await until(
      async () => (status = (await app.http.post('/short-lockout')).status) === 201,
      30_000,
      () => `still ${status}`,
    );
    expect(blocks).toBe(1);
  });
});

describe('outcome-aware options', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  it('fail app.init() naming Class.method: countIf not a function, blockMs not a positive integer, countIf on @Funnel', async () => {
    @Controller()
    class BadOutcomes {
      @Get('a')
      @RateLimit({ limit: 1, windowMs: 1000, countIf: true as unknown as () => boolean })
      a() {}

      @Get('b')
      @RateLimit({ limit: 1, windowMs: 1000, blockMs: 0 })
      b() {}

      @Get('c')
      @RateLimit({ limit: 1, windowMs: 1000, blockMs: 1.5 })
      c() {}

      @Get('d')
      @Funnel({ capacity: 1, leakingDurationMs: 1000, countIf: () => true } as never)
      d() {}
    }
    const message = String(await startupError(redis, BadOutcomes));
    expect(message).toMatch(/BadOutcomes\.a: @RateLimit\(#1\)\.countIf must be a function \(ctx, outcome\) => boolean, got true/);
    expect(message).toMatch(/BadOutcomes\.b: @RateLimit\(#1\)\.blockMs must be a positive integer, got 0/);
    expect(message).toMatch(/BadOutcomes\.c: @RateLimit\(#1\)\.blockMs must be a positive integer, got 1\.5/);
    expect(message).toMatch(/BadOutcomes\.d: @Funnel\(#1\)\.countIf is not an option/);
  });

  it('apply to defaultLimits too, and fail app.init() there naming the entry', async () => {
    @Controller()
    class Plain {
      @Get('plain')
      plain() {
        throw new UnauthorizedException();
      }
    }
    const app = await platformApp('express', redis, [Plain], { defaultLimits: [{ limit: 2, windowMs: 60_000, countIf: (_, o) => o.statusCode !== 401 }] });
    let refunds = 0;
    app.app.get(RedisLimitEvents).on((event) => void (event.type === 'redis-limit.refund' && refunds++));
    try {
      for (let i = 1; i <= 4; i++) {
        expect((await app.http.get('/plain')).status).toBe(401);
        await until(
          () => refunds === i,
          20_000,
          () => `${refunds} refunds`,
        );
      }
    } finally {
      await app.close();
    }
    const error = String(await startupError(redis, Plain, { defaultLimits: [{ limit: 2, windowMs: 60_000, blockMs: -1 }] }));
    expect(error).toMatch(/RedisLimitModule: defaultLimits\[0\]\.blockMs must be a positive integer, got -1/);
  });
});
