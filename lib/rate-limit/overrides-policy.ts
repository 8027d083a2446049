import { assertKey } from '../redis/keys.js';
import type { LimitSpec } from './policy.js';
import { assertPositiveInteger, assertWellFormed, describeValue } from '../validation.js';

/** A runtime override of every limit with one `name`, as setOverride takes it and Redis keeps it. */
export interface LimitOverride {
  /** Permits per window (token bucket: bucket size; funnel: capacity). A positive integer. */
  limit: number;
  /** Window in ms (funnel: leakingDurationMs). A positive integer; absent: each limit keeps its own. */
  windowMs?: number;
}

/** An override as `overrides()` reports it: `windowMs` is the window that applies (see docs). */
export interface AppliedOverride {
  /** Permits per window (token bucket: bucket size; funnel: capacity). */
  limit: number;
  /** Window in ms: the override's own, else the declared one (0 when none is known here). */
  windowMs: number;
}

const OPTIONS = ['limit', 'windowMs'];

/** setOverride's arguments, checked at the edge: the override to store, or null to remove it. */
export function assertOverride(name: unknown, policy: unknown): LimitOverride | null {
  assertKey(name, 'name');
  assertWellFormed(name, 'name');
  if (policy === null) return null;
  if (typeof policy !== 'object' || policy === undefined) {
    throw new TypeError(`policy must be an object { limit, windowMs? } or null, got ${describeValue(policy)}`);
  }
  const unknown = Object.keys(policy).find((option) => !OPTIONS.includes(option));
  if (unknown !== undefined) throw new TypeError(`policy.${unknown} is not an option (${OPTIONS.join(', ')})`);
  const { limit, windowMs } = policy as Record<string, unknown>;
  assertPositiveInteger(limit, 'policy.limit');
  if (windowMs === undefined) return { limit };
  assertPositiveInteger(windowMs, 'policy.windowMs');
  return { limit, windowMs };
}

/** How Redis keeps an override: the hash field's value. */
export const encodeOverride = (override: LimitOverride): string => JSON.stringify(override);

/** A stored override, or undefined when the value is not one (written by hand, or by a newer version). */
export function decodeOverride(text: string): LimitOverride | undefined {
  try {
    return assertOverride('stored', JSON.parse(text)) ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * A limit's spec under an override: its limit, and its window unless `keepWindow` (another limit
 * of the same name and kind on the route, which one window would merge into one counter). The
 * algorithm stays; a changed window is another counter (the key holds it), a changed limit is not.
 */
export function overriddenSpec(spec: LimitSpec, override: LimitOverride, keepWindow: boolean): LimitSpec {
  const windowMs = override.windowMs === undefined || keepWindow ? spec.windowMs : override.windowMs;
  return { kind: spec.kind, algorithm: spec.algorithm, limit: override.limit, windowMs };
}
