import type { ExecutionContext } from '@nestjs/common';
import type { FailMode, KeyResolver } from '../redis-limit.options.js';
import type { RateLimitAlgorithm } from './policy.js';
import type { TierResolver } from './tier.js';

export const RATE_LIMITS = Symbol('nest-redis-limit:rate-limits');
export const SKIP_RATE_LIMIT = Symbol('nest-redis-limit:skip-rate-limit');

export type CostResolver = number | ((ctx: ExecutionContext) => number);

/** How a request ended, as `countIf` sees it. */
export interface RequestOutcome {
  /** HTTP: the status sent (an exception filter's included). GraphQL, WebSocket and microservice
   * handlers: 200 when the handler succeeded, an HttpException's status (or the `statusCode` of a
   * WsException's or RpcException's error object), else 500. */
  statusCode: number;
  /** What the handler threw, when it threw (HTTP: seen when the handler ran). */
  error?: unknown;
}

/** Whether a granted request stays charged; false gives its permits back. */
export type CountIf = (ctx: ExecutionContext, outcome: RequestOutcome) => boolean;

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
  /** Charged up front as usual; after the response, a request for which this says false is given
   * its permits back, e.g. `(_, o) => o.statusCode >= 400` counts failed logins only. One that
   * throws is logged (once a minute per route) and the charge stands. Default: every request counts. */
  countIf?: CountIf;
  /** A refusal by this limit blocks its key for this many ms (a lockout): refused until then, even
   * once the window would allow again. Refusals during the lockout do not extend it (in each app
   * instance; another instance's first refusal during it starts it afresh). Default: no lockout. */
  blockMs?: number;
  /** true: decided, counted, headers and events as usual, but never refuses (the request goes on);
   * a would-be refusal is reported as `redis-limit.shadow-refused`. Default: the module's `shadow`. */
  shadow?: boolean;
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
