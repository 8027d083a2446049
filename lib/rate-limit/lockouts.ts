import type { StackedLimit } from './rate-limiter.service.js';

/** Counters remembered at most; past it the oldest is forgotten (it may then be blocked again). */
const MAX_LOCKOUTS = 10_000;

/**
 * The lockouts (blockMs) this process started and that have not ended, by counter. A decision
 * does not say whether a refusal came from a lockout or from the counter, so without this every
 * refusal during a lockout would block again: the lockout would never end while a client keeps
 * knocking, and each knock would cost a Redis call and clear every process's refusal cache.
 * Per process: another instance's first refusal during a lockout blocks once more (each
 * instance at most once per lockout); a `reset` lifts the block in Redis, not here, so a
 * refusal right after one does not lock out again before this lockout would have ended.
 *
 * The lockout's end in Redis is the block call's server time + blockMs, later than this process
 * knew when it asked: the end kept here is re-taken when the block call returns (never before
 * Redis's), and a refusal is judged by when its decision was asked, not when it came back. So a
 * knock that Redis refused as locked out never blocks again, however slow either call was; the
 * cost is that a counter refusal asked within one round trip of the end starts no lockout.
 */
export class Lockouts {
  private readonly ends = new Map<string, number>();

  constructor(
    private readonly max = MAX_LOCKOUTS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Whether a refusal of `limit`, whose decision was asked at `askedAt` (this clock), should start
   * a lockout: false if one this process started lasted then. */
  shouldBlock(limit: StackedLimit, askedAt = this.now()): boolean {
    const counter = counterOf(limit);
    const end = this.ends.get(counter);
    if (end === undefined) return true;
    if (end > askedAt) return false;
    this.ends.delete(counter);
    return true;
  }

  /** Forgets a lockout that could not be started (the block failed). */
  forget(limit: StackedLimit): void {
    this.ends.delete(counterOf(limit));
  }

  /** The block call of `limit` returned: its lockout ends no sooner than `durationMs` from now. */
  blocked(limit: StackedLimit, durationMs: number): void {
    const counter = counterOf(limit);
    if (this.ends.has(counter)) this.ends.set(counter, Math.max(this.ends.get(counter)!, this.now() + durationMs));
  }

  /** Remembers a lockout of `limit` for `durationMs` from now (before its block call). */
  started(limit: StackedLimit, durationMs: number): void {
    const counter = counterOf(limit);
    this.ends.delete(counter); // re-inserted last: the map's order is the order of ends
    if (this.ends.size >= this.max) this.ends.delete(this.ends.keys().next().value!);
    this.ends.set(counter, this.now() + durationMs);
  }
}

// A counter is its scope, key, algorithm and window (a changed limit keeps it). The key, the one
// part a user chooses, comes last, after the scope's length: no two counters share a string.
function counterOf({ key, scope = '', policy, funnel }: StackedLimit): string {
  const window = policy?.windowMs ?? funnel?.leakingDurationMs;
  return `${policy?.algorithm ?? (funnel ? 'funnel' : '')}:${window}:${scope.length}:${scope}${key}`;
}
