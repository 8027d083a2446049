import { Module, type DynamicModule } from '@nestjs/common';
import { RedisLimitModule, type FailMode, type HeadersMode, type RedisLimitModuleOptions } from '../../lib/index.js';
import { OrdersModule } from './orders/orders.module.js';
import { QuotesModule } from './quotes/quotes.module.js';
import { SmsModule } from './sms/sms.module.js';

export interface SampleAppOptions {
  /** The Redis every limit is kept in: a URL such as redis://127.0.0.1:6380, a cluster
   * (`{ cluster: { nodes } }`) or sentinels (`{ sentinels, name }`). */
  redis: NonNullable<RedisLimitModuleOptions['redis']>;
  /** Prefix of the limiter's keys (tests pass a fresh one each). Default: the library's 'rl:'. */
  keyPrefix?: string;
  headers?: HeadersMode;
  failMode?: FailMode;
  commandTimeoutMs?: number;
  /** How long an order waits for payment, in ms (tests shorten it). Default 30 minutes. */
  orderTtlMs?: number;
}

/**
 * The sample application: quotes (per-IP and per-API-key limits), SMS (one per phone per 30 min)
 * and orders (at most 3 unpaid per user).
 */
@Module({})
export class AppModule {
  static register({ orderTtlMs, ...limiter }: SampleAppOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        RedisLimitModule.forRoot(limiter),
        QuotesModule,
        SmsModule,
        OrdersModule.register({ ttlMs: orderTtlMs }),
      ],
    };
  }
}
