/**
 * The time the module's own timers and caches go by (a remembered refusal's end, a consumer's
 * next wake-up, an override's lapse, the sweeper's plan). The system's, unless the client brings
 * its own: the in-memory engine of `RedisLimitModule.forTesting()` does, so that moving its server
 * time moves these too, and wakes what waits on them.
 */
export interface Clock {
  /** ms since the epoch. */
  now(): number;
  /** Calls `listener` whenever the time jumps forward (never, on the system clock); returns what
   * stops it. */
  onAdvance(listener: () => void): () => void;
  /** True for a clock that moves only when told (forTesting's): no time passes between two calls,
   * so nothing need allow for it. */
  readonly standsStill: boolean;
}

/** The system clock, monotonic: performance.now() from the process's start, as epoch ms. */
export const SYSTEM_CLOCK: Clock = {
  now: () => performance.timeOrigin + performance.now(),
  onAdvance: () => () => undefined,
  standsStill: false,
};

/** The clock a client brings (duck-typed: `clock` with now and onAdvance), else the system's. */
export function clockOf(client: unknown): Clock {
  const clock = (client as { clock?: Partial<Clock> } | undefined)?.clock;
  if (typeof clock?.now !== 'function' || typeof clock.onAdvance !== 'function') return SYSTEM_CLOCK;
  return { now: clock.now.bind(clock), onAdvance: clock.onAdvance.bind(clock), standsStill: clock.standsStill === true };
}

/** Resolves once `ms` have passed on `clock`: after a timer of `ms`, or as soon as a test clock is
 * moved that far, whichever comes first. */
export function sleepOn(clock: Clock, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const until = clock.now() + ms;
    const done = (): void => {
      clearTimeout(timer);
      stop();
      resolve();
    };
    const timer = setTimeout(done, ms);
    const stop = clock.onAdvance(() => {
      if (clock.now() >= until) done();
    });
  });
}
