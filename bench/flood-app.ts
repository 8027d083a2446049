// The flood benchmark's server (bench/flood.bench.ts): one key already over its limit, refused by
// @RateLimit with the refusal cache (the default), by rate-limiter-flexible's RateLimiterRedis with
// its in-memory block, and, beside them, the same quote route with no guard. Started with
// 'no-cache' as its last argument it serves only @RateLimit, in an app whose module has
// `refusalCache: false` (a module option: a process of its own).
import 'reflect-metadata';
import { HttpException, HttpStatus, Injectable, Module, UseGuards, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { RateLimit, RedisLimitModule } from '../lib/index.js';
import { QuotesService } from '../sample-app/src/quotes/quotes.service.js';
import { serveBench } from './common/app-process.js';
import { quoteController } from './common/quote-controller.js';

const [redisHost, redisPort, LIMIT, WINDOW_MS] = [process.argv[2]!, Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5])];
const MODE = process.argv[6] as 'cache' | 'no-cache';
/** Every request of a flood row counts against this one key, whoever sends it. */
const FLOOD_KEY = `flood-${MODE}`;

const PlainController = quoteController('plain');
const RateLimitedController = quoteController('rate-limit', RateLimit({ limit: LIMIT, windowMs: WINDOW_MS, algorithm: 'fixed-window', key: () => FLOOD_KEY }));

/**
 * rate-limiter-flexible's RateLimiterRedis as a Nest guard, set up as its docs advise against
 * floods: `inMemoryBlockOnConsumed` one past the limit blocks a key in process memory from its
 * first refusal. `inMemoryBlockDuration` is left unset, so the block lasts the key's own
 * msBeforeNext (rate-limiter-flexible's exact choice); a set duration would block for that long
 * whatever the window says.
 */
@Injectable()
class FlexibleGuard implements CanActivate {
  private readonly limiter = new RateLimiterRedis({
    storeClient: new Redis({ host: redisHost, port: redisPort }),
    keyPrefix: 'rlf-flood',
    points: LIMIT,
    duration: WINDOW_MS / 1000,
    inMemoryBlockOnConsumed: LIMIT + 1,
  });

  async canActivate(context: ExecutionContext): Promise<boolean> {
    try {
      await this.limiter.consume(FLOOD_KEY);
      return true;
    } catch (refusal) {
      if (!(refusal instanceof RateLimiterRes)) throw refusal;
      // the headers its docs set on a refusal, as @RateLimit sends them: the same response to write
      const seconds = String(Math.ceil(refusal.msBeforeNext / 1000));
      context
        .switchToHttp()
        .getResponse<{ set(headers: Record<string, string>): unknown }>()
        .set({
          'Retry-After': seconds,
          'X-RateLimit-Limit': String(LIMIT),
          'X-RateLimit-Remaining': String(refusal.remainingPoints),
          'X-RateLimit-Reset': seconds,
        });
      throw new HttpException('Too Many Requests', HttpStatus.TOO_MANY_REQUESTS);
    }
  }
}

const FlexibleController = quoteController('flexible', UseGuards(FlexibleGuard));

@Module({
  imports: [RedisLimitModule.forRoot({ redis: { host: redisHost, port: redisPort } })],
  controllers: [PlainController, RateLimitedController, FlexibleController],
  providers: [QuotesService, FlexibleGuard],
})
class FloodBenchModule {}

@Module({
  imports: [RedisLimitModule.forRoot({ redis: { host: redisHost, port: redisPort }, refusalCache: false })],
  controllers: [RateLimitedController],
  providers: [QuotesService],
})
class NoCacheBenchModule {}

const app = await NestFactory.create(MODE === 'no-cache' ? NoCacheBenchModule : FloodBenchModule, { logger: false });
app.enableShutdownHooks();
await app.listen(0, '127.0.0.1');
serveBench((app.getHttpServer().address() as { port: number }).port, () => app.close());
