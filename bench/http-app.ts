// The HTTP benchmark's server, run in a process of its own so autocannon does not share its event
// loop: the sample app's quote route four times over, with no guard, under @RateLimit, under
// @MaxConcurrent, and under @nestjs/throttler with @nest-lab/throttler-storage-redis, all keyed by
// client IP on one Redis.
// Limits are far above what 10 s of load can reach: the benchmark measures deciding, not refusing.
// Started with 'defaults' as its last argument, it serves the same route undecorated in an app whose
// module has defaultLimits instead (a process of its own: defaults apply to every route of an app);
// with 'graphql', the GraphQL rows' app (graphql-app.module.ts); with 'otel-off' and 'otel-sdk',
// the routes app with `telemetry: false`, and with an OpenTelemetry SDK that exports nothing.
import 'reflect-metadata';
import { Module, UseGuards } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Throttle, ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { Redis } from 'ioredis';
import { MaxConcurrent, RateLimit, RedisLimitModule, SkipRateLimit } from '../lib/index.js';
import { QuotesService } from '../sample-app/src/quotes/quotes.service.js';
import { serveBench } from './common/app-process.js';
import type { AppMode } from './http.bench.js';
import { quoteController } from './common/quote-controller.js';

const [redisHost, redisPort, LIMIT, WINDOW_MS] = [process.argv[2]!, Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5])];
const MODE = process.argv[6] as AppMode;

const PlainController = quoteController('plain');
// fixed window, as the throttler counts
const RateLimitedController = quoteController('rate-limit', RateLimit({ limit: LIMIT, windowMs: WINDOW_MS, algorithm: 'fixed-window' }));
// a cap far above the connections: every request takes a slot and gives it back (issue 30)
const ConcurrentController = quoteController('max-concurrent', MaxConcurrent(LIMIT, { name: 'quotes' }));
const ThrottledController = quoteController('throttler', UseGuards(ThrottlerGuard), Throttle({ default: { limit: LIMIT, ttl: WINDOW_MS } }));
const DefaultsController = quoteController('defaults');
// the defaults app's own unguarded route: its baseline, measured in the same process
const DefaultsSkippedController = quoteController('defaults-skip', SkipRateLimit());

@Module({
  imports: [
    RedisLimitModule.forRoot({
      redis: { host: redisHost, port: redisPort },
      defaultLimits: [{ limit: LIMIT, windowMs: WINDOW_MS, algorithm: 'fixed-window' }],
    }),
  ],
  controllers: [DefaultsController, DefaultsSkippedController],
  providers: [QuotesService],
})
class DefaultsBenchModule {}

@Module({
  imports: [
    RedisLimitModule.forRoot({ redis: { host: redisHost, port: redisPort }, ...(MODE === 'otel-off' ? { telemetry: false } : {}) }),
    ThrottlerModule.forRoot({
      throttlers: [{ limit: LIMIT, ttl: WINDOW_MS }],
      storage: new ThrottlerStorageRedisService(new Redis({ host: redisHost, port: redisPort })),
    }),
  ],
  controllers: [PlainController, RateLimitedController, ConcurrentController, ThrottledController],
  providers: [QuotesService],
})
class HttpBenchModule {}

if (MODE === 'otel-sdk') {
  // an SDK that records every span and exports none: what tracing costs before any exporter
  const { trace } = await import('@opentelemetry/api');
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const dropAll = { export: (_spans: unknown, done: (result: { code: 0 }) => void) => done({ code: 0 }), shutdown: () => Promise.resolve() };
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropAll)] }));
}
const root =
  MODE === 'graphql'
    ? (await import('./graphql-app.module.js')).graphqlBenchModule({ host: redisHost, port: redisPort }, LIMIT, WINDOW_MS)
    : MODE === 'defaults'
      ? DefaultsBenchModule
      : HttpBenchModule;
const app = await NestFactory.create(root, { logger: false });
app.enableShutdownHooks();
await app.listen(0, '127.0.0.1');
const address = app.getHttpServer().address() as { port: number };
serveBench(address.port, () => app.close());
