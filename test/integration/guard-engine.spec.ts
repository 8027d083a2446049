import 'reflect-metadata';
import { Controller, Get, HttpException, Param, type ExecutionContext } from '@nestjs/common';
import { Funnel, RateLimit, RateLimiterService } from '../../lib/index.js';
import { DecisionEngine } from '../../lib/rate-limit/decision-engine.js';
import { platformApp, type PlatformApp } from '../harness/platform-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// The guards decide with the plans checked at start-up: straight to DecisionEngine, which checks
// nothing, never through RateLimiterService, where public input is checked. With every method of
// the service made to throw once the app has started, guarded routes still grant, refuse, lock out
// and give back countIf's grants, and each request is decided by one engine call.

const user = (ctx: ExecutionContext) => String(ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-user']);

@Controller('engine')
class EngineController {
  @Get('stack')
  @RateLimit({ limit: 2, windowMs: 60_000, key: user, blockMs: 60_000 })
  @RateLimit({ limit: 10, windowMs: 60_000, name: 'engine-hourly', algorithm: 'token-bucket', key: user })
  @Funnel({ capacity: 5, leakingDurationMs: 60_000, key: user })
  stack() {
    return 'ok';
  }

  @Get('counted/:outcome')
  @RateLimit({ limit: 1, windowMs: 60_000, key: user, countIf: (_ctx, { statusCode }) => statusCode < 400 })
  counted(@Param('outcome') outcome: string) {
    if (outcome === 'fail') throw new HttpException('failed', 400);
    return 'ok';
  }
}

describe('guards decide through DecisionEngine, never RateLimiterService', () => {
  let redis: TestRedis;
  let app: PlatformApp;
  let decisions = 0;
  const get = async (path: string, who: string) => (await app.http.get(path).set('x-user', who)).status;

  beforeAll(async () => {
    redis = await TestRedis.start();
    app = await platformApp('express', redis, [EngineController]);
    const service = app.app.get(RateLimiterService);
    for (const name of Object.getOwnPropertyNames(RateLimiterService.prototype)) {
      if (name === 'constructor') continue;
      Object.defineProperty(service, name, {
        value: () => {
          throw new Error(`RateLimiterService.${name} was called on a request`);
        },
      });
    }
    const engine = app.app.get(DecisionEngine);
    const decide = engine.decide.bind(engine);
    engine.decide = (...args) => {
      decisions += 1;
      return decide(...args);
    };
  });
  afterAll(async () => {
    await app?.close();
    await redis?.stop();
  });

  it('a stack of three limits: granted, refused, then locked out by blockMs; one engine call a request', async () => {
    decisions = 0;
    expect([await get('/engine/stack', 'a'), await get('/engine/stack', 'a'), await get('/engine/stack', 'a')]).toEqual([200, 200, 429]);
    expect(decisions).toBe(3);
    const locked = await app.http.get('/engine/stack').set('x-user', 'a');
    expect([locked.status, Number(locked.headers['retry-after'])]).toEqual([429, 60]);
    expect(app.log.of('error')).toEqual([]);
  });

  it("countIf gives back a failed request's grant", async () => {
    expect(await get('/engine/counted/fail', 'b')).toBe(400);
    // the refund follows the response: the key is let in once it has landed
    await until(
      async () => (await get('/engine/counted/ok', 'b')) === 200,
      5_000,
      () => 'the failed request was never given back',
    );
    expect(await get('/engine/counted/ok', 'b')).toBe(429);
    expect(app.log.of('error')).toEqual([]);
  });
});
