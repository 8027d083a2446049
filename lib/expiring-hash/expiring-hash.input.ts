import { assertKey } from '../redis/keys.js';
import type { ExpiringSetOptions } from './expiring-hash.types.js';
import { assertPositiveInteger, assertWellFormed, describeValue } from '../validation.js';

/**
 * The latest expiry, in ms since the epoch, that Redis keeps for a hash field (HFE_MAX_ABS_TIME_MSEC
 * in t_hash.c: EB_EXPIRE_TIME_MAX = 2^48 - 1, less two bits it reserves; about the year 4199).
 * HPEXPIREAT refuses a later one after HSET has written the value, so both modes hold every
 * expiry to it (and lua/expiring-hash/write-field.lua's MAX_EXPIRY), checked before anything is written.
 */
export const MAX_EXPIRY_MS = 2 ** 46 - 1;

/** A ttl in ms: a positive integer that keeps now + ttlMs within MAX_EXPIRY_MS (by this process's
 * clock; the scripts check again by the server's). */
export function assertTtl(ttlMs: unknown, argument = 'ttlMs'): asserts ttlMs is number {
  assertPositiveInteger(ttlMs, argument);
  if (ttlMs > MAX_EXPIRY_MS - Date.now()) throw ttlOutOfRange(ttlMs, argument);
}

/** The error for a ttl whose expiry would pass MAX_EXPIRY_MS. */
export function ttlOutOfRange(ttlMs: number, argument = 'ttlMs'): RangeError {
  return new RangeError(
    `${argument} must be at most ${MAX_EXPIRY_MS - Date.now()} ms: now + ${argument} must not pass ${MAX_EXPIRY_MS} ms since the epoch, the latest expiry Redis keeps for a hash field; got ${ttlMs}`,
  );
}

/** Field names are listed in the sweep index with a 2-byte length. */
export const MAX_FIELD_BYTES = 65_535;

/**
 * A hash's key: a non-empty, well-formed string. The sweep registry lists keys as sorted-set
 * members, unescaped: a lone surrogate would reach Redis as U+FFFD, so the sweeper would sweep
 * another key's hash and never this one.
 */
export function assertHashKey(key: unknown, argument = 'key'): asserts key is string {
  assertKey(key, argument);
  assertWellFormed(key, argument);
}

/** A field: a non-empty string of at most MAX_FIELD_BYTES bytes ('' is the hash's own meta field). */
export function assertField(field: unknown, argument = 'field'): asserts field is string {
  assertKey(field, argument);
  assertWellFormed(field, argument);
  if (Buffer.byteLength(field) > MAX_FIELD_BYTES) {
    throw new RangeError(`${argument} must be at most ${MAX_FIELD_BYTES} bytes, got ${Buffer.byteLength(field)}`);
  }
}

/** Values are stored as given: strings only (serialize anything else yourself, e.g. JSON). */
export function assertValue(value: unknown, argument = 'value'): asserts value is string {
  if (typeof value !== 'string') throw new TypeError(`${argument} must be a string, got ${describeValue(value)}`);
  assertWellFormed(value, argument);
}

export function assertSetOptions(opts: unknown, ttlMs: number | undefined): asserts opts is ExpiringSetOptions | undefined {
  if (opts === undefined) return;
  if (typeof opts !== 'object' || opts === null) throw new TypeError(`opts must be an object, got ${describeValue(opts)}`);
  const { notify } = opts as ExpiringSetOptions;
  if (notify === undefined) return;
  // a queue name, checked as DelayQueueService checks one (it reaches the scripts unescaped)
  assertKey(notify, 'opts.notify');
  assertWellFormed(notify, 'opts.notify');
  if (Buffer.byteLength(notify) > 1024) throw new RangeError(`opts.notify must be at most 1024 bytes, got ${Buffer.byteLength(notify)}`);
  if (ttlMs === undefined) throw new TypeError('opts.notify needs a ttlMs: a field without one never expires');
}
