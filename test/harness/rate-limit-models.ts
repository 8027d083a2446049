import type { RateLimitAlgorithm, RateLimitDecision } from '../../lib/index.js';

// Reference models of the rate-limit algorithms, written from the documented semantics (API.md):
// what Redis's scripts (test/integration/rate-limit-model.spec.ts) and the in-process limiter of
// failMode 'local' (test/unit/local-limiter.spec.ts) are both checked against.

/** A decision without `limit`, which only echoes the policy. */
export type Verdict = Omit<RateLimitDecision, 'limit'>;

export interface LimitModel {
  advance(ms: number): void;
  /** The verdict on `permits` now; charged only when `charge` and allowed (then `lastGrant` is
   * the grant it made). */
  decide(permits: number, charge: boolean): Verdict;
  /** Forgets everything, a block included. */
  reset(): void;
  lastGrant: ModelGrant | undefined;
  /** Gives back up to `permits` of `grant`; how many came back. */
  refund(grant: ModelGrant, permits: number): number;
  /** Charges `permits` even past the limit; the verdict on one permit after. */
  penalize(permits: number): Verdict;
  /** Refuses everything for `ms` from now (a longer block stays). */
  block(ms: number): void;
}

/** A grant as the models track it: what is left of it to give back, in the counter's life. */
export interface ModelGrant {
  left: number;
  /** The counter's life it was made in: a reset, a window end or a full bucket ends a life. */
  life: number;
  at: number;
  /** Token bucket: units left right after it, and units given back in its life before it. */
  after?: number;
  givenBefore?: number;
}

/** A verdict while a block lasts until `until`: refused, nothing left, waits for the block too. */
function blocked(v: Verdict, until: number, now: number): Verdict {
  if (until <= now) return v;
  return { allowed: false, remaining: 0, retryAfterMs: Math.max(v.retryAfterMs, until - now), resetMs: Math.max(v.resetMs, until - now) };
}

/** Windows are [k·windowMs, (k+1)·windowMs) since the epoch; each starts empty. */
export class FixedWindowModel implements LimitModel {
  private used = 0;
  private life = 0;
  private until = 0;
  lastGrant: ModelGrant | undefined;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private now: number,
  ) {}

  private windowEnd(): number {
    return (Math.floor(this.now / this.windowMs) + 1) * this.windowMs;
  }

  advance(ms: number): void {
    if (this.now + ms >= this.windowEnd()) {
      this.used = 0;
      this.life += 1;
    }
    this.now += ms;
  }

  decide(permits: number, charge: boolean): Verdict {
    const fits = this.used + permits <= this.limit;
    if (fits && charge && this.until <= this.now) {
      this.used += permits;
      this.lastGrant = { left: permits, life: this.life, at: this.now };
    }
    return blocked(this.verdict(fits), this.until, this.now);
  }

  /** The verdict after any charge, on a request that `fits` (block aside). */
  private verdict(fits: boolean): Verdict {
    const endsIn = this.windowEnd() - this.now;
    return { allowed: fits, remaining: Math.max(0, this.limit - this.used), retryAfterMs: fits ? 0 : endsIn, resetMs: this.used > 0 ? endsIn : 0 };
  }

  reset(): void {
    this.used = 0;
    this.life += 1;
    this.until = 0;
  }

  refund(grant: ModelGrant, permits: number): number {
    if (grant.life !== this.life) return 0;
    const back = Math.min(permits, grant.left);
    grant.left -= back;
    this.used -= back;
    return back;
  }

  penalize(permits: number): Verdict {
    this.used += permits;
    return blocked(this.verdict(this.used + 1 <= this.limit), this.until, this.now);
  }

  block(ms: number): void {
    this.until = Math.max(this.until, this.now + ms);
  }
}

/** A grant of p permits at t counts against every request before t + windowMs. */
export class SlidingWindowModel implements LimitModel {
  /** Live grants (and penalties), oldest first; `left` is what each holds. */
  private grants: ModelGrant[] = [];
  private until = 0;
  lastGrant: ModelGrant | undefined;

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
    const allowed = this.used() + permits <= this.limit && this.until <= this.now;
    const verdict = this.verdict(permits);
    if (allowed && charge) {
      this.lastGrant = { left: permits, life: 0, at: this.now };
      this.grants.push(this.lastGrant);
    }
    return blocked({ ...verdict, remaining: Math.max(0, this.limit - this.used()), resetMs: this.resetMs() }, this.until, this.now);
  }

  /** The verdict on `permits` before any charge, block aside. */
  private verdict(permits: number): Verdict {
    const used = this.used();
    const allowed = used + permits <= this.limit;
    // it fits once (used + permits - limit) permits of the oldest grants have aged out
    let retryAfterMs = 0;
    for (let need = used + permits - this.limit, i = 0; !allowed && need > 0; i++) {
      need -= this.grants[i]!.left;
      retryAfterMs = this.grants[i]!.at + this.windowMs - this.now;
    }
    return { allowed, remaining: Math.max(0, this.limit - used), retryAfterMs, resetMs: this.resetMs() };
  }

  private resetMs(): number {
    const newest = this.grants.at(-1);
    return newest === undefined ? 0 : newest.at + this.windowMs - this.now;
  }

  reset(): void {
    this.grants = [];
    this.until = 0;
  }

  refund(grant: ModelGrant, permits: number): number {
    // a grant aged out or forgotten by a reset is no longer here
    if (!this.grants.includes(grant)) return 0;
    const back = Math.min(permits, grant.left);
    grant.left -= back;
    if (grant.left === 0) this.grants = this.grants.filter((g) => g !== grant);
    return back;
  }

  penalize(permits: number): Verdict {
    this.grants.push({ left: permits, life: 0, at: this.now });
    return blocked(this.verdict(1), this.until, this.now);
  }

  block(ms: number): void {
    this.until = Math.max(this.until, this.now + ms);
  }

  /** What Redis must hold: one entry per live grant, whatever its permits (sorted). */
  stored(): number[] {
    return this.grants.map((g) => g.left).sort((a, b) => a - b);
  }

  private used(): number {
    return this.grants.reduce((sum, g) => sum + g.left, 0);
  }
}

/** `limit` tokens refilled evenly over windowMs (a funnel: capacity over leakingDurationMs), in
 * units of 1/windowMs token: a token is windowMs units and each ms adds `limit` units. */
export class TokenBucketModel implements LimitModel {
  private units: number;
  /** A life ends when the bucket is full again: tokens given back after would be more than a
   * bucket without the grant holds. */
  private life = 0;
  /** Units given back by refunds in this life. */
  private given = 0;
  private until = 0;
  lastGrant: ModelGrant | undefined;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private now = 0,
  ) {
    this.units = this.full;
  }

  private get full(): number {
    return this.limit * this.windowMs;
  }

  advance(ms: number): void {
    this.now += ms;
    if (this.units < this.full && this.units + ms * this.limit >= this.full) this.newLife();
    this.units = Math.min(this.full, this.units + ms * this.limit);
  }

  decide(permits: number, charge: boolean): Verdict {
    const allowed = this.units >= permits * this.windowMs && this.until <= this.now;
    const verdict = this.verdict(permits);
    if (allowed && charge) {
      this.units -= permits * this.windowMs;
      this.lastGrant = { left: permits, life: this.life, at: this.now, after: this.units, givenBefore: this.given };
    }
    return blocked({ ...verdict, remaining: Math.max(0, Math.floor(this.units / this.windowMs)), resetMs: this.resetMs() }, this.until, this.now);
  }

  private verdict(permits: number): Verdict {
    const cost = permits * this.windowMs;
    const allowed = this.units >= cost;
    return {
      allowed,
      remaining: Math.max(0, Math.floor(this.units / this.windowMs)),
      retryAfterMs: allowed ? 0 : Math.ceil((cost - this.units) / this.limit),
      resetMs: this.resetMs(),
    };
  }

  private resetMs(): number {
    return Math.ceil((this.full - this.units) / this.limit);
  }

  private newLife(): void {
    this.life += 1;
    this.given = 0;
  }

  reset(): void {
    this.units = this.full;
    this.newLife();
    this.until = 0;
  }

  /**
   * No more than the bucket without the grant would hold over this one: it lost whatever refill
   * came while this one was within the grant's tokens of full, so what comes back is bounded by
   * the highest this bucket can have been since (refill and refunds only raise it). When nothing
   * was charged since, that is the bucket now, and a refund that fills it is as if the grant was
   * never made (all asked for comes back); else whole tokens only.
   */
  refund(grant: ModelGrant, permits: number): number {
    if (grant.life !== this.life) return 0;
    const peak = grant.after! + (this.now - grant.at) * this.limit + this.given - grant.givenBefore!;
    if (peak >= this.full) return 0;
    const want = Math.min(permits, grant.left);
    let [back, units] = [want, want * this.windowMs];
    if (units > this.full - peak) {
      if (peak <= this.units) units = this.full - this.units;
      else [back, units] = [Math.floor((this.full - peak) / this.windowMs), Math.floor((this.full - peak) / this.windowMs) * this.windowMs];
    }
    if (back <= 0) return 0;
    grant.left -= back;
    this.units += units;
    this.given += units;
    if (this.units === this.full) this.newLife();
    return back;
  }

  penalize(permits: number): Verdict {
    this.units -= permits * this.windowMs;
    return blocked(this.verdict(1), this.until, this.now);
  }

  block(ms: number): void {
    this.until = Math.max(this.until, this.now + ms);
  }
}

/**
 * The fixed window's counter plus the previous window's, weighted by the part of the previous
 * window that a span of windowMs ending now still covers: p permits of the previous window weigh
 * p × (windowMs - elapsed) / windowMs. Whole permits fit when the weighted count leaves room.
 */
export class SlidingWindowCounterModel implements LimitModel {
  private window: number;
  private current = 0;
  private previous = 0;
  private life = 0;
  private until = 0;
  lastGrant: ModelGrant | undefined;

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private now: number,
  ) {
    this.window = Math.floor(now / windowMs);
  }

  advance(ms: number): void {
    this.now += ms;
    const window = Math.floor(this.now / this.windowMs);
    if (window === this.window) return;
    this.previous = window === this.window + 1 ? this.current : 0;
    this.current = 0;
    this.window = window;
  }

  private get elapsed(): number {
    return this.now - this.window * this.windowMs;
  }

  /** Whole permits that fit now (< 0 past the limit). */
  private fits(): number {
    const { limit, windowMs, elapsed } = this;
    return Math.floor((limit * windowMs - this.previous * (windowMs - elapsed) - this.current * windowMs) / windowMs);
  }

  private resetMs(): number {
    const endsIn = this.windowMs - this.elapsed;
    return this.current > 0 ? endsIn + this.windowMs : this.previous > 0 ? endsIn : 0;
  }

  /** The earliest ms from now at which `permits` fit, found by stepping the clock (the model
   * computes nothing the script computes in closed form). */
  private wait(permits: number): number {
    const { current, previous, windowMs, elapsed } = this;
    const fitsAt = (t: number): boolean => {
      const e = elapsed + t;
      const [c, p] = e < windowMs ? [current, previous] : e < 2 * windowMs ? [0, current] : [0, 0];
      const weighted = p * (windowMs - (e % windowMs));
      return this.limit * windowMs - weighted - c * windowMs >= permits * windowMs;
    };
    // binary search: once it fits in a window it fits for the rest of it, and a later window
    // weighs less
    let [lo, hi] = [0, 2 * windowMs - elapsed];
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (fitsAt(mid)) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  decide(permits: number, charge: boolean): Verdict {
    const fits = permits <= this.fits();
    const retryAfterMs = fits ? 0 : this.wait(permits);
    if (fits && charge && this.until <= this.now) {
      this.charge(permits);
      this.lastGrant = { left: permits, life: this.life, at: this.now };
    }
    return blocked({ allowed: fits, remaining: Math.max(0, this.fits()), retryAfterMs, resetMs: this.resetMs() }, this.until, this.now);
  }

  /** A window's first charge starts a life: grants of another window or life give nothing back. */
  private charge(permits: number): void {
    if (this.lastCharged !== this.window) this.life += 1;
    this.lastCharged = this.window;
    this.current += permits;
  }

  private lastCharged: number | undefined;

  reset(): void {
    this.current = 0;
    this.previous = 0;
    this.life += 1;
    this.lastCharged = undefined;
    this.until = 0;
  }

  refund(grant: ModelGrant, permits: number): number {
    if (grant.life !== this.life || Math.floor(grant.at / this.windowMs) !== this.window) return 0;
    const back = Math.min(permits, grant.left, this.current);
    if (back <= 0) return 0;
    grant.left -= back;
    this.current -= back;
    return back;
  }

  penalize(permits: number): Verdict {
    this.charge(permits);
    return this.decide(1, false);
  }

  block(ms: number): void {
    this.until = Math.max(this.until, this.now + ms);
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
  if (kind === 'sliding-window-counter') return new SlidingWindowCounterModel(limit, windowMs, now);
  return new TokenBucketModel(limit, windowMs, now);
}
