import type { FailMode, KeyResolver } from '../redis-limit.options.js';

export const MAX_PENDING = Symbol('nest-redis-limit:max-pending');

export interface MaxPendingOptions {
  /** How long a slot lives, in ms, unless deleted first (e.g. an unpaid order's lifetime). Required. */
  ttlMs: number;
  /** The cap's name: slots live in the ExpiringHash key `${name}:${owner}`, shared by every route
   * with this name. Required; must not contain ':'. */
  name: string;
  /** Whose slots they are, e.g. a user id. Default: the module's tracker (client IP). */
  owner?: KeyResolver;
  /** Overrides the module's failMode for this cap. */
  failMode?: FailMode;
  /** A DelayQueue queue that receives `{ key, field, value }` when a slot expires undeleted. Default: none. */
  notify?: string;
}

/** One @MaxPending declaration, as the decorator received it (checked at start-up). */
export interface MaxPendingEntry {
  max: number;
  options: MaxPendingOptions;
}
