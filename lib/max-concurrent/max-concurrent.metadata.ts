import type { KeyResolver } from '../transports/guard.options.js';

export const MAX_CONCURRENT = Symbol('nest-redis-limit:max-concurrent');

/** `@MaxConcurrent(limit, options)`'s options; checked at `app.init()` (an unknown one is a TypeError). */
export interface MaxConcurrentOptions {
  /** Whose slots they are, e.g. a tenant id: a non-empty string (else 500).
   * @default the module's tracker (HTTP: the client IP); required on microservice handlers
   * without one */
  key?: KeyResolver;
  /** Slots of the same name are counted together, across routes: a non-empty string.
   * @default the route (each handler counts its own) */
  name?: string;
  /** ms a slot lasts unless renewed (renewed every third of it while the handler runs), so an
   * instance that dies gives its slots back this long after: an integer from 1 to 2^31 − 1.
   * @default 30_000 */
  leaseMs?: number;
}

/** One `@MaxConcurrent` declaration, as the decorator received it (checked at start-up). */
export interface MaxConcurrentEntry {
  limit: number;
  options: MaxConcurrentOptions | undefined;
}
