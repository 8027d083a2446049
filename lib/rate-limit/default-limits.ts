import type { LimitEntry, RateLimitOptions } from './rate-limit.metadata.js';
import { describeValue } from '../validation.js';

/** The module's `defaultLimits` as `@RateLimit` entries, each named `defaultLimits[i]` in errors. */
export function defaultEntries(defaults: unknown): LimitEntry[] {
  if (defaults === undefined) return [];
  if (!Array.isArray(defaults)) {
    throw new TypeError(`RedisLimitModule: defaultLimits must be an array of @RateLimit options, got ${describeValue(defaults)}`);
  }
  // Array.from visits holes too: a hole is a missing options object, not nothing. Each is checked
  // as a route's own @RateLimit options are, when a route's plan is compiled.
  return Array.from(defaults as unknown[], (options, i): LimitEntry => ({ type: 'rate', options: options as RateLimitOptions, at: `defaultLimits[${i}]` }));
}

/**
 * A route's limits with the defaults added as if declared at class level: a declared limit of
 * the same name (unnamed: any unnamed one) replaces a default.
 */
export function withDefaults(declared: LimitEntry[], defaults: readonly LimitEntry[]): LimitEntry[] {
  if (defaults.length === 0) return declared;
  const names = new Set(declared.map((entry) => entry.options?.name));
  return [...declared, ...defaults.filter((entry) => !names.has(entry.options?.name))];
}
