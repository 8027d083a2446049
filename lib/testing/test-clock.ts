/**
 * The clock of `RedisLimitModule.forTesting()`: the in-memory server's time, which stands still
 * until a test moves it. `advance(ms)` moves every window, ttl, lockout, delay, lease and schedule
 * forward at once: the next decision, read or claim sees the new time, and the module's own timers
 * (consumers waiting for a due message, the expiring hashes' sweeper) look again at once.
 * Inject it from a testing module: `moduleRef.get(RedisLimitTestClock)`.
 */
export class RedisLimitTestClock {
  /** It moves only when a test moves it (see redis/clock.ts). */
  readonly standsStill = true;
  private at: number;
  private readonly listeners = new Set<() => void>();

  /** @param startMs - the time it starts at, in ms since the epoch (default: the host's now) */
  constructor(startMs: number = Date.now()) {
    if (!Number.isSafeInteger(startMs) || startMs < 0)
      throw new RangeError(`RedisLimitTestClock: startMs must be a non-negative integer (ms since the epoch); got ${String(startMs)}`);
    this.at = startMs;
  }

  /** The time now, in ms since the epoch. */
  now(): number {
    return this.at;
  }

  /**
   * Moves the clock forward by `ms`.
   * @throws RangeError when `ms` is not a non-negative integer
   */
  advance(ms: number): void {
    if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`RedisLimitTestClock.advance: ms must be a non-negative integer; got ${String(ms)}`);
    this.at += ms;
    for (const listener of [...this.listeners]) listener();
  }

  /** Calls `listener` after every advance; returns what stops it (the module's timers). */
  onAdvance(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
