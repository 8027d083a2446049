import { assertKnownOptions, assertPositiveInteger, assertTimerMs, assertWellFormed, describeValue } from '../validation.js';

/** `acquireSlot`'s options. */
export interface SlotOptions {
  /** Slots a key may hold at once: a positive integer. */
  limit: number;
  /** Slots of different names are counted apart: a non-empty string.
   * @default none (one count per key) */
  name?: string;
  /** ms a slot lasts unless renewed (its holder renews it every third of this while it runs): a
   * process that dies gives its slots back this long after its last renewal. An integer from 1 to
   * 2^31 − 1.
   * @default 30_000 */
  leaseMs?: number;
}

export const DEFAULT_LEASE_MS = 30_000;

const OPTIONS = ['limit', 'name', 'leaseMs'];

/** Slot options checked, the lease's default filled in; `at` names them in errors. */
export function assertSlotOptions(opts: unknown, at: string): { limit: number; name: string | undefined; leaseMs: number } {
  if (typeof opts !== 'object' || opts === null) throw new TypeError(`${at} must be an object { limit, name?, leaseMs? }, got ${describeValue(opts)}`);
  assertKnownOptions(opts, OPTIONS, at);
  const { limit, name, leaseMs = DEFAULT_LEASE_MS } = opts as SlotOptions;
  assertPositiveInteger(limit, `${at}.limit`);
  assertSlotName(name, `${at}.name`);
  assertTimerMs(leaseMs, 'a positive integer', `${at}.leaseMs`);
  return { limit, name, leaseMs };
}

/** A slots' name: undefined, or a non-empty well-formed string (part of a key). */
export function assertSlotName(name: unknown, argument: string): asserts name is string | undefined {
  if (name === undefined) return;
  if (typeof name !== 'string' || name.length === 0) throw new TypeError(`${argument} must be a non-empty string, got ${describeValue(name)}`);
  assertWellFormed(name, argument);
}
