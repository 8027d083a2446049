import type { LocalAlgorithm } from './local-algorithm.js';

/** Tokens in units of 1/windowMs token (exact integers, as token-bucket.lua keeps them), at `at`. */
interface TokenBucketState {
  units: number;
  at: number;
}

/** The bucket's units now: refilled at `limit` units a ms since the last charge, up to full. */
function unitsNow(state: TokenBucketState | undefined, limit: number, windowMs: number, now: number): number {
  const full = limit * windowMs;
  return state === undefined ? full : Math.min(full, state.units + Math.max(0, now - state.at) * limit);
}

/** token-bucket.lua (and funnels) on the process clock: `limit` tokens refilled over windowMs. */
export const localTokenBucket: LocalAlgorithm<TokenBucketState> = {
  check(state, limit, windowMs, permits, now) {
    const units = unitsNow(state, limit, windowMs, now);
    const cost = permits * windowMs;
    const allowed = units >= cost;
    return {
      allowed,
      remaining: Math.floor(units / windowMs),
      retryAfterMs: allowed ? 0 : Math.ceil((cost - units) / limit),
      resetMs: Math.ceil((limit * windowMs - units) / limit),
    };
  },

  commit(state, limit, windowMs, permits, now) {
    const units = unitsNow(state, limit, windowMs, now) - permits * windowMs;
    return { state: { units, at: now }, remaining: Math.floor(units / windowMs), resetMs: Math.ceil((limit * windowMs - units) / limit) };
  },

  // full again: the same as a bucket never used
  expiresAt: (state, limit, windowMs) => state.at + Math.ceil((limit * windowMs - state.units) / limit),
};
