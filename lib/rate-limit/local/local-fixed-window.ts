import type { LocalAlgorithm } from './local-algorithm.js';

/** The permits granted in one window, aligned to multiples of windowMs since the epoch. */
interface FixedWindowState {
  window: number;
  used: number;
}

const windowOf = (now: number, windowMs: number) => Math.floor(now / windowMs);

/** fixed-window.lua on the process clock: a counter per aligned window, empty when it ends. */
export const localFixedWindow: LocalAlgorithm<FixedWindowState> = {
  check(state, limit, windowMs, permits, now) {
    const window = windowOf(now, windowMs);
    const endsIn = (window + 1) * windowMs - now;
    const used = state?.window === window ? state.used : 0;
    const allowed = used + permits <= limit;
    return { allowed, remaining: limit - used, retryAfterMs: allowed ? 0 : endsIn, resetMs: used > 0 ? endsIn : 0 };
  },

  commit(state, limit, windowMs, permits, now) {
    const window = windowOf(now, windowMs);
    const used = (state?.window === window ? state.used : 0) + permits;
    return { state: { window, used }, remaining: limit - used, resetMs: (window + 1) * windowMs - now };
  },

  expiresAt: (state, _limit, windowMs) => (state.window + 1) * windowMs,
};
