import { Module, type DynamicModule } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import { ConfigurableModuleClass, type RedisLimitModuleAsyncOptions } from './redis-limit.module-definition.js';
import { DelayQueueExplorer } from './delay-queue/delay-queue.explorer.js';
import { DelayQueueService } from './delay-queue/delay-queue.service.js';
import { ExpiringHashService } from './expiring-hash/expiring-hash.service.js';
import { MaxPendingGuard } from './max-pending/max-pending.guard.js';
import { MaxPendingInterceptor } from './max-pending/max-pending.interceptor.js';
import { MaxPendingPlans } from './max-pending/max-pending.plans.js';
import { DefaultLimitsGuard } from './rate-limit/default-limits.guard.js';
import { GatewayEnhancers } from './rate-limit/gateway-enhancers.js';
import { OutcomeInterceptor } from './rate-limit/outcome.interceptor.js';
import { RateLimitGuard } from './rate-limit/rate-limit.guard.js';
import { RateLimitPlans } from './rate-limit/rate-limit.plans.js';
import { RateLimiterService } from './rate-limit/rate-limiter.service.js';
import { RedisLimitEvents } from './observability/redis-limit-events.js';
import { RedisConnection } from './redis/redis-connection.js';

/** Everything the module provides is exported too: guards and services are injected in user modules. */
const PROVIDERS = [
  RedisLimitEvents,
  RedisConnection,
  RateLimiterService,
  ExpiringHashService,
  DelayQueueService,
  DelayQueueExplorer,
  RateLimitPlans,
  RateLimitGuard,
  MaxPendingPlans,
  MaxPendingGuard,
  MaxPendingInterceptor,
];

/**
 * `RedisLimitModule.forRoot(options)` / `forRootAsync({ useFactory, inject, imports })`.
 * Global unless `isGlobal: false`. Creates (or adopts) the Redis client, registers the scripts,
 * checks every decorator at start-up and closes what it opened on shutdown.
 */
@Module({
  imports: [DiscoveryModule],
  // defaultLimits reach every route without a line of guard wiring; countIf sees every handler's end
  // (and on Nest 11, whose gateways get no global enhancers, GatewayEnhancers brings both there)
  providers: [...PROVIDERS, { provide: APP_GUARD, useClass: DefaultLimitsGuard }, { provide: APP_INTERCEPTOR, useClass: OutcomeInterceptor }, GatewayEnhancers],
  exports: PROVIDERS,
})
export class RedisLimitModule extends ConfigurableModuleClass {
  /** forRoot with options from providers; `isGlobal` goes here, not in what the factory returns. */
  static override forRootAsync(options: RedisLimitModuleAsyncOptions): DynamicModule {
    return super.forRootAsync(options);
  }
}
