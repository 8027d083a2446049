import { Module, type DynamicModule, type INestApplication } from '@nestjs/common';
import { WsAdapter } from '@nestjs/platform-ws';
import {
  RedisLimitDashboardModule,
  RedisLimitModule,
  type FailMode,
  type HeadersMode,
  type RateLimitOptions,
  type RedisLimitModuleOptions,
} from '../../lib/index.js';
import { AppController } from './app.controller.js';
import { CompletionsModule } from './completions/completions.module.js';
import { sampleGraphQLModule } from './graphql/sample-graphql.module.js';
import { LiveModule } from './live/live.module.js';
import { LoginModule } from './login/login.module.js';
import { AdminKeyGuard } from './orders/admin-key.guard.js';
import { OrdersModule } from './orders/orders.module.js';
import type { Platform } from './platform.js';
import { QuotesModule } from './quotes/quotes.module.js';
import { SmsModule } from './sms/sms.module.js';

export type { Platform } from './platform.js';

/**
 * The app-wide limit: 100 requests per minute per client IP on every handler (HTTP route, GraphQL
 * field, WebSocket message). Unnamed, so it counts per handler and a handler's own unnamed
 * @RateLimit replaces it; @SkipRateLimit() exempts a handler.
 */
export const DEFAULT_LIMITS: RateLimitOptions[] = [{ limit: 100, windowMs: 60_000 }];

export interface SampleAppOptions {
  /** The Redis every limit is kept in: a URL such as redis://127.0.0.1:6380, a cluster
   * (`{ cluster: { nodes } }`) or sentinels (`{ sentinels, name }`). Not with `inMemory`. */
  redis?: NonNullable<RedisLimitModuleOptions['redis']>;
  /** No Redis: the library's in-memory engine (RedisLimitModule.forTesting()), for the app's own
   * tests; its RedisLimitTestClock moves time. Default false. */
  inMemory?: boolean;
  /** The HTTP platform the app is created on: picks the GraphQL driver. Default 'express'. */
  platform?: Platform;
  /** Prefix of the limiter's keys (tests pass a fresh one each). Default: the library's 'rl:'. */
  keyPrefix?: string;
  headers?: HeadersMode;
  failMode?: FailMode;
  commandTimeoutMs?: number;
  /** How long an order waits for payment, in ms (tests shorten it). Default 30 minutes. */
  orderTtlMs?: number;
}

/**
 * The sample application: an app-wide default limit with a health check exempt, quotes (per-IP
 * and per-API-key limits, also over GraphQL and WebSocket), SMS (one per phone per 30 min),
 * orders (at most 3 unpaid per user), login (failed attempts only, then a lockout) and
 * completions (a token budget: reserve, then settle), and the dashboard at /redis-limit.
 */
@Module({})
export class AppModule {
  static register({ orderTtlMs, platform = 'express', inMemory = false, ...limiter }: SampleAppOptions): DynamicModule {
    if (inMemory === (limiter.redis !== undefined)) throw new TypeError('AppModule.register: give either redis or inMemory: true');
    const options = { ...limiter, defaultLimits: DEFAULT_LIMITS };
    return {
      module: AppModule,
      imports: [
        inMemory ? RedisLimitModule.forTesting(options) : RedisLimitModule.forRoot(options),
        QuotesModule,
        SmsModule,
        OrdersModule.register({ ttlMs: orderTtlMs }),
        sampleGraphQLModule(platform),
        LiveModule,
        LoginModule,
        CompletionsModule,
        // the dashboard at /redis-limit, for whoever has the admin key; its buttons act
        RedisLimitDashboardModule.register({ canActivate: (ctx) => new AdminKeyGuard().canActivate(ctx), readOnly: false }),
      ],
      controllers: [AppController],
    };
  }
}

/** What the app needs before `init()`/`listen()`: the `ws` WebSocket adapter for the gateway. */
export function setUpSampleApp(app: INestApplication): INestApplication {
  return app.useWebSocketAdapter(new WsAdapter(app));
}
