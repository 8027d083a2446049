import type { LocalAlgorithm, LocalVerdict } from './local-algorithm.js';

/** The permits of window `window` (aligned to multiples of windowMs) and of the one before it. */
interface SlidingWindowCounterState {
  window: number;
  current: number;
  previous: number;
}

/** The state's counts as seen from `now`'s window: a later window makes them the previous, or nothing. */
function counts(state: SlidingWindowCounterState | undefined, windowMs: number, now: number): SlidingWindowCounterState {
  const window = Math.floor(now / windowMs);
  if (state?.window === window) return state;
  return { window, current: 0, previous: state?.window === window - 1 ? state.current : 0 };
}

/** Whole permits that fit now (< 0 past the limit), and ms until the newest window stops weighing. */
function room(limit: number, windowMs: number, now: number, { window, current, previous }: SlidingWindowCounterState) {
  const elapsed = now - window * windowMs;
  const endsIn = windowMs - elapsed;
  return {
    fits: Math.floor((limit * windowMs - previous * (windowMs - elapsed) - current * windowMs) / windowMs),
    resetMs: current > 0 ? endsIn + windowMs : previous > 0 ? endsIn : 0,
  };
}

/** ms until `permits`, which do not fit now, do (see swc_wait in sliding-window-counter.lua). */
function wait(limit: number, windowMs: number, permits: number, now: number, { window, current, previous }: SlidingWindowCounterState): number {
  const elapsed = now - window * windowMs;
  if (current + permits <= limit) return windowMs - Math.floor(((limit - current - permits) * windowMs) / previous) - elapsed;
  if (current === 0 || permits > limit) return 2 * windowMs - elapsed;
  return 2 * windowMs - elapsed - Math.floor(((limit - permits) * windowMs) / current);
}

/** sliding-window-counter.lua on the process clock: the window's count plus the previous one's, weighted. */
export const localSlidingWindowCounter: LocalAlgorithm<SlidingWindowCounterState> = {
  check(state, limit, windowMs, permits, now): LocalVerdict {
    const seen = counts(state, windowMs, now);
    const { fits, resetMs } = room(limit, windowMs, now, seen);
    const allowed = permits <= fits;
    return { allowed, remaining: fits, retryAfterMs: allowed ? 0 : wait(limit, windowMs, permits, now, seen), resetMs };
  },

  commit(state, limit, windowMs, permits, now) {
    const seen = counts(state, windowMs, now);
    const next = { ...seen, current: seen.current + permits };
    const { fits, resetMs } = room(limit, windowMs, now, next);
    return { state: next, remaining: fits, resetMs };
  },

  // the newest window weighs until the end of the one after it
  expiresAt: (state, _limit, windowMs) => (state.window + 2) * windowMs,
};
