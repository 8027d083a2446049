import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR, DiscoveryModule } from '@nestjs/core';
import {
  assertModuleOptions,
  assertNoLateIsGlobal,
  ConfigurableModuleClass,
  REDIS_LIMIT_OPTIONS,
  type OPTIONS_TYPE,
  type RedisLimitModuleAsyncOptions,
} from './redis-limit.module-definition.js';
import { resolveOptions, RESOLVED_OPTIONS, type RedisLimitModuleOptions, type ResolvedOptions } from './redis-limit.options.js';
import { DelayQueueExplorer } from './delay-queue/delay-queue.explorer.js';
import { DELAY_QUEUE_OPTIONS } from './delay-queue/delay-queue.input.js';
import { DelayQueueService } from './delay-queue/delay-queue.service.js';
import { EXPIRING_HASH_OPTIONS } from './expiring-hash/expiring-hash.options.js';
import { ExpiringHashService } from './expiring-hash/expiring-hash.service.js';
import { RedisLimitHealthIndicator } from './health/redis-limit.health.js';
import { MaxConcurrentInterceptor } from './max-concurrent/max-concurrent.interceptor.js';
import { MaxConcurrentPlans } from './max-concurrent/max-concurrent.plans.js';
import { MaxPendingGuard } from './max-pending/max-pending.guard.js';
import { MaxPendingInterceptor } from './max-pending/max-pending.interceptor.js';
import { MaxPendingPlans } from './max-pending/max-pending.plans.js';
import { ConcurrencySlots } from './rate-limit/concurrency-slots.js';
import { DecisionEngine } from './rate-limit/decision-engine.js';
import { DefaultLimitsGuard } from './rate-limit/default-limits.guard.js';
import { GatewayEnhancers } from './rate-limit/gateway-enhancers.js';
import { OutcomeInterceptor } from './rate-limit/outcome.interceptor.js';
import { RateLimitGuard } from './rate-limit/rate-limit.guard.js';
import { RateLimitPlans } from './rate-limit/rate-limit.plans.js';
import { RateLimiterService } from './rate-limit/rate-limiter.service.js';
import { RedisLimitEvents } from './observability/redis-limit-events.js';
import { Telemetry } from './observability/telemetry.js';
import { TELEMETRY_OPTIONS } from './observability/telemetry.options.js';
import { RedisConnection } from './redis/redis-connection.js';
import { LIMITS_OFF } from './rate-limit/limits-off.js';
import { MemoryClient } from './testing/memory-client.js';
import { MemoryServer } from './testing/memory-server.js';
import { RedisLimitTestClock } from './testing/test-clock.js';
import { splitTestingOptions, type RedisLimitTestingOptions } from './redis-limit.testing.js';

/** The options, checked once: a bad one fails module creation, naming the option
 * (docs/bad-input.md). Each part that takes its own is handed them from here. */
const OPTIONS: Provider[] = [
  {
    provide: RESOLVED_OPTIONS,
    useFactory: (raw: RedisLimitModuleOptions) => {
      assertNoLateIsGlobal(raw);
      return resolveOptions(raw);
    },
    inject: [REDIS_LIMIT_OPTIONS],
  },
  { provide: EXPIRING_HASH_OPTIONS, useFactory: (options: ResolvedOptions) => options.expiringHash, inject: [RESOLVED_OPTIONS] },
  { provide: DELAY_QUEUE_OPTIONS, useFactory: (options: ResolvedOptions) => options.delayQueue, inject: [RESOLVED_OPTIONS] },
  { provide: TELEMETRY_OPTIONS, useFactory: ({ telemetry }: ResolvedOptions) => ({ telemetry }), inject: [RESOLVED_OPTIONS] },
];

const CONNECTION: Provider = {
  provide: RedisConnection,
  useFactory: (options: ResolvedOptions, events: RedisLimitEvents) => new RedisConnection(options, events),
  inject: [RESOLVED_OPTIONS, RedisLimitEvents],
};

/** What the module exports: the services users inject, and what the guards need. `@RateLimit`,
 * `@Funnel`, `@MaxPending` and `@MaxConcurrent` attach guards and interceptors that Nest builds in
 * the user's own module, so their dependencies (the connection, the plans) must be visible there
 * too. */
const PROVIDERS = [
  RedisLimitEvents,
  Telemetry,
  CONNECTION,
  DecisionEngine,
  ConcurrencySlots,
  RateLimiterService,
  ExpiringHashService,
  DelayQueueService,
  RateLimitPlans,
  RateLimitGuard,
  MaxPendingPlans,
  MaxPendingGuard,
  MaxPendingInterceptor,
  MaxConcurrentPlans,
  MaxConcurrentInterceptor,
  RedisLimitHealthIndicator,
];

/**
 * `RedisLimitModule.forRoot(options)` / `forRootAsync({ useFactory, inject, imports })`.
 * Global unless `isGlobal: false`. Creates (or adopts) the Redis client, registers the scripts,
 * checks every decorator at start-up and closes what it opened on shutdown. Provides
 * RateLimiterService, ExpiringHashService, DelayQueueService, RedisLimitEvents and the guards.
 */
@Module({
  imports: [DiscoveryModule],
  // defaultLimits reach every route without a line of guard wiring; countIf sees every handler's end
  // (and on Nest 11, whose gateways get no global enhancers, GatewayEnhancers brings both there)
  providers: [
    ...OPTIONS,
    ...PROVIDERS,
    DelayQueueExplorer,
    { provide: APP_GUARD, useClass: DefaultLimitsGuard },
    { provide: APP_INTERCEPTOR, useClass: OutcomeInterceptor },
    GatewayEnhancers,
  ],
  exports: PROVIDERS,
})
export class RedisLimitModule extends ConfigurableModuleClass {
  /**
   * The module with `options` (every one optional; see RedisLimitModuleOptions for defaults).
   * An unreachable Redis does not stop the app: `app.init()` waits at most 2 s for it, then
   * guards apply `failMode`.
   * @param options - module options (RedisLimitModuleOptions), and beside them `isGlobal`
   * (default true), which is this call's own (RedisLimitModuleExtras)
   * @returns the module to put in `imports`
   * @throws TypeError from this call when `options` is not an object or `isGlobal` not a boolean.
   * @throws TypeError / RangeError naming the option (`RedisLimitModule: keyPrefix ...`) when the
   * module is created (`NestFactory.create`, `compile()`), not by this call; a bad
   * `defaultLimits` entry fails `app.init()` naming `defaultLimits[i]`. See docs/bad-input.md.
   * @example
   * ```ts
   * @Module({
   *   imports: [RedisLimitModule.forRoot({ redis: process.env.REDIS_URL, keyPrefix: 'api:', failMode: 'open' })],
   * })
   * export class AppModule {}
   * ```
   */
  static override forRoot(options: typeof OPTIONS_TYPE = {}): DynamicModule {
    assertModuleOptions(options);
    return super.forRoot(options);
  }

  /**
   * forRoot with options from providers (e.g. ConfigService): `useFactory` (with `inject` and
   * `imports`), `useClass` or `useExisting`. `isGlobal` goes here, beside `useFactory`, not in
   * what the factory returns: Nest settles it before any factory runs. A factory may be typed
   * `(...): RedisLimitModuleOptions`.
   * @returns the module to put in `imports`
   * @throws TypeError from this call when `options` is not an object or `isGlobal` not a boolean.
   * @throws TypeError / RangeError naming the option, as forRoot, once the factory has run;
   * TypeError when what it returns holds `isGlobal` or is not an object.
   * @example
   * ```ts
   * RedisLimitModule.forRootAsync({
   *   imports: [ConfigModule],
   *   inject: [ConfigService],
   *   useFactory: (config: ConfigService) => ({ redis: config.get<string>('REDIS_URL') }),
   * })
   * ```
   */
  static override forRootAsync(options: RedisLimitModuleAsyncOptions): DynamicModule {
    assertModuleOptions(options);
    return super.forRootAsync(options);
  }

  /**
   * The module for an app's own tests, with no Redis: the same providers, decorators, guards and
   * services, on an in-memory engine that runs the library's own Lua scripts in this process
   * (fengari, a devDependency the app installs: `npm i -D fengari`). Time stands still there
   * until the test moves it: inject `RedisLimitTestClock` and `advance(ms)`. Each call makes a
   * new, empty engine. See docs/testing-your-app.md.
   * @param options - forRoot's options (but `redis`), and `limits`: 'enforce' (default) or 'off'
   * (every rate limit and funnel grants, uncharged)
   * @throws TypeError from this call when `options` is not an object, `limits` is neither
   * 'enforce' nor 'off', or `redis` is given; the other options fail as forRoot's do
   * @example
   * ```ts
   * const moduleRef = await Test.createTestingModule({
   *   imports: [RedisLimitModule.forTesting(), OrdersModule],
   * }).compile();
   * const clock = moduleRef.get(RedisLimitTestClock);
   * ```
   */
  static forTesting(options: RedisLimitTestingOptions = {}): DynamicModule {
    assertModuleOptions(options);
    const { limitsOff, rest } = splitTestingOptions(options);
    const clock = new RedisLimitTestClock();
    const server = new MemoryServer(clock);
    const client = new MemoryClient(server);
    const module = super.forRoot({ ...rest, redis: client as unknown as RedisLimitModuleOptions['redis'] });
    // the engine's Lua VM loaded when the module is created: without fengari, creating it fails
    // saying so, rather than every command failing as an outage would
    const engine = { provide: MemoryServer, useFactory: () => server.ready.then(() => server) };
    return {
      ...module,
      providers: [...(module.providers ?? []), engine, { provide: RedisLimitTestClock, useValue: clock }, { provide: LIMITS_OFF, useValue: limitsOff }],
      exports: [...(module.exports ?? []), RedisLimitTestClock],
    };
  }
}
