import type { ExecutionContext } from '@nestjs/common';
import type { FailMode, KeyResolver } from '../redis-limit.options.js';
import type { RateLimitAlgorithm } from './policy.js';
import type { TierResolver } from './tier.js';

export const RATE_LIMITS = Symbol('nest-redis-limit:rate-limits');
export const SKIP_RATE_LIMIT = Symbol('nest-redis-limit:skip-rate-limit');

export type CostResolver = number | ((ctx: ExecutionContext) => number);

export interface RateLimitOptions {
  /** Permits per window (token-bucket: bucket size); a function of the request for user tiers. */
  limit: number | TierResolver;
  /** Window in ms (token-bucket: time to refill from empty); a function of the request for user
   * tiers: each window has a counter of its own. */
  windowMs: number | TierResolver;
  /** Default 'sliding-window'. */
  algorithm?: RateLimitAlgorithm;
  /** What to count against. Default: the module's tracker (client IP). */
  key?: KeyResolver;
  /** Permits a request costs. Default 1. */
  cost?: CostResolver;
  /** Decorators with one name share one counter across routes; also the policy's header name. */
  name?: string;
  /** Overrides the module's failMode for this limit. */
  failMode?: FailMode;
}

export interface FunnelOptions {
  /** Units the funnel holds. */
  capacity: number;
  /** ms for an empty funnel to be full again. */
  leakingDurationMs: number;
  /** Units a request takes. Default 1. */
  quota?: number;
  key?: KeyResolver;
  name?: string;
  failMode?: FailMode;
}

export type LimitEntry = ({ type: 'rate'; options: RateLimitOptions } | { type: 'funnel'; options: FunnelOptions }) & {
  /** How errors name it; default `@RateLimit(#n)` / `@Funnel(#n)` by its place on the route. */
  at?: string;
};

/** A decorator that appends `entry` to the list under `metadataKey` on a class or a handler. */
export function appendMetadata<T>(metadataKey: symbol, entry: T): ClassDecorator & MethodDecorator {
  return (target: object, _property?: string | symbol, descriptor?: PropertyDescriptor) => {
    const holder = (descriptor?.value ?? target) as object;
    const list: T[] = Reflect.getOwnMetadata(metadataKey, holder) ?? [];
    // decorators run bottom-up; prepend so the list reads in source order
    Reflect.defineMetadata(metadataKey, [entry, ...list], holder);
  };
}
