import type { RateLimitAlgorithm, RateLimitDecision } from '../../lib/index.js';

// Reference models of the rate-limit algorithms, written from the documented semantics (API.md):
// what Redis's scripts (test/integration/rate-limit-model.spec.ts) and the in-process limiter of
// failMode 'local' (test/unit/local-limiter.spec.ts) are both checked against.

/** A decision without `limit`, which only echoes the policy. */
export type Verdict = Omit<RateLimitDecision, 'limit'>;

export interface LimitModel {
  advance(ms: number): void;
  /** The verdict on `permits` now; charged only when `charge` and allowed. */
  decide(permits: number, charge: boolean): Verdict;
  reset(): void;
}

/** Windows are [k·windowMs, (k+1)·windowMs) since the epoch; each starts empty. */
export class FixedWindowModel implements LimitModel {
  private used = 0;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private now: number,
  ) {}

  private windowEnd(): number {
    return (Math.floor(this.now / this.windowMs) + 1) * this.windowMs;
  }

  advance(ms: number): void {
    if (this.now + ms >= this.windowEnd()) this.used = 0;
    this.now += ms;
  }

  decide(permits: number, charge: boolean): Verdict {
    const allowed = this.used + permits <= this.limit;
    if (allowed && charge) this.used += permits;
    const endsIn = this.windowEnd() - this.now;
    return { allowed, remaining: this.limit - this.used, retryAfterMs: allowed ? 0 : endsIn, resetMs: this.used > 0 ? endsIn : 0 };
  }

  reset(): void {
    this.used = 0;
  }
}

/** A grant of p permits at t counts against every request before t + windowMs. */
export class SlidingWindowModel implements LimitModel {
  /** Live grants, oldest first. */
  private grants: { at: number; permits: number }[] = [];

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private now: number,
  ) {}

  advance(ms: number): void {
    this.now += ms;
    this.grants = this.grants.filter((g) => g.at + this.windowMs > this.now);
  }

  decide(permits: number, charge: boolean): Verdict {
    const used = this.used();
    const allowed = used + permits <= this.limit;
    if (allowed && charge) this.grants.push({ at: this.now, permits });
    // it fits once (used + permits - limit) permits of the oldest grants have aged out
    let retryAfterMs = 0;
    for (let need = used + permits - this.limit, i = 0; !allowed && need > 0; i++) {
      need -= this.grants[i]!.permits;
      retryAfterMs = this.grants[i]!.at + this.windowMs - this.now;
    }
    const newest = this.grants.at(-1);
    return { allowed, remaining: this.limit - this.used(), retryAfterMs, resetMs: newest === undefined ? 0 : newest.at + this.windowMs - this.now };
  }

  reset(): void {
    this.grants = [];
  }

  /** What Redis must hold: one entry per live grant, whatever its permits (sorted). */
  stored(): number[] {
    return this.grants.map((g) => g.permits).sort((a, b) => a - b);
  }

  private used(): number {
    return this.grants.reduce((sum, g) => sum + g.permits, 0);
  }
}

/** `limit` tokens refilled evenly over windowMs (a funnel: capacity over leakingDurationMs), in
 * units of 1/windowMs token: a token is windowMs units and each ms adds `limit` units. */
export class TokenBucketModel implements LimitModel {
  private units: number;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {
    this.units = this.full;
  }

  private get full(): number {
    return this.limit * this.windowMs;
  }

  advance(ms: number): void {
    this.units = Math.min(this.full, this.units + ms * this.limit);
  }

  decide(permits: number, charge: boolean): Verdict {
    const cost = permits * this.windowMs;
    const allowed = this.units >= cost;
    if (allowed && charge) this.units -= cost;
    return {
      allowed,
      remaining: Math.floor(this.units / this.windowMs),
      retryAfterMs: allowed ? 0 : Math.ceil((cost - this.units) / this.limit),
      resetMs: Math.ceil((this.full - this.units) / this.limit),
    };
  }

  reset(): void {
    this.units = this.full;
  }
}

export type Kind = RateLimitAlgorithm | 'funnel';

/** One limit: a policy, or a funnel (limit = capacity, windowMs = leakingDurationMs). */
export interface LimitConfig {
  kind: Kind;
  limit: number;
  windowMs: number;
  scope?: string | undefined;
}

export function modelOf({ kind, limit, windowMs }: LimitConfig, now: number): LimitModel {
  if (kind === 'fixed-window') return new FixedWindowModel(limit, windowMs, now);
  if (kind === 'sliding-window') return new SlidingWindowModel(limit, windowMs, now);
  return new TokenBucketModel(limit, windowMs);
}
