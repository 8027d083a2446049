import type { ExecutionContext } from '@nestjs/common';
import type { RateLimitOptions } from './rate-limit.metadata.js';
import { DEFAULT_REFUSAL_CACHE_ENTRIES } from './refusal-cache.js';
import { assertKnownOptions, assertPositiveInteger, describeValue } from '../validation.js';

/** Says whether a request is exempt from every rate limit and funnel. */
export type SkipIf = (ctx: ExecutionContext) => boolean | Promise<boolean>;

/** Rate limits and funnels: RedisLimitModuleOptions' part. */
export interface RateLimitModuleOptions {
  /** failMode 'local': each limit is divided by this in every process, rounded up (at least 1),
   * e.g. the number of app instances.
   * @default 1
   * @throws TypeError / RangeError when not a positive integer. */
  localDivisor?: number;
  /** Limits on every handler of the app, as if declared at class level on its class: a class or
   * handler limit of the same name (unnamed: any unnamed one) replaces a default, `@SkipRateLimit()`
   * skips them. Unnamed defaults count per route, named ones across the app.
   * @default none
   * @throws TypeError / RangeError `defaultLimits[i].<option>` from `app.init()` (not at module
   * creation): an element that would be a bad `@RateLimit`, or two unnamed ones on one counter.
   * @example
   * ```ts
   * RedisLimitModule.forRoot({ defaultLimits: [{ limit: 100, windowMs: 60_000 }] })
   * ``` */
  defaultLimits?: RateLimitOptions[];
  /** true: no rate limit or funnel applies to this request (health checks, internal callers);
   * `@MaxPending` still does. Asked only on routes that have limits.
   * @default never skip
   * @throws TypeError when not a function. */
  skipIf?: SkipIf;
  /** true: every limit in shadow mode (decided, counted, headers and events, never refused), for
   * trying limits in production; a limit's own `shadow: false` still refuses.
   * @default false
   * @throws TypeError when not a boolean. */
  shadow?: boolean;
  /** Remembers refusals in the process until their retryAfterMs, so a flood from one key costs
   * Redis nothing (see RefusalCache); `maxEntries` bounds it (stacks remembered, least recently
   * used dropped first; default 10_000). false: every decision asks Redis.
   * @default true
   * @throws TypeError when not a boolean or `{ maxEntries? }` (an unknown option too);
   * TypeError / RangeError `refusalCache.maxEntries` when not a positive integer. */
  refusalCache?: boolean | { maxEntries?: number };
}

/** The rate-limit options, checked (defaultLimits: at app.init(), see below), with their defaults. */
export interface RateLimitSettings {
  localDivisor: number;
  /** Checked by RateLimitPlans at app.init(), with the decorators. */
  defaultLimits: unknown;
  skipIf: SkipIf | undefined;
  shadow: boolean;
  refusalCache: false | { maxEntries: number };
}

export function resolveRateLimitOptions(options: RateLimitModuleOptions): RateLimitSettings {
  const { localDivisor = 1, shadow = false, skipIf } = options;
  assertPositiveInteger(localDivisor, 'RedisLimitModule: localDivisor');
  if (skipIf !== undefined && typeof skipIf !== 'function') {
    throw new TypeError(`RedisLimitModule: skipIf must be a function (ctx) => boolean, got ${describeValue(skipIf)}`);
  }
  if (typeof shadow !== 'boolean') throw new TypeError(`RedisLimitModule: shadow must be a boolean, got ${describeValue(shadow)}`);
  return { localDivisor, defaultLimits: options.defaultLimits, skipIf, shadow, refusalCache: refusalCacheOption(options.refusalCache) };
}

function refusalCacheOption(value: unknown): RateLimitSettings['refusalCache'] {
  if (value === undefined || value === true) return { maxEntries: DEFAULT_REFUSAL_CACHE_ENTRIES };
  if (value === false) return false;
  const argument = 'RedisLimitModule: refusalCache';
  if (typeof value !== 'object' || value === null) throw new TypeError(`${argument} must be a boolean or { maxEntries? }, got ${describeValue(value)}`);
  assertKnownOptions(value, ['maxEntries'], argument);
  const { maxEntries = DEFAULT_REFUSAL_CACHE_ENTRIES } = value as { maxEntries?: unknown };
  assertPositiveInteger(maxEntries, `${argument}.maxEntries`);
  return { maxEntries };
}
