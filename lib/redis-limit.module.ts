import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ConfigurableModuleClass } from './redis-limit.module-definition.js';
import { ExpiringHashService } from './expiring-hash/expiring-hash.service.js';
import { RateLimitGuard } from './rate-limit/rate-limit.guard.js';
import { RateLimitPlans } from './rate-limit/rate-limit.plans.js';
import { RateLimiterService } from './rate-limit/rate-limiter.service.js';
import { RedisConnection } from './redis/redis-connection.js';

/**
 * `RedisLimitModule.forRoot(options)` / `forRootAsync({ useFactory, inject, imports })`.
 * Global unless `isGlobal: false`. Creates (or adopts) the Redis client, registers the scripts,
 * checks every decorator at start-up and closes what it opened on shutdown.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [RedisConnection, RateLimiterService, ExpiringHashService, RateLimitPlans, RateLimitGuard],
  exports: [RedisConnection, RateLimiterService, ExpiringHashService, RateLimitPlans, RateLimitGuard],
})
export class RedisLimitModule extends ConfigurableModuleClass {}
