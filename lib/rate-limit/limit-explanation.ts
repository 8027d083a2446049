import type { AppliedOverride } from './overrides-policy.js';
import type { NamedLimit } from './overrides-declared.js';
import { counterKind, KIND_NAMES, parseCounterKind, type LimitSpec, type RateLimitDecision } from './policy.js';

/** One counter of a name for a key, as `explain` reads it. */
export interface ExplainedCounter {
  spec: Omit<LimitSpec, 'limit'>;
  /** The limit it is decided by for this key; undefined when not known here. */
  limit: number | undefined;
  /** Why the limit is not known: a user tier decides it per request, or this process does not
   * declare such a limit of the name (an admin process). */
  unknown?: 'tier' | 'undeclared';
  /** The override that sets that limit, if one does. */
  override?: { limit: number; windowMs: number; forKey: boolean; expiresAt?: number };
}

/** Where a counter stands, from a peek (absent where no peek can say) and this process's cache. */
export interface CounterReading {
  decision?: RateLimitDecision;
  lockedOut?: boolean;
  /** The peek's limit when the counter's own is unknown: `used` is this less what remains. */
  probeLimit?: number;
  /** ms this process refuses it from its refusal cache without asking Redis. */
  cachedForMs?: number;
}

/** A limit large enough that no counter has used it, for reading a count whose limit is unknown. */
export const PROBE_LIMIT = 1_000_000_000;

const CODES = Object.fromEntries(Object.entries(KIND_NAMES).map(([code, name]) => [name, code])) as Record<NamedLimit['algorithm'], LimitSpec['kind']>;

/**
 * The counters of a name for a key: every kind (algorithm and window) any process has used under
 * the name (`used`, from CounterScopes) and every one its declared limits fix, each with the limit
 * that applies to this key: the key's own override, else the name's, where its window is the
 * counter's; else the declared one when the declarations agree on one.
 */
export function countersOf(used: readonly string[], declared: readonly NamedLimit[], own?: AppliedOverride, named?: AppliedOverride): ExplainedCounter[] {
  const kinds = new Set(used);
  for (const d of declared) if (d.windowMs !== undefined) kinds.add(counterKind({ kind: CODES[d.algorithm], algorithm: 'fw', limit: 0, windowMs: d.windowMs }));
  const counters: ExplainedCounter[] = [];
  for (const text of [...kinds].sort()) {
    const parsed = parseCounterKind(text);
    if (parsed === undefined) continue;
    const { kind, windowMs } = parsed;
    const spec = { kind, algorithm: kind === 'fn' ? 'tb' : kind, windowMs } as const;
    // an override's window is its own, else the declared one; 0 where neither is known here (a
    // process that declares nothing), and then it keeps each counter's window
    const override = [own, named].find((o) => o !== undefined && (o.windowMs === windowMs || o.windowMs === 0));
    if (override !== undefined) {
      const { limit, expiresAt } = override;
      counters.push({ spec, limit, override: { limit, windowMs, forKey: override === own, ...(expiresAt === undefined ? {} : { expiresAt }) } });
      continue;
    }
    const matching = declared.filter((d) => CODES[d.algorithm] === kind && d.windowMs === windowMs);
    const limits = new Set(matching.map((d) => d.limit));
    const [only] = limits;
    if (limits.size === 1 && only !== undefined) counters.push({ spec, limit: only });
    else {
      // a declared limit of this algorithm whose limit or window a tier resolves per request
      const tiered = declared.some((d) => CODES[d.algorithm] === kind && (d.windowMs === windowMs || d.windowMs === undefined));
      counters.push({ spec, limit: undefined, unknown: tiered ? 'tier' : 'undeclared' });
    }
  }
  return counters;
}

/** Whether a counter of this kind can be read with PROBE_LIMIT when its own limit is unknown: a
 * count of grants can; a bucket's level, or a weighted count, depends on the limit. */
export const readableWithoutLimit = (kind: LimitSpec['kind']): boolean => kind === 'fw' || kind === 'sw';

/** One sentence on one counter. */
export function explainCounter({ spec, limit, unknown, override }: ExplainedCounter, reading: CounterReading): string {
  const what = spec.kind === 'fn' ? `funnel, ${spec.windowMs} ms to leak` : `${KIND_NAMES[spec.kind]}, ${spec.windowMs} ms window`;
  const parts: string[] = [];
  const { decision } = reading;
  const unknownLimit = unknown === 'tier' ? 'a limit decided per request (a user tier)' : 'a limit this process does not declare';
  if (decision === undefined) {
    parts.push(`${what}: ${unknownLimit}, without which how much of it is used cannot be read`);
  } else {
    const of = limit ?? reading.probeLimit!;
    const used = Math.max(0, of - decision.remaining);
    parts.push(`${what}: ${used} of ${limit ?? unknownLimit} used`);
    if (reading.lockedOut) parts.push(`locked out for ${decision.retryAfterMs} ms more`);
    else if (limit !== undefined && decision.remaining === 0) parts.push(`refusing for ${decision.retryAfterMs} ms`);
    if (used > 0 && decision.resetMs > 0) parts.push(`back to full in ${decision.resetMs} ms`);
  }
  if (override !== undefined) {
    const until = override.expiresAt === undefined ? '' : ` until ${new Date(override.expiresAt).toISOString()}`;
    parts.push(`an override for ${override.forKey ? 'this key' : 'every key'} is in force: ${override.limit} per ${override.windowMs} ms${until}`);
  }
  if (reading.cachedForMs !== undefined) parts.push(`this process refuses it from its refusal cache for ${reading.cachedForMs} ms more, without asking Redis`);
  return `${parts.join('; ')}.`;
}
