import type { Clock } from '../redis/clock.js';

/**
 * When a consumer claims next: one local timer, set for the earliest due time it knows of (server
 * ms, from claim replies, wake-up hints and retries), moved only ever earlier until a claim's
 * reply replans it. Server times become local delays through the offset between the two clocks
 * that the last claim measured.
 */
export class WakeSchedule {
  private timer: NodeJS.Timeout | undefined;
  /** The server time the timer is set for; Infinity when none is. */
  private wakeAt = Infinity;
  /** The earliest due time announced while a claim was in flight. */
  private hinted = Infinity;
  /** server clock − local clock, in ms, from the last claim. */
  private offsetMs = 0;
  private stopped = false;

  constructor(
    /** Called when the planned time comes. */
    private readonly wake: () => void,
    /** Whether a claim is in flight: hints then wait for its reply (see `hint`). */
    private readonly claiming: () => boolean,
    /** The local clock (the connection's). */
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  /** The server's clock now, as the last claim measured it. */
  serverNow(): number {
    return this.clock.now() + this.offsetMs;
  }

  /** A claim replied at `serverMs` on the server's clock. */
  synchronize(serverMs: number): void {
    this.offsetMs = serverMs - this.clock.now();
  }

  /** Work is due at `serverMs`: wake then, if that is earlier than planned. */
  hint(serverMs: number): void {
    // a claim in flight may have read the queue before this message arrived: keep the hint for
    // when its reply plans the next wake-up
    if (this.claiming()) this.hinted = Math.min(this.hinted, serverMs);
    else this.at(serverMs);
  }

  /** Wakes at `serverMs` if that is earlier than planned. */
  at(serverMs: number): void {
    if (this.stopped || serverMs >= this.wakeAt) return;
    clearTimeout(this.timer);
    this.wakeAt = serverMs;
    const delay = Math.max(0, serverMs - this.serverNow());
    this.timer = setTimeout(() => this.wake(), delay);
    this.timer.unref();
  }

  /** Replaces the plan by `serverMs`, or by a hint received meanwhile if earlier. */
  replan(serverMs: number): void {
    const at = Math.min(serverMs, this.hinted);
    this.hinted = Infinity;
    this.wakeAt = Infinity;
    this.at(at);
  }

  /** Forgets the plan: a claim starts now. Hints kept for its reply stay. */
  cancel(): void {
    clearTimeout(this.timer);
    this.wakeAt = Infinity;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
