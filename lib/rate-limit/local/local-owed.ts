import type { LimitSpec } from '../policy.js';
import type { CheckedLimit } from '../checked-limit.js';
import type { LocalAlgorithm } from './local-algorithm.js';

/**
 * One Redis counter's local grants not yet charged to Redis: the grants fed to the counter's own
 * algorithm with Redis's numbers (the declared limit, not the divided one), so what it still holds
 * is what Redis's counter would still hold of them.
 */
export interface OwedCounter {
  /** The counter's identity, as LocalLimiter names it. */
  id: string;
  /** The limit as decided: key, scope and spec (what the charge is made on). */
  target: CheckedLimit;
  spec: LimitSpec;
  algorithm: LocalAlgorithm<unknown>;
  state: unknown;
  /** When it owes nothing any more (its window ended, its grants aged out, its bucket refilled). */
  expiresAt: number;
}

/** What one counter still owes Redis: a charge of `permits` on `counter.target`. */
export interface OwedCharge {
  counter: OwedCounter;
  permits: number;
}

/**
 * What a counter still owes at `now`: the permits of its grants still inside their window (a fixed
 * window: those of the window still running; a sliding window: those younger than windowMs; a token
 * bucket or funnel: the tokens not refilled yet, in whole permits, rounded up).
 */
export function owedPermits({ algorithm, state, spec }: OwedCounter, now: number): number {
  return spec.limit - algorithm.check(state, spec.limit, spec.windowMs, 1, now).remaining;
}

/**
 * The permits failMode 'local' granted and Redis has not been charged with, per counter: at most
 * `maxKeys` counters (least recently granted dropped first), each dropped once it owes nothing.
 */
export class OwedGrants {
  /** Map order is grant order: the first counter is the least recently granted. */
  private readonly counters = new Map<string, OwedCounter>();

  constructor(private readonly maxKeys: number) {}

  /** How many counters owe something (or did, until looked at). */
  get size(): number {
    return this.counters.size;
  }

  /** Records `permits` granted locally at `now` on the counter `id` (limited by `target`). */
  add(id: string, target: CheckedLimit, spec: LimitSpec, algorithm: LocalAlgorithm<unknown>, permits: number, now: number): void {
    const held = this.counters.get(id);
    this.counters.delete(id);
    const state = algorithm.commit(held !== undefined && held.expiresAt > now ? held.state : undefined, spec.limit, spec.windowMs, permits, now).state;
    this.counters.set(id, { id, target, spec, algorithm, state, expiresAt: algorithm.expiresAt(state, spec.limit, spec.windowMs) });
    if (this.counters.size > this.maxKeys) this.counters.delete(this.counters.keys().next().value!);
  }

  /** Takes every counter out, with what each owes at `now`; those that owe nothing are dropped. */
  take(now: number): OwedCharge[] {
    const charges: OwedCharge[] = [];
    for (const counter of this.counters.values()) {
      const permits = counter.expiresAt > now ? owedPermits(counter, now) : 0;
      if (permits > 0) charges.push({ counter, permits });
    }
    this.counters.clear();
    return charges;
  }

  /**
   * Puts back a counter whose charge did not reach Redis: as it was, or, when its key was granted
   * again meanwhile, what it still owes at `now` added as a grant made now (later than the grants
   * were, so it counts a little longer: towards refusing).
   */
  restore(counter: OwedCounter, now: number): void {
    if (counter.expiresAt <= now) return;
    if (!this.counters.has(counter.id)) {
      if (this.counters.size < this.maxKeys) this.counters.set(counter.id, counter);
      return;
    }
    const permits = owedPermits(counter, now);
    if (permits > 0) this.add(counter.id, counter.target, counter.spec, counter.algorithm, permits, now);
  }
}
