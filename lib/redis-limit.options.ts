// The module's options, composed from each part's own: the connection's (redis/), the guards'
// (transports/), rate limits' (rate-limit/), telemetry's (observability/), ExpiringHash's and DelayQueue's. Each part declares
// its options and checks them; this file only puts them together, in one interface and one
// resolveOptions.
import type { DelayQueueOptions } from './delay-queue/delay-queue.types.js';
import { resolveDelayQueueOptions } from './delay-queue/delay-queue.input.js';
import { resolveExpiringHashOptions, type ExpiringHashOptions } from './expiring-hash/expiring-hash.options.js';
import { resolveTelemetryOptions, type TelemetryModuleOptions, type TelemetrySettings } from './observability/telemetry.options.js';
import { resolveRateLimitOptions, type RateLimitModuleOptions, type RateLimitSettings } from './rate-limit/rate-limit.options.js';
import { resolveConnectionOptions, type ConnectionModuleOptions, type ConnectionSettings } from './redis/connection.options.js';
import { resolveGuardOptions, type GuardModuleOptions, type GuardSettings } from './transports/guard.options.js';
import { describeValue } from './validation.js';

/**
 * Options of `RedisLimitModule.forRoot`, and what a `forRootAsync` factory returns. `isGlobal` is
 * none of them: it is an argument of the forRoot / forRootAsync call itself (see
 * RedisLimitModuleExtras), as Nest settles it before any factory runs. Every time is in ms. They
 * are checked when the module is created (`NestFactory.create`,
 * `Test.createTestingModule(...).compile()`): a bad value is a TypeError (wrong type) or
 * RangeError (number out of range) whose message starts `RedisLimitModule: <option>`; see
 * docs/bad-input.md. `undefined` always means the default.
 */
export interface RedisLimitModuleOptions extends ConnectionModuleOptions, GuardModuleOptions, RateLimitModuleOptions, TelemetryModuleOptions {
  /** ExpiringHashService: how fields expire and how the background sweep runs.
   * @throws TypeError / RangeError `expiringHash.<option>`, see ExpiringHashOptions. */
  expiringHash?: ExpiringHashOptions;
  /** DelayQueueService: how much of each queue's dead set is kept.
   * @throws TypeError / RangeError `delayQueue.<option>`: not an object, an unknown option,
   * `deadRetentionMs` not an integer >= 1, `maxDead` not an integer >= 0. */
  delayQueue?: DelayQueueOptions;
}

/**
 * What forRoot and forRootAsync take beside the options (Nest's ConfigurableModuleBuilder
 * extras): `forRoot({ ...options, isGlobal })`, `forRootAsync({ isGlobal, useFactory })`.
 */
export interface RedisLimitModuleExtras {
  /** Registers the module globally. In `forRootAsync` it goes beside `useFactory`, never in what
   * the factory returns (a type error; with a cast, start-up fails with a TypeError).
   * @default true
   * @throws TypeError from forRoot / forRootAsync when not a boolean. */
  isGlobal?: boolean;
}

/** Injects the module's options, checked (ResolvedOptions): the module hands each part its own. */
export const RESOLVED_OPTIONS = Symbol('RedisLimitResolvedOptions');

/** Options with every default filled in and every value checked. */
export interface ResolvedOptions extends ConnectionSettings, GuardSettings, RateLimitSettings, TelemetrySettings {
  expiringHash: Required<ExpiringHashOptions>;
  delayQueue: Required<DelayQueueOptions>;
}

export function resolveOptions(options: RedisLimitModuleOptions = {}): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`RedisLimitModule: options must be an object, got ${describeValue(options)}`);
  }
  return {
    ...resolveConnectionOptions(options),
    ...resolveGuardOptions(options),
    ...resolveRateLimitOptions(options),
    ...resolveTelemetryOptions(options),
    expiringHash: resolveExpiringHashOptions(options.expiringHash),
    delayQueue: resolveDelayQueueOptions(options.delayQueue),
  };
}
