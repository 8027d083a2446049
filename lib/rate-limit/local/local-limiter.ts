import type { CheckedLimit } from '../checked-limit.js';
import type { StackDecision } from '../decision.types.js';
import type { RateLimitDecision, LimitSpec } from '../policy.js';
import { counterKind } from '../policy.js';
import type { LocalAlgorithm, LocalVerdict } from './local-algorithm.js';
import { localFixedWindow } from './local-fixed-window.js';
import { localSlidingWindow } from './local-sliding-window.js';
import { localSlidingWindowCounter } from './local-sliding-window-counter.js';
import { localTokenBucket } from './local-token-bucket.js';
import { OwedGrants } from './local-owed.js';

/**
 * Counters one process keeps at most (least recently used dropped first). Each is a few numbers,
 * a sliding window's one entry per ms that granted (at most its local limit). A counter dropped
 * while it still counts forgets its grants, so only more than this many keys busy in one window
 * can grant past a limit.
 */
export const LOCAL_MAX_KEYS = 10_000;

const ALGORITHMS: Record<LimitSpec['algorithm'], LocalAlgorithm<unknown>> = {
  fw: localFixedWindow,
  sw: localSlidingWindow,
  sc: localSlidingWindowCounter,
  tb: localTokenBucket,
};

interface Counter {
  state: unknown;
  expiresAt: number;
}

/** A limit of the stack as this process counts it. */
interface LocalLimit {
  id: string;
  algorithm: LocalAlgorithm<unknown>;
  limit: number;
  windowMs: number;
  permits: number;
  /** The limit as decided, with its Redis numbers: what the grant is owed on. */
  target: CheckedLimit;
}

/**
 * The limits of failMode 'local': DecisionEngine.decide's algorithms and all-or-nothing
 * stacks, in this process's memory on its own clock, each `limit` divided by `divisor` (rounded
 * up, at least 1) so that `divisor` instances together grant about what Redis would. A request for
 * more permits than the divided limit is refused with a window's wait rather than a RangeError:
 * the same request is valid against Redis. Every grant is also owed to Redis (`owed`): what
 * LocalHandOver charges Redis's counters with once it answers again.
 */
export class LocalLimiter {
  /** Map order is use order: the first counter is the least recently used. */
  private readonly counters = new Map<string, Counter>();
  /** The grants Redis has not been charged with, counted with Redis's numbers. */
  readonly owed: OwedGrants;

  constructor(
    private readonly divisor: number,
    private readonly maxKeys = LOCAL_MAX_KEYS,
  ) {
    this.owed = new OwedGrants(maxKeys);
  }

  /** How many counters are held now. */
  get size(): number {
    return this.counters.size;
  }

  /** Decides a stack (already checked by the guard's plan) at `now`, ms on the process clock. */
  decide(stack: readonly CheckedLimit[], now = Date.now()): StackDecision {
    const limits = stack.map((limit) => this.localLimit(limit));
    const verdicts = limits.map((limit) => this.check(limit, now));
    const allowed = verdicts.every((v) => v.allowed);
    const decisions = limits.map((limit, i): RateLimitDecision => {
      const verdict = allowed ? { ...verdicts[i]!, ...this.commit(limit, now) } : verdicts[i]!;
      if (allowed) this.owed.add(limit.id, limit.target, limit.target.spec, limit.algorithm, limit.permits, now);
      return { ...verdict, limit: limit.limit, remaining: Math.max(0, verdict.remaining) };
    });
    return { allowed, retryAfterMs: Math.max(0, ...decisions.map((d) => d.retryAfterMs)), decisions };
  }

  private localLimit(target: CheckedLimit): LocalLimit {
    const { key, scope, spec, permits } = target;
    // the counter's identity is Redis's: scope, key, algorithm and window (see counterKind)
    const id = JSON.stringify([counterKind(spec), scope ?? null, key]);
    const limit = Math.max(1, Math.ceil(spec.limit / this.divisor));
    return { id, algorithm: ALGORITHMS[spec.algorithm], limit, windowMs: spec.windowMs, permits, target };
  }

  private check({ id, algorithm, limit, windowMs, permits }: LocalLimit, now: number): LocalVerdict {
    const verdict = algorithm.check(this.state(id, now), limit, windowMs, Math.min(permits, limit), now);
    // more than this process may ever grant at once: try again in a window (Redis may be back)
    return permits > limit ? { ...verdict, allowed: false, retryAfterMs: windowMs } : verdict;
  }

  private commit({ id, algorithm, limit, windowMs, permits }: LocalLimit, now: number): Pick<LocalVerdict, 'remaining' | 'resetMs'> {
    const { state, remaining, resetMs } = algorithm.commit(this.state(id, now), limit, windowMs, permits, now);
    this.counters.set(id, { state, expiresAt: algorithm.expiresAt(state, limit, windowMs) });
    if (this.counters.size > this.maxKeys) this.counters.delete(this.counters.keys().next().value!);
    return { remaining, resetMs };
  }

  /**
   * A counter's state, or undefined when it holds nothing a fresh one would not (then dropped).
   * Every look makes it the most recently used: a key refused again and again is the one whose
   * counter must not be dropped.
   */
  private state(id: string, now: number): unknown {
    const counter = this.counters.get(id);
    if (counter === undefined) return undefined;
    this.counters.delete(id);
    if (counter.expiresAt <= now) return undefined;
    this.counters.set(id, counter);
    return counter.state;
  }
}
