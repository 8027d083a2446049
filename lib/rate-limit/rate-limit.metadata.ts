import type { ExecutionContext } from '@nestjs/common';
import type { FailMode, KeyResolver } from '../transports/guard.options.js';
import type { RateLimitAlgorithm } from './policy.js';
import type { TierResolver } from './tier.js';

export const RATE_LIMITS = Symbol('nest-redis-limit:rate-limits');
export const SKIP_RATE_LIMIT = Symbol('nest-redis-limit:skip-rate-limit');

/** Permits a request costs: a positive integer, or a function of the request resolved per request
 * (a result that is not a positive integer no larger than the limit is a 500, logged). */
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

/**
 * `@RateLimit` options (and a `defaultLimits` entry). Checked at `app.init()`: a bad one fails it
 * with a message naming the route (`Controller.handler`) and the option (`@RateLimit(#n).limit`),
 * a TypeError, or a RangeError for a number out of range; an unknown option is a TypeError too.
 * See docs/decorators.md.
 */
export interface RateLimitOptions {
  /** Permits per window (token-bucket: bucket size): a positive integer, or a function of the
   * request for user tiers (resolved per request; a changed limit keeps the counter). */
  limit: number | TierResolver;
  /** Window in ms (token-bucket: time to refill from empty): a positive integer, or a function of
   * the request for user tiers: each window has a counter of its own. */
  windowMs: number | TierResolver;
  /** How permits are counted (see RateLimitAlgorithm).
   * @default 'sliding-window' */
  algorithm?: RateLimitAlgorithm;
  /** What to count against; a resolver that throws an HttpException answers with it, an empty
   * or non-string result is a 500 (logged).
   * @default the module's tracker (HTTP: the client IP) */
  key?: KeyResolver;
  /** Permits a request costs: a positive integer no larger than `limit`, or a function.
   * @default 1 */
  cost?: CostResolver;
  /** Decorators with one name share one counter across routes; also the policy's header name and
   * what setOverride changes. A non-empty string.
   * @default none: the counter is the route's own */
  name?: string;
  /** What this limit does when Redis fails; a stack takes the strictest of its limits.
   * @default the module's failMode */
  failMode?: FailMode;
  /** Charged up front as usual; after the response, a request for which this says false is given
   * its permits back, e.g. `(_, o) => o.statusCode >= 400` counts failed logins only. One that
   * throws is logged (once a minute per route) and the charge stands.
   * @default every request counts */
  countIf?: CountIf;
  /** A refusal by this limit blocks its key for this many ms (a lockout): refused until then, even
   * once the window would allow again. Refusals during the lockout do not extend it (in each app
   * instance; another instance's first refusal during it starts it afresh). A positive integer.
   * @default no lockout */
  blockMs?: number;
  /** true: decided, counted, headers and events as usual, but never refuses (the request goes on);
   * a would-be refusal is reported as `redis-limit.shadow-refused`.
   * @default the module's `shadow` (false) */
  shadow?: boolean;
}

/**
 * `@Funnel` options. Checked at `app.init()` as `@RateLimit`'s, named `@Funnel(#n).<option>`;
 * none of them may be a function of the request but `key`.
 */
export interface FunnelOptions {
  /** Units the funnel holds: a positive integer. */
  capacity: number;
  /** ms for an empty funnel to be full again (it refills evenly): a positive integer;
   * capacity × leakingDurationMs at most 2^53. */
  leakingDurationMs: number;
  /** Units a request takes: a positive integer no larger than `capacity`.
   * @default 1 */
  quota?: number;
  /** What to count against.
   * @default the module's tracker (HTTP: the client IP) */
  key?: KeyResolver;
  /** Funnels with one name share one counter across routes. A non-empty string.
   * @default none: the counter is the route's own */
  name?: string;
  /** What this funnel does when Redis fails.
   * @default the module's failMode */
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
    const list = (Reflect.getOwnMetadata(metadataKey, holder) as T[] | undefined) ?? [];
    // decorators run bottom-up; prepend so the list reads in source order
    Reflect.defineMetadata(metadataKey, [entry, ...list], holder);
  };
}
