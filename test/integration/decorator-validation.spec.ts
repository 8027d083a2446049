import 'reflect-metadata';
import { Controller, Get, type Type } from '@nestjs/common';
import { Funnel, RateLimit } from '../../lib/index.js';
import { startupError } from '../harness/controller-app.js';
import { TestRedis } from '../harness/redis-server.js';

// Bad decorator options must stop the application at start-up, naming Controller.handler,
// never surface at request time.
describe('decorator options are checked at app.init()', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  // rejects with the start-up error, so the tests below can assert on it with `rejects.toThrow`
  async function init(controller: Type): Promise<void> {
    const error = await startupError(redis, controller);
    if (error instanceof Error) throw error;
    expect(error).toBeUndefined(); // anything else thrown fails here, showing what it was
  }

  it.each([
    ['limit 0', { limit: 0, windowMs: 1000 }, /BadLimitController\.handler: @RateLimit\(#1\)\.limit must be a positive integer, got 0/],
    ['negative window', { limit: 5, windowMs: -1 }, /BadLimitController\.handler: .*windowMs/],
    ['non-finite window', { limit: 5, windowMs: Infinity }, /BadLimitController\.handler: .*windowMs/],
    ['unknown algorithm', { limit: 5, windowMs: 1000, algorithm: 'leaky' }, /BadLimitController\.handler: .*algorithm/],
    ['cost above limit', { limit: 5, windowMs: 1000, cost: 6 }, /BadLimitController\.handler: .*cost \(6\) exceeds the limit \(5\)/],
    ['key not a function', { limit: 5, windowMs: 1000, key: 'ip' }, /BadLimitController\.handler: .*key must be a function/],
    ['bad failMode', { limit: 5, windowMs: 1000, failMode: 'maybe' }, /BadLimitController\.handler: .*failMode/],
  ])('@RateLimit with %s', async (_case, options, message) => {
    @Controller()
    class BadLimitController {
      @Get()
      @RateLimit(options as never)
      handler() {
        return 'ok';
      }
    }
    await expect(init(BadLimitController)).rejects.toThrow(message);
  });

  it('@RateLimit without options', async () => {
    @Controller()
    class NoOptionsController {
      @Get()
      @RateLimit(undefined as never)
      bare() {
        return 'ok';
      }
    }
    await expect(init(NoOptionsController)).rejects.toThrow('NoOptionsController.bare: @RateLimit(#1) takes an options object');
  });

  it('@Funnel with a quota above capacity', async () => {
    @Controller()
    class SmsController {
      @Get()
      @Funnel({ capacity: 1, leakingDurationMs: 1000, quota: 2 })
      send() {
        return 'ok';
      }
    }
    await expect(init(SmsController)).rejects.toThrow(/SmsController\.send: @Funnel\(#1\)\.quota \(2\) exceeds the limit \(1\)/);
  });

  it('a class-level limit is checked for each handler it covers', async () => {
    @Controller()
    @RateLimit({ limit: 5, windowMs: 0 })
    class ClassLevelController {
      @Get('a')
      first() {
        return 'a';
      }
    }
    await expect(init(ClassLevelController)).rejects.toThrow(/ClassLevelController\.first: .*windowMs/);
  });

  it('two stacked limits on one counter are refused', async () => {
    @Controller()
    class DuplicateController {
      @Get()
      @RateLimit({ limit: 5, windowMs: 1000, name: 'login' })
      @RateLimit({ limit: 50, windowMs: 1000, name: 'login' })
      twice() {
        return 'ok';
      }
    }
    await expect(init(DuplicateController)).rejects.toThrow(/DuplicateController\.twice: two limits share the counter 'login'/);
  });

  it('good options start', async () => {
    @Controller()
    class GoodController {
      @Get()
      @RateLimit({ limit: 10, windowMs: 1000 })
      @RateLimit({ limit: 1000, windowMs: 3_600_000, algorithm: 'fixed-window', cost: () => 2 })
      @Funnel({ capacity: 3, leakingDurationMs: 60_000 })
      fine() {
        return 'ok';
      }
    }
    await expect(init(GoodController)).resolves.toBeUndefined();
  });
});
