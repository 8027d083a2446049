import type { LocalAlgorithm } from './local-algorithm.js';

/** Live grants, oldest first (one entry per ms that granted), and the permits they hold: at most
 * min(limit, windowMs) entries. */
interface SlidingWindowState {
  grants: { at: number; permits: number }[];
  used: number;
}

/** Drops the grants that aged out by `now` (a grant at t counts until t + windowMs). */
function prune(state: SlidingWindowState, windowMs: number, now: number): void {
  let gone = 0;
  while (gone < state.grants.length && state.grants[gone]!.at + windowMs <= now) state.used -= state.grants[gone++]!.permits;
  if (gone > 0) state.grants.splice(0, gone);
}

/** sliding-window.lua on the process clock: exact, no span of windowMs holds more than `limit`. */
export const localSlidingWindow: LocalAlgorithm<SlidingWindowState> = {
  check(state, limit, windowMs, permits, now) {
    if (state !== undefined) prune(state, windowMs, now);
    const grants = state?.grants ?? [];
    const used = state?.used ?? 0;
    const allowed = used + permits <= limit;
    // it fits once (used + permits - limit) permits of the oldest grants have aged out
    let retryAfterMs = 0;
    for (let need = used + permits - limit, i = 0; !allowed && need > 0 && i < grants.length; i++) {
      need -= grants[i]!.permits;
      retryAfterMs = grants[i]!.at + windowMs - now;
    }
    const newest = grants.at(-1);
    return { allowed, remaining: limit - used, retryAfterMs, resetMs: newest === undefined ? 0 : newest.at + windowMs - now };
  },

  commit(state, limit, windowMs, permits, now) {
    const next = state ?? { grants: [], used: 0 };
    prune(next, windowMs, now);
    // a clock that stepped back must not put this grant before the newest: grants stay in order
    const newest = next.grants.at(-1);
    const at = Math.max(now, newest?.at ?? now);
    // grants of one ms age out together: one entry holds them, so a flood costs entries per ms
    if (newest?.at === at) newest.permits += permits;
    else next.grants.push({ at, permits });
    next.used += permits;
    return { state: next, remaining: limit - next.used, resetMs: at + windowMs - now };
  },

  expiresAt: (state, _limit, windowMs) => (state.grants.at(-1)?.at ?? 0) + windowMs,
};
