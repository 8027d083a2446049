/** Options of `set` and `setIfBelow`. */
export interface ExpiringSetOptions {
  /** A DelayQueue queue that receives `{ key, field, value }` (an ExpiredField) once, when this
   * field expires neither deleted nor re-set first, with the value it last had. A non-empty,
   * well-formed string of at most 1,024 bytes; needs a `ttlMs`. Sent by a sweeping process within
   * about `sweepIntervalMs` of the expiry.
   * @default none
   * @throws TypeError `opts.notify` when not a non-empty well-formed string or without a `ttlMs`;
   * RangeError over 1,024 bytes. */
  notify?: string;
}

/** The result of `setIfBelow`: whether the field was written, and the live fields after the call. */
export interface SetIfBelowResult {
  /** Whether `field` was written (a live field is always re-set). */
  accepted: boolean;
  /** Live fields after the call, this one included when accepted. */
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
  /** The field's name. */
  field: string;
  /** Its value, as set. */
  value: string;
  /** ms left, or -1 when the field never expires. */
  ttlMs: number;
}

/** How fields expire: by the server ('native': HPEXPIRE, Redis >= 7.4, Valkey >= 9) or by the
 * library's own index ('index'). */
export type ExpiryMode = 'native' | 'index';
