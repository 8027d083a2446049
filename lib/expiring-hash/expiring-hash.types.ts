/** Options of `set` and `setIfBelow`. */
export interface ExpiringSetOptions {
  /** A DelayQueue queue that receives `{ key, field, value }` when this field expires unread. */
  notify?: string;
}

/** The result of `setIfBelow`: whether the field was written, and the live fields after the call. */
export interface SetIfBelowResult {
  accepted: boolean;
  count: number;
}

/** `setIfBelow` plus what a guard needs for its headers. */
export interface SlotReservation extends SetIfBelowResult {
  /** 0 when accepted; else ms until the oldest live field expires and frees capacity (0 too when
   * no live field has a ttl: capacity then frees only by delete). */
  retryAfterMs: number;
  /** ms until the last live field with a ttl expires (fields without one never do); 0 when none has one. */
  resetMs: number;
}

/** One live field with its remaining time. */
export interface ExpiringEntry {
  field: string;
  value: string;
  /** ms left, or -1 when the field never expires. */
  ttlMs: number;
}

/** How fields expire: by the server (HPEXPIRE, Redis >= 7.4) or by the library's own index. */
export type ExpiryMode = 'native' | 'index';
