import { Module, type DynamicModule } from '@nestjs/common';
import { RedisLimitModule, type FailMode, type HeadersMode } from '../../lib/index.js';
import { QuotesModule } from './quotes/quotes.module.js';
import { SmsModule } from './sms/sms.module.js';

export interface SampleAppOptions {
  /** The Redis every limit is kept in, e.g. redis://127.0.0.1:6380. */
  redisUrl: string;
  /** Prefix of the limiter's keys (tests pass a fresh one each). Default: the library's 'rl:'. */
  keyPrefix?: string;
  headers?: HeadersMode;
  failMode?: FailMode;
  commandTimeoutMs?: number;
}

/** The sample application: quotes (per-IP and per-API-key limits) and SMS (one per phone per 30 min). */
@Module({})
export class AppModule {
  static register({ redisUrl, ...limiter }: SampleAppOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [RedisLimitModule.forRoot({ ...limiter, redis: redisUrl }), QuotesModule, SmsModule],
    };
  }
}
