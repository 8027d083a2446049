import 'reflect-metadata';
import { Controller, Get, Injectable } from '@nestjs/common';
import { Funnel, MaxPending, RateLimit } from '../../lib/index.js';
import { startupError } from '../harness/controller-app.js';
import { TestRedis } from '../harness/redis-server.js';

// Start-up looks at every class, not only controllers: a guard decorator where no transport calls
// the method (a plain provider, a controller method without a route) fails app.init(), naming it.

@Controller('fine')
class FineController {
  @Get()
  @RateLimit({ limit: 5, windowMs: 1000 })
  list() {
    return 'ok';
  }
}

@Injectable()
class ReportService {
  @RateLimit({ limit: 5, windowMs: 1000 })
  build() {
    return 'report';
  }
}

@Injectable()
@MaxPending(3, { name: 'jobs', ttlMs: 60_000 })
class JobService {
  run() {
    return 'ran';
  }
}

@Controller('helper')
class HelperController {
  @Get()
  list() {
    return this.format();
  }

  @Funnel({ capacity: 1, leakingDurationMs: 1000 })
  format() {
    return 'ok';
  }
}

@Injectable()
class PlainService {
  work() {
    return 'ok';
  }
}

describe('start-up discovery', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  it('accepts decorators on routes beside undecorated providers', async () => {
    expect(await startupError(redis, FineController, {}, [PlainService])).toBeUndefined();
  });

  it('refuses @RateLimit on a provider method no transport calls', async () => {
    const error = await startupError(redis, FineController, {}, [ReportService]);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/ReportService\.build: @RateLimit \/ @Funnel cannot take effect here: it is not an HTTP route/);
  });

  it('refuses a class-level @MaxPending on a provider without handlers', async () => {
    const error = await startupError(redis, FineController, {}, [JobService]);
    expect((error as Error).message).toMatch(/JobService: @MaxPending cannot take effect here: it has no method that is an HTTP route/);
  });

  it('refuses @Funnel on a controller method that is no route', async () => {
    const error = await startupError(redis, HelperController);
    expect((error as Error).message).toMatch(/HelperController\.format: @RateLimit \/ @Funnel cannot take effect here/);
  });
});
