import type { FailMode, KeyResolver } from '../transports/guard.options.js';

export const MAX_PENDING = Symbol('nest-redis-limit:max-pending');

/** `@MaxPending(max, options)`'s options; checked at `app.init()` (an unknown one is a TypeError). */
export interface MaxPendingOptions {
  /** How long a slot lives, in ms, unless deleted first (e.g. an unpaid order's lifetime).
   * Required; a positive integer. */
  ttlMs: number;
  /** The cap's name: slots live in the ExpiringHash key `${name}:${owner}`, shared by every route
   * with this name. Required; a non-empty string without ':' or a lone surrogate. */
  name: string;
  /** Whose slots they are, e.g. a user id; a non-empty string without a lone surrogate (else 500).
   * @default the module's tracker (HTTP: the client IP) */
  owner?: KeyResolver;
  /** What this cap does when Redis fails: 'closed' (503) or 'open' ('local' is refused: one
   * process cannot keep a cap across instances).
   * @default the module's failMode, with a module-wide 'local' taken as 'closed' */
  failMode?: FailMode;
  /** A DelayQueue queue that receives `{ key, field, value }` when a slot expires undeleted; a
   * non-empty string of at most 1,024 bytes.
   * @default none */
  notify?: string;
}

/** One `@MaxPending` declaration, as the decorator received it (checked at start-up). */
export interface MaxPendingEntry {
  max: number;
  options: MaxPendingOptions;
}
