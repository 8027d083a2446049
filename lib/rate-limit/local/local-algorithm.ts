/** One limit's verdict, as decide.lua gives it (RateLimitDecision without the echoed `limit`). */
export interface LocalVerdict {
  allowed: boolean;
  remaining: number;
  retryAfterMs: number;
  resetMs: number;
}

/**
 * One algorithm on the process clock, with the semantics of its Lua include (see
 * lua/rate-limit/*.lua): `check` judges `permits` against a counter's state (undefined: a counter
 * never used or expired) and may tidy it (aged-out grants); `commit` charges an allowed check.
 * `expiresAt` is when the state says no more than a fresh counter would: it can be dropped then.
 */
export interface LocalAlgorithm<State> {
  check(state: State | undefined, limit: number, windowMs: number, permits: number, now: number): LocalVerdict;
  commit(state: State | undefined, limit: number, windowMs: number, permits: number, now: number): { state: State; remaining: number; resetMs: number };
  expiresAt(state: State, limit: number, windowMs: number): number;
}
