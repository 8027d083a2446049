import { assertKey } from '../redis/keys.js';
import type { LimitSpec } from './policy.js';
import { assertKnownOptions, assertPositiveInteger, assertWellFormed, describeValue } from '../validation.js';

/** A runtime override of every limit with one `name` (or of one key of them): what applies. */
export interface LimitOverride {
  /** Permits per window (token bucket: bucket size; funnel: capacity). A positive integer. */
  limit: number;
  /** Window in ms (funnel: leakingDurationMs). A positive integer; absent: each limit keeps its own. */
  windowMs?: number;
}

/** setOverride's policy: the override, and whom it is for and for how long. */
export interface OverridePolicy extends LimitOverride {
  /** Only for this resolved key (what the limits' `key` function or tracker gives); it beats the
   * per-name override. A non-empty string. */
  key?: string;
  /** It lapses by itself this many ms from now (the Redis server's clock). A positive integer. */
  ttlMs?: number;
}

/** An override as `overrides()` reports it: `windowMs` is the window that applies (see docs). */
export interface AppliedOverride {
  /** Permits per window (token bucket: bucket size; funnel: capacity). */
  limit: number;
  /** Window in ms: the override's own, else the declared one (0 when none is known here). */
  windowMs: number;
  /** A per-key override: the limits' name (the entry's own name is `<name>:<key>`). */
  name?: string;
  /** A per-key override: the resolved key it applies to. */
  key?: string;
  /** When it lapses (ms since the epoch, the Redis server's clock); absent: never. */
  expiresAt?: number;
}

/** setOverride's arguments, checked at the edge. */
export interface CheckedOverride {
  /** null: remove it. */
  override: LimitOverride | null;
  key: string | undefined;
  ttlMs: number | undefined;
}

const OPTIONS = ['limit', 'windowMs', 'key', 'ttlMs'];

/** setOverride's arguments, checked at the edge: the override to store (or null to remove it),
 * for which key, lapsing when. `opts.key` says which key's override a null removes. */
export function assertOverride(name: unknown, policy: unknown, opts?: unknown): CheckedOverride {
  assertKey(name, 'name');
  assertWellFormed(name, 'name');
  if (policy === null) return { override: null, key: removedKey(opts), ttlMs: undefined };
  if (typeof policy !== 'object' || policy === undefined) {
    throw new TypeError(`policy must be an object { limit, windowMs?, key?, ttlMs? } or null, got ${describeValue(policy)}`);
  }
  if (opts !== undefined)
    throw new TypeError(`opts is only for removing a per-key override (policy null); give policy.key instead, got ${describeValue(opts)}`);
  assertKnownOptions(policy, OPTIONS, 'policy');
  const { limit, windowMs, key, ttlMs } = policy as Record<string, unknown>;
  assertPositiveInteger(limit, 'policy.limit');
  if (windowMs !== undefined) assertPositiveInteger(windowMs, 'policy.windowMs');
  if (key !== undefined) {
    assertKey(key, 'policy.key');
    assertWellFormed(key, 'policy.key');
  }
  if (ttlMs !== undefined) assertPositiveInteger(ttlMs, 'policy.ttlMs');
  return { override: windowMs === undefined ? { limit } : { limit, windowMs }, key, ttlMs };
}

function removedKey(opts: unknown): string | undefined {
  if (opts === undefined) return undefined;
  if (typeof opts !== 'object' || opts === null) throw new TypeError(`opts must be an object { key } or undefined, got ${describeValue(opts)}`);
  assertKnownOptions(opts, ['key'], 'opts');
  const { key } = opts as Record<string, unknown>;
  if (key === undefined) return undefined;
  assertKey(key, 'opts.key');
  assertWellFormed(key, 'opts.key');
  return key;
}

/** A stored override as read: what applies, and when it lapses (server ms; absent: never). */
export interface StoredOverride {
  override: LimitOverride;
  expiresAt?: number;
}

/** A stored override (override-set.lua writes them), or undefined when the value is not one
 * (written by hand, or by a newer version). */
export function decodeOverride(text: string): StoredOverride | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    // what setOverride would take, plus the time it lapses (override-set.lua adds it)
    const { expiresAt, ...policy } = value as Record<string, unknown>;
    if (expiresAt !== undefined) assertPositiveInteger(expiresAt, 'expiresAt');
    const { override, key, ttlMs } = assertOverride('stored', policy);
    if (override === null || key !== undefined || ttlMs !== undefined) return undefined;
    return expiresAt === undefined ? { override } : { override, expiresAt };
  } catch {
    return undefined;
  }
}

/** A per-key override's field in Redis: both parts, unambiguously. */
export const keyedField = (name: string, key: string): string => JSON.stringify([name, key]);

/** The name and key of a per-key override's field, or undefined when it is not one. */
export function parseKeyedField(field: string): { name: string; key: string } | undefined {
  try {
    const parts: unknown = JSON.parse(field);
    if (!Array.isArray(parts) || parts.length !== 2) return undefined;
    const [name, key] = parts as unknown[];
    return typeof name === 'string' && typeof key === 'string' && name !== '' && key !== '' ? { name, key } : undefined;
  } catch {
    return undefined;
  }
}

/** How a log line shows an override. */
export const describeOverride = (override: LimitOverride): string => JSON.stringify(override);

/**
 * A limit's spec under an override: its limit, and its window unless `keepWindow` (another limit
 * of the same name and kind on the route, which one window would merge into one counter). The
 * algorithm stays; a changed window is another counter (the key holds it), a changed limit is not.
 */
export function overriddenSpec(spec: LimitSpec, override: LimitOverride, keepWindow: boolean): LimitSpec {
  const windowMs = override.windowMs === undefined || keepWindow ? spec.windowMs : override.windowMs;
  return { kind: spec.kind, algorithm: spec.algorithm, limit: override.limit, windowMs };
}
