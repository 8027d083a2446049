import { assertKey } from '../redis/keys.js';
import { rateLimitSpec, type LimitSpec, type RateLimitPolicy } from '../rate-limit/policy.js';
import type { ConsumeOptions, DelayedMessage, DelayQueueOptions, EnqueueOptions } from './delay-queue.types.js';
import { assertKnownOptions, assertTimerMs, assertWellFormed, describeValue, numberError } from '../validation.js';

/**
 * The payload as JSON, checked to come back as it was: plain objects, arrays, strings, finite
 * numbers, booleans and null. An object property that is `undefined` is dropped, as
 * `JSON.stringify` drops it (what an optional field left out means); anything else JSON would
 * drop or change (a top-level or array item `undefined`, functions, symbols, Dates, Maps, NaN,
 * BigInt, cycles), wherever it sits, is a TypeError naming where.
 */
export function serializePayload(payload: unknown, argument = 'payload'): string {
  assertJsonSafe(payload, argument, new Set());
  return JSON.stringify(payload);
}

/**
 * A payload read back from Redis, parsed; or, when it is not JSON (written there by something
 * else, or damaged), a SyntaxError naming the parse failure. Never throws: one unreadable payload
 * costs its own message, never a batch or a page of dead letters.
 */
export function parsePayload(stored: unknown): { payload: unknown } | SyntaxError {
  try {
    return { payload: JSON.parse(String(stored)) as unknown };
  } catch (error) {
    return new SyntaxError(`the stored payload could not be parsed as JSON: ${(error as Error).message}`);
  }
}

function assertJsonSafe(value: unknown, path: string, seen: Set<object>): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return;
    throw new TypeError(`${path} must be JSON-serializable: ${value} is not a finite number`);
  }
  if (typeof value !== 'object') throw new TypeError(`${path} must be JSON-serializable, got ${typeof value}`);
  if (seen.has(value)) throw new TypeError(`${path} must be JSON-serializable: it is a cycle`);
  const proto: unknown = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) {
    throw new TypeError(`${path} must be JSON-serializable: a ${value.constructor?.name ?? 'non-plain object'} would not come back as itself`);
  }
  seen.add(value);
  // by index, not forEach: a hole (`[1, , 3]`) would come back as null
  if (Array.isArray(value)) for (let i = 0; i < value.length; i++) assertJsonSafe(value[i], `${path}[${i}]`, seen);
  else for (const [k, item] of Object.entries(value)) if (item !== undefined) assertJsonSafe(item, `${path}.${k}`, seen);
  seen.delete(value);
}

/** runAt in ms ('' when a delay is given instead) and the delay: what the scripts take. */
export function resolveWhen(opts: { delayMs?: number; runAt?: number | Date }, argument: string): [number | '', number] {
  const { delayMs, runAt } = opts;
  if (runAt !== undefined && delayMs !== undefined) throw new TypeError(`${argument}: give runAt or delayMs, not both`);
  if (runAt !== undefined) return [resolveTime(runAt, `${argument}.runAt`), 0];
  const delay = delayMs === undefined ? 0 : delayMs;
  if (typeof delay !== 'number' || !Number.isSafeInteger(delay) || delay < 0) {
    throw new (numberError(delay))(`${argument}.delayMs must be a whole number of ms >= 0, got ${describeValue(delayMs)}`);
  }
  return ['', delay];
}

/** A point in time given as a Date or ms since the epoch, in ms; else an error naming `argument`. */
export function resolveTime(value: unknown, argument: string): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isSafeInteger(ms) || ms < 0) {
    throw new (numberError(ms))(
      `${argument} must be a Date or a whole number of ms since the epoch (>= 0), got ${describeValue(value instanceof Date ? 'Invalid Date' : value)}`,
    );
  }
  return ms;
}

/** The longest queue name or message id, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 1024;

/**
 * Queue names and ids: non-empty, well-formed strings up to 1 KiB. Ids are sorted-set members
 * and names reach the scripts (expiry notifications) unescaped: with a lone surrogate, two ids
 * would reach Redis as the same bytes.
 */
export function assertName(value: unknown, argument: string): asserts value is string {
  assertKey(value, argument);
  assertWellFormed(value, argument);
  const bytes = Buffer.byteLength(value);
  if (bytes > MAX_NAME_BYTES) throw new RangeError(`${argument} must be at most ${MAX_NAME_BYTES} bytes, got ${bytes}`);
}

/** `enqueue`'s opts (`enqueueMany`: `messages[i]`, named by `at`): an object with a valid `id`
 * if any; its time is checked by resolveWhen. */
export function assertEnqueueOptions(opts: unknown, at = 'opts'): asserts opts is EnqueueOptions {
  if (typeof opts !== 'object' || opts === null) throw new TypeError(`${at} must be an object, got ${describeValue(opts)}`);
  const { id } = opts as EnqueueOptions;
  if (id !== undefined) assertName(id, `${at}.id`);
}

/** `size`'s opts: undefined, or an object whose `overdueAfterMs`, if any, is an integer >= 0 (ms). */
export function resolveSizeOptions(opts: unknown): number | undefined {
  if (opts === undefined) return undefined;
  if (typeof opts !== 'object' || opts === null) throw new TypeError(`opts must be an object { overdueAfterMs? }, got ${describeValue(opts)}`);
  assertKnownOptions(opts, ['overdueAfterMs'], 'opts');
  const { overdueAfterMs } = opts as { overdueAfterMs?: unknown };
  if (overdueAfterMs === undefined) return undefined;
  if (typeof overdueAfterMs !== 'number' || !Number.isSafeInteger(overdueAfterMs) || overdueAfterMs < 0) {
    throw new (numberError(overdueAfterMs))(`opts.overdueAfterMs must be an integer >= 0 (ms), got ${describeValue(overdueAfterMs)}`);
  }
  return overdueAfterMs;
}

/** The consume options that are plain integers, with their defaults (the `@default`s
 * ConsumeOptions states). */
type IntegerConsumeOptions = Required<Omit<ConsumeOptions, 'rateLimit' | 'concurrencyPerKey' | 'globalConcurrency' | 'backoff' | 'jitter' | 'timeoutMs'>>;

export const CONSUME_DEFAULTS: IntegerConsumeOptions = {
  concurrency: 10,
  visibilityTimeoutMs: 30_000,
  maxAttempts: 3,
  backoffMs: 1000,
  maxBackoffMs: 3_600_000,
};

/** A consumer's rate limit, checked: the counter's algorithm and window, and its key function. */
export interface ConsumerRateLimit {
  spec: LimitSpec;
  key: ((message: DelayedMessage) => string) | undefined;
  /** AIMD per rate key on RetryLater with pauseKey (lua/delay-queue/adaptive.lua). */
  adaptive: boolean;
}

/** A consumer's cap per key, checked. */
export interface ConsumerSlots {
  limit: number;
  key: (message: DelayedMessage) => string;
}

export interface ResolvedConsumeOptions extends IntegerConsumeOptions {
  rateLimit: ConsumerRateLimit | undefined;
  concurrencyPerKey: ConsumerSlots | undefined;
  globalConcurrency: number | undefined;
  backoff: ((attempt: number, error: unknown) => number) | undefined;
  jitter: boolean;
  timeoutMs: number | undefined;
}

/**
 * Every consume option checked, defaults filled in (an option given as undefined takes its
 * default); `at` prefixes messages (e.g. a handler's name). An unknown option is a TypeError: a
 * misspelt `maxAttempt` would otherwise be ignored without a word.
 */
export function resolveConsumeOptions(opts: unknown = {}, at = 'opts'): ResolvedConsumeOptions {
  if (typeof opts !== 'object' || opts === null) throw new TypeError(`${at} must be an object, got ${describeValue(opts)}`);
  const { rateLimit, concurrencyPerKey, globalConcurrency, backoff, jitter = false, timeoutMs, ...integers } = opts as ConsumeOptions;
  const names = [...Object.keys(CONSUME_DEFAULTS), 'rateLimit', 'concurrencyPerKey', 'globalConcurrency', 'backoff', 'jitter', 'timeoutMs'];
  const resolved = resolveIntegers(integers, CONSUME_DEFAULTS, { backoffMs: 0, maxBackoffMs: 0 }, at, names);
  if (globalConcurrency !== undefined && (typeof globalConcurrency !== 'number' || !Number.isSafeInteger(globalConcurrency) || globalConcurrency < 1)) {
    throw new (numberError(globalConcurrency))(`${at}.globalConcurrency must be an integer >= 1, got ${describeValue(globalConcurrency)}`);
  }
  if (backoff !== undefined) {
    if (typeof backoff !== 'function') throw new TypeError(`${at}.backoff must be a function (attempt, error) => ms, got ${describeValue(backoff)}`);
    // one of them would be ignored
    if (integers.backoffMs !== undefined) throw new TypeError(`${at}: give backoff or backoffMs, not both (backoff replaces the doubling of backoffMs)`);
  }
  if (typeof jitter !== 'boolean') throw new TypeError(`${at}.jitter must be a boolean, got ${describeValue(jitter)}`);
  // a longer Node timer fires after 1 ms
  if (timeoutMs !== undefined) assertTimerMs(timeoutMs, 'a positive integer', `${at}.timeoutMs`);
  return {
    ...resolved,
    rateLimit: rateLimit === undefined ? undefined : resolveRateLimit(rateLimit, `${at}.rateLimit`),
    concurrencyPerKey: concurrencyPerKey === undefined ? undefined : resolveSlots(concurrencyPerKey, `${at}.concurrencyPerKey`),
    globalConcurrency,
    backoff,
    jitter,
    timeoutMs,
  };
}

function resolveRateLimit(rateLimit: unknown, at: string): ConsumerRateLimit {
  const spec = rateLimitSpec(rateLimit as RateLimitPolicy, at);
  const { key, adaptive } = rateLimit as { key?: unknown; adaptive?: unknown };
  if (key !== undefined && typeof key !== 'function') throw new TypeError(`${at}.key must be a function (message) => string, got ${describeValue(key)}`);
  if (adaptive !== undefined && typeof adaptive !== 'boolean') throw new TypeError(`${at}.adaptive must be a boolean, got ${describeValue(adaptive)}`);
  return { spec, key: key as ConsumerRateLimit['key'], adaptive: adaptive === true };
}

function resolveSlots(slots: unknown, at: string): ConsumerSlots {
  if (typeof slots !== 'object' || slots === null) throw new TypeError(`${at} must be an object { limit, key }, got ${describeValue(slots)}`);
  assertKnownOptions(slots, ['limit', 'key'], at);
  const { limit, key } = slots as { limit?: unknown; key?: unknown };
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    throw new (numberError(limit))(`${at}.limit must be an integer >= 1, got ${describeValue(limit)}`);
  }
  if (typeof key !== 'function') throw new TypeError(`${at}.key must be a function (message) => string, got ${describeValue(key)}`);
  return { limit, key: key as ConsumerSlots['key'] };
}

/** The module option `delayQueue`'s defaults (the `@default`s DelayQueueOptions states). */
export const DELAY_QUEUE_DEFAULTS: Required<DelayQueueOptions> = {
  deadRetentionMs: 7 * 24 * 3_600_000,
  maxDead: 10_000,
};

/** Injects DelayQueueService's options, checked (the module provides them). */
export const DELAY_QUEUE_OPTIONS = Symbol('RedisLimitDelayQueueOptions');

/** The module option `delayQueue`, checked like the consume options. */
export function resolveDelayQueueOptions(opts: unknown = {}): Required<DelayQueueOptions> {
  return resolveIntegers(opts, DELAY_QUEUE_DEFAULTS, { maxDead: 0 }, 'RedisLimitModule: delayQueue');
}

/** Options that are all safe integers, >= 1 unless `min` says otherwise. */
function resolveIntegers<T extends Record<string, number>>(opts: unknown, defaults: T, min: Partial<T>, at: string, names = Object.keys(defaults)): T {
  if (typeof opts !== 'object' || opts === null) throw new TypeError(`${at} must be an object, got ${describeValue(opts)}`);
  const resolved: Record<string, number> = { ...defaults };
  for (const [name, value] of Object.entries(opts)) {
    if (!Object.hasOwn(defaults, name)) {
      throw new TypeError(`${at}.${name} is not an option (${names.join(', ')})`);
    }
    if (value === undefined) continue;
    const least = min[name] ?? 1;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < least) {
      throw new (numberError(value))(`${at}.${name} must be an integer >= ${least}, got ${describeValue(value)}`);
    }
    resolved[name] = value;
  }
  return resolved as T;
}
