import { assertKnownOptions, assertPositiveInteger, describeValue, numberError } from '../validation.js';

/**
 * 'sliding-window': exact, no more than `limit` grants in any `windowMs` span; 'fixed-window':
 * windows aligned to multiples of `windowMs` since the epoch (Redis clock);
 * 'sliding-window-counter': approximate, O(1): the fixed window's count plus the previous
 * window's, weighted by the part of it a span of `windowMs` ending now still covers (no fixed
 * window above `limit`, no span of `windowMs` above 2 × limit - 1); 'token-bucket': `limit`
 * tokens refilled continuously at `limit / windowMs`, exact fractions.
 */
export type RateLimitAlgorithm = 'fixed-window' | 'sliding-window' | 'sliding-window-counter' | 'token-bucket';

/**
 * A rate limit as RateLimiterService takes it: `limit` permits per `windowMs` ms. Extra
 * properties are ignored, so one constant can serve a decorator and a service call. A counter is
 * its key, algorithm and `windowMs`: a changed `limit` keeps counting.
 */
export interface RateLimitPolicy {
  /** Permits per window (token-bucket: bucket size). A positive integer. */
  limit: number;
  /** Window length in ms (token-bucket: time to refill from empty). A positive integer; for a
   * token bucket, limit × windowMs at most 2^53. */
  windowMs: number;
  /** How permits are counted.
   * @default 'sliding-window' */
  algorithm?: RateLimitAlgorithm;
}

/** A leaky bucket (funnel): `capacity` units, refilled evenly over `leakingDurationMs`. */
export interface FunnelPolicy {
  /** Units the funnel holds. A positive integer. */
  capacity: number;
  /** Time in ms for an empty funnel to be full again; it refills evenly. A positive integer;
   * capacity × leakingDurationMs at most 2^53. */
  leakingDurationMs: number;
}

/** One limit's verdict. A refusal is a result, not an error. */
export interface RateLimitDecision {
  /** Whether the permits were granted (and charged). */
  allowed: boolean;
  /** The limit decided against (a funnel: its capacity). */
  limit: number;
  /** Permits left right after this decision (>= 0). */
  remaining: number;
  /** 0 when allowed; else ms until the requested permits could be granted. */
  retryAfterMs: number;
  /** ms until the key is back to its full limit (a never-used key peeks as 0). */
  resetMs: number;
  /**
   * Names what this decision charged, for `refund`: set when it charged something (an allowed
   * consume, funnel or decide), absent on refusals, peeks and penalties. Opaque: pass it back as
   * it is (it is trusted, not checked, so it must not come from an untrusted party).
   */
  grantId?: string;
}

/**
 * The one table of counter kinds: the code scripts, keys and plans use, and the name events,
 * errors and listings say (each algorithm's, and the funnel's).
 */
export const KIND_NAMES = {
  fw: 'fixed-window',
  sw: 'sliding-window',
  sc: 'sliding-window-counter',
  tb: 'token-bucket',
  fn: 'funnel',
} as const satisfies Record<string, RateLimitAlgorithm | 'funnel'>;

/** What kind of limit a counter belongs to: its algorithm, or a funnel. */
export type LimitKind = (typeof KIND_NAMES)[keyof typeof KIND_NAMES];

/** The code of an algorithm a script runs (a funnel runs the token bucket). */
export type AlgorithmCode = Exclude<keyof typeof KIND_NAMES, 'fn'>;

/** What a script needs to know about one limit, already checked. */
export interface LimitSpec {
  /** Key namespace: one per algorithm, and funnels apart from token buckets. */
  kind: AlgorithmCode | 'fn';
  /** The algorithm the script runs. */
  algorithm: AlgorithmCode;
  limit: number;
  windowMs: number;
}

/** Algorithms that count in 1/windowMs-permit units (the buckets, the weighted window): exact
 * while limit × windowMs, and a penalty's (permits + limit) × windowMs, stay below 2^53. */
export function countsScaled(algorithm: AlgorithmCode): boolean {
  return algorithm === 'tb' || algorithm === 'sc';
}

/**
 * Where a counter's state changed shape since 0.2, its key says so: processes of two versions
 * side by side (a rolling deploy) then keep a counter each, rather than one reading state it
 * cannot (a script error, or a count read as none). 'sw5', 'fw4', 'sc2', 'tb2' and 'fn2': every
 * algorithm's layout of 0.3 (a funnel is a token bucket).
 */
const KEY_KINDS: Partial<Record<LimitSpec['kind'], string>> = { sw: 'sw5', fw: 'fw4', sc: 'sc2', tb: 'tb2', fn: 'fn2' };

/**
 * The key kind of a limit's counter: its algorithm (or funnel) and window. A counter is its
 * scope, key, algorithm and windowMs: two windows never share one, and a changed `limit` keeps it.
 */
export function counterKind(spec: LimitSpec): string {
  return `${KEY_KINDS[spec.kind] ?? spec.kind}.${spec.windowMs}`;
}

/** A counter's kind and window from its key kind (counterKind's inverse); undefined for one this
 * version does not write (another version's, or not a counter kind). */
export function parseCounterKind(counterKindText: string): { kind: LimitSpec['kind']; windowMs: number } | undefined {
  const match = /^([a-z0-9]+)\.(\d+)$/.exec(counterKindText);
  if (match === null) return undefined;
  const kind = (Object.keys(KIND_NAMES) as LimitSpec['kind'][]).find((code) => (KEY_KINDS[code] ?? code) === match[1]);
  return kind === undefined ? undefined : { kind, windowMs: Number(match[2]) };
}

const ALGORITHMS = Object.fromEntries(
  Object.entries(KIND_NAMES)
    .filter(([code]) => code !== 'fn')
    .map(([code, name]) => [name, code]),
) as Record<RateLimitAlgorithm, AlgorithmCode>;

/** Checks a policy at the edge; `argument` names it in the error (e.g. 'policy'). */
export function rateLimitSpec(policy: RateLimitPolicy, argument = 'policy'): LimitSpec {
  if (typeof policy !== 'object' || policy === null) {
    throw new TypeError(`${argument} must be an object { limit, windowMs, algorithm? }, got ${describeValue(policy)}`);
  }
  const { limit, windowMs, algorithm = 'sliding-window' } = policy;
  // own keys only: 'toString' or 'constructor' must not find Object.prototype's
  const code = Object.hasOwn(ALGORITHMS, algorithm) ? ALGORITHMS[algorithm] : undefined;
  if (code === undefined) {
    throw new TypeError(`${argument}.algorithm must be one of ${Object.keys(ALGORITHMS).join(', ')}, got ${describeValue(algorithm)}`);
  }
  assertPositiveInteger(limit, `${argument}.limit`);
  assertPositiveInteger(windowMs, `${argument}.windowMs`);
  if (countsScaled(code)) assertExactBucket(limit, windowMs, argument);
  return { kind: code, algorithm: code, limit, windowMs };
}

export function funnelSpec(funnel: FunnelPolicy, argument = 'funnel'): LimitSpec {
  if (typeof funnel !== 'object' || funnel === null) {
    throw new TypeError(`${argument} must be an object { capacity, leakingDurationMs }, got ${describeValue(funnel)}`);
  }
  assertPositiveInteger(funnel.capacity, `${argument}.capacity`);
  assertPositiveInteger(funnel.leakingDurationMs, `${argument}.leakingDurationMs`);
  assertExactBucket(funnel.capacity, funnel.leakingDurationMs, argument);
  return { kind: 'fn', algorithm: 'tb', limit: funnel.capacity, windowMs: funnel.leakingDurationMs };
}

/** Permits must be a positive integer no larger than the limit: more could never be granted. */
export function assertPermits(permits: unknown, limit: number, argument = 'permits'): asserts permits is number {
  assertPositiveInteger(permits, argument);
  if (permits > limit) {
    throw new RangeError(`${argument} (${permits}) exceeds the limit (${limit}): it could never be granted`);
  }
}

// The scaled scripts count in 1/windowMs-permit units; limit * windowMs must stay exact in a double.
function assertExactBucket(limit: number, windowMs: number, argument: string): void {
  if (limit * windowMs > Number.MAX_SAFE_INTEGER) {
    throw new RangeError(`${argument}: limit × window (${limit} × ${windowMs}) is above 2^53 and cannot be exact`);
  }
}

/**
 * decide()'s arguments, checked before any limit is: an array of limit objects, each with a
 * policy or a funnel (not both), and options whose `peek` is a boolean, `now` a time in ms and
 * `route` a non-empty string (events and the dashboard's chart are keyed by it).
 */
export function assertStackInput(limits: unknown, options: unknown): void {
  if (!Array.isArray(limits)) {
    throw new TypeError(`limits must be an array of { key, policy | funnel, scope?, permits? }, got ${describeValue(limits)}`);
  }
  limits.forEach((limit: unknown, i) => assertLimitObject(limit, `limits[${i}]`));
  assertOptions(options, DECIDE_OPTIONS);
  const { peek, route, shadows, shadowRefused } = options as { peek?: unknown; route?: unknown; shadows?: unknown; shadowRefused?: unknown };
  if (peek !== undefined && typeof peek !== 'boolean') throw new TypeError(`options.peek must be a boolean, got ${describeValue(peek)}`);
  if (shadowRefused !== undefined && typeof shadowRefused !== 'boolean') {
    throw new TypeError(`options.shadowRefused must be a boolean, got ${describeValue(shadowRefused)}`);
  }
  if (shadows !== undefined && !(Array.isArray(shadows) && shadows.every((i) => Number.isInteger(i) && i >= 0 && i < limits.length))) {
    throw new TypeError(`options.shadows must be an array of indexes into limits, got ${describeValue(shadows)}`);
  }
  if (route !== undefined && (typeof route !== 'string' || route.length === 0)) {
    throw new TypeError(`options.route must be a non-empty string, got ${describeValue(route)}`);
  }
}

/** One limit of refundLimit, penalizeLimit or blockLimit, and their options (`now`). */
export function assertLimitInput(limit: unknown, options: unknown): void {
  assertLimitObject(limit, 'limit');
  assertOptions(options, ['now']);
}

const DECIDE_OPTIONS = ['peek', 'now', 'route', 'shadows', 'shadowRefused'];

function assertLimitObject(limit: unknown, argument: string): void {
  if (typeof limit !== 'object' || limit === null) throw new TypeError(`${argument} must be an object, got ${describeValue(limit)}`);
  const { policy, funnel } = limit as { policy?: unknown; funnel?: unknown };
  if (policy !== undefined && funnel !== undefined) throw new TypeError(`${argument} takes a policy or a funnel, not both`);
}

function assertOptions(options: unknown, known: readonly string[]): void {
  if (typeof options !== 'object' || options === null) throw new TypeError(`options must be an object, got ${describeValue(options)}`);
  assertKnownOptions(options, known, 'options');
  const { now } = options as { now?: unknown };
  if (now !== undefined && (typeof now !== 'number' || !Number.isSafeInteger(now) || now < 0)) {
    throw new (numberError(now))(`options.now must be a whole number of ms since the epoch (>= 0), got ${describeValue(now)}`);
  }
}

/** A grant id: the non-empty string an allowed decision gave (its content is not checked). */
export function assertGrantId(grantId: unknown): asserts grantId is string {
  if (typeof grantId !== 'string' || grantId.length === 0) {
    throw new TypeError(`grantId must be the non-empty string an allowed decision returned, got ${describeValue(grantId)}`);
  }
}

/**
 * A penalty: a positive integer of permits, which may exceed the limit; a bucket (token bucket,
 * funnel) and the weighted window count it in 1/windowMs-permit units, which must stay exact.
 */
export function assertPenalty(permits: unknown, spec: LimitSpec, argument = 'permits'): asserts permits is number {
  assertPositiveInteger(permits, argument);
  if (countsScaled(spec.algorithm) && (permits + spec.limit) * spec.windowMs > Number.MAX_SAFE_INTEGER) {
    throw new RangeError(
      `${argument} (${permits}) is too large for this ${spec.algorithm === 'tb' ? 'bucket' : 'limit'}: (permits + limit) × window must stay below 2^53`,
    );
  }
}

/** A block's duration: a positive integer of ms. */
export function assertBlockDuration(durationMs: unknown, argument = 'durationMs'): asserts durationMs is number {
  assertPositiveInteger(durationMs, argument);
}

/** acquire()'s options: an object of `permits` and `timeoutMs`, the latter a finite number >= 0. */
export function assertAcquireOptions(opts: unknown): asserts opts is { permits?: number; timeoutMs?: number } {
  if (typeof opts !== 'object' || opts === null) {
    throw new TypeError(`opts must be an object { permits?, timeoutMs? }, got ${describeValue(opts)}`);
  }
  assertKnownOptions(opts, ['permits', 'timeoutMs'], 'opts');
  const { timeoutMs } = opts as { timeoutMs?: unknown };
  // a RangeError whatever the value, as acquire() has always thrown
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && Number.isFinite(timeoutMs) && timeoutMs >= 0)) {
    throw new RangeError(`opts.timeoutMs must be a finite number >= 0, got ${describeValue(timeoutMs)}`);
  }
}
