import { Controller, Get } from '@nestjs/common';
import { RateLimit, RedisLimitEvents, type RedisLimitEvent } from '../../lib/index.js';
import { startupError } from '../harness/controller-app.js';
import { platformApp, type PlatformApp } from '../harness/platform-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { inSequence, PLATFORMS } from './sample-app.js';

// Shadow mode: limits decided, counted and reported, never refusing; a stack is refused only by
// the limits that are not shadows.
@Controller('shadow')
class ShadowController {
  @Get('alone')
  @RateLimit({ limit: 2, windowMs: 60_000, shadow: true })
  alone() {
    return { ok: true };
  }

  // the shadow is the tighter one: once it refuses, the enforced limit must still be charged
  @Get('stacked')
  @RateLimit({ name: 'trial', limit: 1, windowMs: 60_000, shadow: true })
  @RateLimit({ limit: 3, windowMs: 60_000 })
  stacked() {
    return { ok: true };
  }

  @Get('enforced')
  @RateLimit({ limit: 1, windowMs: 60_000, shadow: false })
  enforced() {
    return { ok: true };
  }
}

describe.each(PLATFORMS)('shadow limits on %s', (platform) => {
  let redis: TestRedis;
  let app: PlatformApp | undefined;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());
  afterEach(() => app?.close());

  const shadowEvents = (seen: RedisLimitEvent[]) => seen.filter((e) => e.type === 'redis-limit.shadow-refused');

  it('never refuse, send headers, announce and count each would-be refusal, and log once', async () => {
    app = await platformApp(platform, redis, [ShadowController]);
    const events = app.app.get(RedisLimitEvents);
    const seen: RedisLimitEvent[] = [];
    events.on((event) => seen.push(event));
    const responses = await inSequence(5, () => app!.http.get('/shadow/alone'));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(responses.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['1', '0', '0', '0', '0']);
    expect(responses.map((r) => r.headers['retry-after'])).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(shadowEvents(seen)).toHaveLength(3);
    expect(shadowEvents(seen)[0]).toEqual({
      type: 'redis-limit.shadow-refused',
      route: 'ShadowController.alone',
      retryAfterMs: expect.any(Number),
      limits: [{ key: expect.any(String), scope: expect.stringContaining('ShadowController.alone'), limit: 2, remaining: 0, retryAfterMs: expect.any(Number) }],
    });
    expect(events.counters().shadowRefused).toBe(3);
    expect(events.prometheus()).toContain('nest_redis_limit_shadow_refused_total 3\n');
    // a shadow's refusal is no refusal (issue 26 #6): not counted as one, never cached
    expect(events.counters().decisions).toEqual({ allowed: 2, refused: 0, shadowRefused: 3 });
    expect(events.counters().refusalCacheHits).toBe(0);
    expect(events.prometheus()).toContain('nest_redis_limit_decisions_total{outcome="refused"} 0\n');
    expect(events.prometheus()).toContain('nest_redis_limit_decisions_total{outcome="shadow-refused"} 3\n');
    const decisions = seen.filter((e) => e.type === 'redis-limit.decision');
    expect(decisions.map((e) => [e.allowed, 'shadowRefused' in e])).toEqual([
      [true, false],
      [true, false],
      [true, true],
      [true, true],
      [true, true],
    ]);
    expect(app.log.of('warn').filter((line) => line.includes('shadow'))).toEqual([
      expect.stringMatching(/^ShadowController\.alone: shadow limits would have refused/),
    ]);
  });

  it('in a stack, leave the enforced limits charged and refusing on their own', async () => {
    app = await platformApp(platform, redis, [ShadowController]);
    const seen: RedisLimitEvent[] = [];
    app.app.get(RedisLimitEvents).on((event) => seen.push(event));
    const responses = await inSequence(5, () => app!.http.get('/shadow/stacked'));
    // 'trial' (1 per minute) refuses from the 2nd on; the unnamed 3 per minute from the 4th
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 429, 429]);
    expect(shadowEvents(seen)).toHaveLength(2);
    expect(responses[3]!.headers['retry-after']).toBeDefined();
    // one decision reported per request: its enforced limits' verdict, shadow-refused where only 'trial' refused
    const events = app.app.get(RedisLimitEvents).counters();
    expect([events.decisions, events.refusalCacheHits]).toEqual([{ allowed: 1, refused: 2, shadowRefused: 2 }, 0]);
  });

  it('everywhere with the module option, but not where a limit says shadow: false', async () => {
    app = await platformApp(platform, redis, [ShadowController], { shadow: true });
    expect((await inSequence(4, () => app!.http.get('/shadow/stacked'))).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect((await inSequence(2, () => app!.http.get('/shadow/enforced'))).map((r) => r.status)).toEqual([200, 429]);
    expect(app.app.get(RedisLimitEvents).counters().shadowRefused).toBe(3);
  });
});

describe('shadow options', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  it('fail app.init() when not a boolean, naming Class.method', async () => {
    @Controller()
    class BadShadow {
      @Get()
      @RateLimit({ limit: 1, windowMs: 1000, shadow: 'yes' as unknown as true })
      handler() {}
    }
    const error = await startupError(redis, BadShadow);
    expect(error).toBeInstanceOf(TypeError);
    expect(String(error)).toMatch(/BadShadow\.handler: @RateLimit\(#1\)\.shadow must be a boolean, got "yes"/);
  });

  it('on the module fail at start-up when not a boolean', async () => {
    @Controller()
    class Fine {
      @Get()
      handler() {}
    }
    // checked when the module is built, before app.init()
    const error = await startupError(redis, Fine, { shadow: 1 as unknown as boolean }).catch((thrown: unknown) => thrown);
    expect(String(error)).toMatch(/RedisLimitModule: shadow must be a boolean, got 1/);
  });
});
