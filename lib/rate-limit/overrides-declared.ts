import type { LimitOverride } from './overrides-policy.js';
import { countsScaled, KIND_NAMES, type LimitSpec, type RateLimitAlgorithm } from './policy.js';
import { describeValue } from '../validation.js';

/** A declared limit of a name, as `RateLimiterService.namedLimits()` lists it. */
export interface NamedLimit {
  /** Where it is declared: the route (`QuotesController.get`) and the decorator (`@RateLimit(#1)`),
   * joined by ': '. */
  at: string;
  algorithm: RateLimitAlgorithm | 'funnel';
  /** Permits per window (funnel: capacity) as declared; absent where a user tier decides it per
   * request. */
  limit?: number;
  /** Window in ms (funnel: leakingDurationMs) as declared; absent where a user tier decides it. */
  windowMs?: number;
}

/** One limit of the app that carries a name, as an override of that name will meet it. */
export interface DeclaredLimit {
  /** Where it is declared: the route (`QuotesController.get`) and the decorator (`@RateLimit(#1)`),
   * joined by ': '. */
  at: string;
  kind: LimitSpec['kind'];
  /** Undefined for a user tier's limit (a function). */
  limit: number | undefined;
  /** Undefined for a user tier's window (a function). */
  windowMs: number | undefined;
  /** Undefined for a cost function (checked per request, as with tiers). */
  cost: number | undefined;
  /** Another limit of the same name and kind sits on the same route: it keeps its window. */
  keepWindow: boolean;
}

/** What an override meets in one limit: the numbers known where it is judged (start-up, or a
 * request for what a tier or cost function resolves), undefined where unknown. */
export type OverrideTarget = Pick<DeclaredLimit, 'at' | 'kind' | 'windowMs' | 'cost' | 'keepWindow'>;

/**
 * Why `limit` cannot take `override`, or undefined when it can: the one rule for an override,
 * applied by setOverride before it stores one, by every instance to what it reads from Redis
 * (whoever wrote it), and per request to what only a request knows (a tier's window, a cost
 * function's permits). Refused: a limit below the cost or quota (never granted), one window for
 * two limits of a route (one counter charged twice), a bucket whose limit × window is above 2^53.
 */
export function overrideRefusal(name: string, limit: OverrideTarget, override: LimitOverride): RangeError | undefined {
  if (limit.cost !== undefined && limit.cost > override.limit) {
    return new RangeError(`policy.limit (${override.limit}) is below the cost ${limit.cost} of ${limit.at}: it could never be granted`);
  }
  if (override.windowMs !== undefined && limit.keepWindow) {
    return new RangeError(
      `policy.windowMs: ${limit.at} has another limit named ${describeValue(name)} of its kind, which one window would make one counter; override the limit only`,
    );
  }
  const windowMs = override.windowMs ?? limit.windowMs;
  if ((limit.kind === 'fn' || countsScaled(limit.kind)) && windowMs !== undefined && override.limit * windowMs > Number.MAX_SAFE_INTEGER) {
    return new RangeError(`policy: limit × window (${override.limit} × ${windowMs}) of ${limit.at} is above 2^53 and cannot be exact`);
  }
  return undefined;
}

/**
 * The names this app's limits carry (decorators and defaultLimits), filled as route plans are
 * compiled: what setOverride checks an override against, and where overrides() finds the window
 * of an override that names none.
 */
export class DeclaredNames {
  private readonly byName = new Map<string, Map<string, DeclaredLimit>>();

  get size(): number {
    return this.byName.size;
  }

  add(name: string, limit: DeclaredLimit): void {
    let limits = this.byName.get(name);
    if (limits === undefined) this.byName.set(name, (limits = new Map<string, DeclaredLimit>()));
    limits.set(limit.at, limit);
  }

  /** Some limit of this app carries `name`. */
  has(name: string): boolean {
    return this.byName.has(name);
  }

  /**
   * Throws unless every limit of `name` can take `override` (see overrideRefusal). A name no limit
   * of this app carries passes: another process (an admin app, a worker) may set an override for
   * the instances that declare it, which check it against their own limits when they read it.
   */
  assertApplies(name: string, override: LimitOverride): void {
    const refusal = this.refusal(name, override);
    if (refusal !== undefined) throw refusal;
  }

  /** Why some limit of `name` cannot take `override`, or undefined when every one can (or none
   * carries the name here). */
  refusal(name: string, override: LimitOverride): RangeError | undefined {
    for (const limit of this.byName.get(name)?.values() ?? []) {
      const refusal = overrideRefusal(name, limit, override);
      if (refusal !== undefined) return refusal;
    }
    return undefined;
  }

  /** Every name with its declared limits, names in the order first met. */
  list(): Record<string, NamedLimit[]> {
    return Object.fromEntries(
      [...this.byName].map(([name, limits]) => [
        name,
        [...limits.values()].map(({ at, kind, limit, windowMs }) => ({
          at,
          algorithm: KIND_NAMES[kind],
          ...(limit === undefined ? {} : { limit }),
          ...(windowMs === undefined ? {} : { windowMs }),
        })),
      ]),
    );
  }

  /**
   * The window an override without one applies with: the declared window, the shortest where
   * the name's limits differ, 0 where none is a number known here (tiers, or a name this app
   * does not declare).
   */
  windowOf(name: string): number {
    const windows = [...(this.byName.get(name)?.values() ?? [])].flatMap((limit) => (limit.windowMs === undefined ? [] : [limit.windowMs]));
    return windows.length === 0 ? 0 : Math.min(...windows);
  }
}
