import type { ExecutionContext } from '@nestjs/common';
// ioredis is a peer dependency: in an app these are the types of its own ioredis, 5 or 6, so a
// client it made is accepted as it is. Name them without type arguments (6's Redis<ReplyMapping>
// is not generic in 5).
import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { resolveDelayQueueOptions } from './delay-queue/delay-queue.input.js';
import type { DelayQueueOptions } from './delay-queue/delay-queue.types.js';
import type { RateLimitOptions } from './rate-limit/rate-limit.metadata.js';
import { DEFAULT_REFUSAL_CACHE_ENTRIES } from './rate-limit/refusal-cache.js';
import { assertKeyPrefix } from './redis/keys.js';
import { assertPositiveInteger, describeValue, numberError } from './validation.js';

/**
 * What a guard does when Redis cannot decide: 'closed' answers 503 (the same exception type with
 * statusCode 503 outside HTTP), 'open' lets the request through uncounted, 'local' decides the
 * same limits in this process's memory (each `limit` divided by the module's `localDivisor`) until
 * Redis answers again. A stack mixing modes takes the strictest: closed, then local, then open.
 * `@MaxPending` takes 'closed' or 'open' only: a cap on live slots cannot be kept per process, so
 * a module-wide 'local' means 'closed' there.
 */
export type FailMode = 'closed' | 'open' | 'local';
/** Which rate-limit headers guarded responses carry: 'legacy' X-RateLimit-Limit / -Remaining /
 * -Reset (seconds, rounded up), 'draft' RateLimit-Policy and RateLimit (IETF httpapi draft),
 * 'both', or false for none (Retry-After is sent with every 429 regardless). */
export type HeadersMode = 'legacy' | 'draft' | 'both' | false;

/** Resolves the key a limit counts against, e.g. a user id or an API key header. */
export type KeyResolver = (ctx: ExecutionContext) => string | Promise<string>;

/** Says whether a request is exempt from every rate limit and funnel. */
export type SkipIf = (ctx: ExecutionContext) => boolean | Promise<boolean>;

/** A Redis Cluster to connect to: ioredis' startup nodes and cluster options. */
export interface ClusterConfig {
  cluster: { nodes: ClusterNode[]; options?: ClusterOptions };
}

/**
 * Options of `RedisLimitModule.forRoot`, and what a `forRootAsync` factory returns. `isGlobal` is
 * none of them: it is an argument of the forRoot / forRootAsync call itself (see
 * RedisLimitModuleExtras), as Nest settles it before any factory runs. Every time is in ms. They
 * are checked when the module is created (`NestFactory.create`,
 * `Test.createTestingModule(...).compile()`): a bad value is a TypeError (wrong type) or
 * RangeError (number out of range) whose message starts `RedisLimitModule: <option>`; see
 * docs/bad-input.md. `undefined` always means the default.
 */
export interface RedisLimitModuleOptions {
  /** A redis:// URL (its database number is honoured), ioredis options (Sentinel too), a cluster
   * to connect to, or a client you own, of ioredis 5 or 6 (never closed by the module). An
   * unreachable server is no error: the app starts and guards apply `failMode`.
   * @default ioredis' defaults (localhost:6379)
   * @throws TypeError `redis` when a number, boolean, null, array or `''`; `redis.cluster.nodes`
   * when not a non-empty array. */
  redis?: string | RedisOptions | ClusterConfig | Redis | Cluster;
  /** Prefix of every key the library writes; `''` is no prefix.
   * @default 'rl:'
   * @throws TypeError when not a string, or it holds `{`, `}` or a lone surrogate. */
  keyPrefix?: string;
  /** What guards do when Redis fails or times out: 'closed' answers 503, 'open' lets the request
   * through, 'local' enforces the same limits in process memory (see FailMode). A warning is
   * logged once per outage.
   * @default 'closed'
   * @throws TypeError when not 'closed', 'open' or 'local'. */
  failMode?: FailMode;
  /** failMode 'local': each limit is divided by this in every process, rounded up (at least 1),
   * e.g. the number of app instances.
   * @default 1
   * @throws TypeError / RangeError when not a positive integer. */
  localDivisor?: number;
  /** Upper bound in ms on every Redis call the library makes; a late answer is a RedisTimeoutError
   * (guards: `failMode`).
   * @default 500
   * @throws TypeError / RangeError when not an integer from 1 to 2,147,483,647. */
  commandTimeoutMs?: number;
  /** Rate-limit headers on guarded responses: 'legacy' (X-RateLimit-Limit, -Remaining, -Reset),
   * 'draft' (RateLimit-Policy, RateLimit), 'both', or false. Retry-After is sent with every 429.
   * @default 'legacy'
   * @throws TypeError when anything else. */
  headers?: HeadersMode;
  /** The default key of guards (limits without a `key`, `@MaxPending` without an `owner`).
   * @default each transport's: the client IP (HTTP, GraphQL), the socket's address (WebSocket);
   * microservice handlers have none and need a `key`
   * @throws TypeError when not a function. */
  tracker?: KeyResolver;
  /** The default tracker counts an IPv6 client by its first `ipv6Subnet` bits (one client owns a
   * whole prefix); false counts each address. IPv4-mapped IPv6 counts as the IPv4 address.
   * @default 56
   * @throws TypeError / RangeError when not an integer from 1 to 128 or false. */
  ipv6Subnet?: number | false;
  /** ExpiringHashService: how fields expire and how the background sweep runs.
   * @throws TypeError / RangeError `expiringHash.<option>`, see ExpiringHashOptions. */
  expiringHash?: ExpiringHashOptions;
  /** DelayQueueService: how much of each queue's dead set is kept.
   * @throws TypeError / RangeError `delayQueue.<option>`: not an object, an unknown option,
   * `deadRetentionMs` not an integer >= 1, `maxDead` not an integer >= 0. */
  delayQueue?: DelayQueueOptions;
  /** Limits on every handler of the app, as if declared at class level on its class: a class or
   * handler limit of the same name (unnamed: any unnamed one) replaces a default, `@SkipRateLimit()`
   * skips them. Unnamed defaults count per route, named ones across the app.
   * @default none
   * @throws TypeError / RangeError `defaultLimits[i].<option>` from `app.init()` (not at module
   * creation): an element that would be a bad `@RateLimit`, or two unnamed ones on one counter.
   * @example
   * ```ts
   * RedisLimitModule.forRoot({ defaultLimits: [{ limit: 100, windowMs: 60_000 }] })
   * ``` */
  defaultLimits?: RateLimitOptions[];
  /** true: no rate limit or funnel applies to this request (health checks, internal callers);
   * `@MaxPending` still does. Asked only on routes that have limits.
   * @default never skip
   * @throws TypeError when not a function. */
  skipIf?: SkipIf;
  /** true: every limit in shadow mode (decided, counted, headers and events, never refused), for
   * trying limits in production; a limit's own `shadow: false` still refuses.
   * @default false
   * @throws TypeError when not a boolean. */
  shadow?: boolean;
  /** Remembers refusals in the process until their retryAfterMs, so a flood from one key costs
   * Redis nothing (see RefusalCache); `maxEntries` bounds it (stacks remembered, least recently
   * used dropped first; default 10_000). false: every decision asks Redis.
   * @default true
   * @throws TypeError when not a boolean or `{ maxEntries? }` (an unknown option too);
   * TypeError / RangeError `refusalCache.maxEntries` when not a positive integer. */
  refusalCache?: boolean | { maxEntries?: number };
}

/**
 * What forRoot and forRootAsync take beside the options (Nest's ConfigurableModuleBuilder
 * extras): `forRoot({ ...options, isGlobal })`, `forRootAsync({ isGlobal, useFactory })`.
 */
export interface RedisLimitModuleExtras {
  /** Registers the module globally. In `forRootAsync` it goes beside `useFactory`, never in what
   * the factory returns (a type error; with a cast, start-up fails with a TypeError).
   * @default true
   * @throws TypeError from forRoot / forRootAsync when not a boolean. */
  isGlobal?: boolean;
}

/** `RedisLimitModuleOptions.expiringHash`: ExpiringHashService's expiry and sweep. */
export interface ExpiringHashOptions {
  /** 'native' uses the server's field expiry (HPEXPIRE: Redis >= 7.4, Valkey >= 9), 'index' the
   * library's own; 'auto' picks native when the server has HPEXPIRE (asked once with COMMAND INFO).
   * @default 'auto'
   * @throws TypeError `expiringHash.mode` when anything else. */
  mode?: 'auto' | 'native' | 'index';
  /** The least gap, ms, between two sweeps of one registry shard by this process (a sweep removes
   * expired fields nobody reads and delivers their notifications). The sweeper sleeps until the
   * earliest due field it knows of and is woken over pub/sub by an earlier write, so at rest it
   * costs about one call per 4.5 s. 0 turns this process's sweeper off (others still sweep and
   * notify). It starts on the process's first ExpiringHashService call.
   * @default 1000
   * @throws TypeError / RangeError `expiringHash.sweepIntervalMs` when not an integer from 0 to
   * 2,147,483,647. */
  sweepIntervalMs?: number;
  /** The sweep registry is split over this many keys (cluster slots). Every process must use the
   * same number.
   * @default 16
   * @throws TypeError / RangeError `expiringHash.sweepShards` when not an integer from 1 to 16,384. */
  sweepShards?: number;
}

/** Options with every default filled in and every value checked. */
export interface ResolvedOptions {
  redis: RedisLimitModuleOptions['redis'];
  keyPrefix: string;
  failMode: FailMode;
  localDivisor: number;
  commandTimeoutMs: number;
  headers: HeadersMode;
  /** The app's own tracker; undefined: each transport's default (see TransportAdapter). */
  tracker: KeyResolver | undefined;
  ipv6Subnet: number | false;
  expiringHash: Required<ExpiringHashOptions>;
  delayQueue: Required<DelayQueueOptions>;
  /** Checked by RateLimitPlans at app.init(), with the decorators. */
  defaultLimits: unknown;
  skipIf: SkipIf | undefined;
  shadow: boolean;
  refusalCache: false | { maxEntries: number };
}

export const DEFAULT_COMMAND_TIMEOUT_MS = 500;
/** The longest delay a Node.js timer takes (about 24.8 days); a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

/** express-rate-limit's default since v8: a /56 is what ISPs commonly hand one household. */
export const DEFAULT_IPV6_SUBNET = 56;

export function resolveOptions(options: RedisLimitModuleOptions = {}): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`RedisLimitModule: options must be an object, got ${describeValue(options)}`);
  }
  const { keyPrefix = 'rl:', failMode = 'closed', commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS } = options;
  const { headers = 'legacy', ipv6Subnet = DEFAULT_IPV6_SUBNET } = options;
  assertIpv6Subnet(ipv6Subnet);
  const { tracker } = options;
  assertRedis(options.redis);
  assertKeyPrefix(keyPrefix, 'RedisLimitModule: keyPrefix');
  assertFailMode(failMode, 'RedisLimitModule: failMode');
  const { localDivisor = 1 } = options;
  assertPositiveInteger(localDivisor, 'RedisLimitModule: localDivisor');
  assertTimerMs(commandTimeoutMs, 'a positive integer', 'RedisLimitModule: commandTimeoutMs');
  if (!['legacy', 'draft', 'both', false].includes(headers)) {
    throw new TypeError(`RedisLimitModule: headers must be 'legacy', 'draft', 'both' or false, got ${String(headers)}`);
  }
  if (tracker !== undefined && typeof tracker !== 'function') {
    throw new TypeError(`RedisLimitModule: tracker must be a function (ctx) => string, got ${describeValue(tracker)}`);
  }
  if (options.skipIf !== undefined && typeof options.skipIf !== 'function') {
    throw new TypeError(`RedisLimitModule: skipIf must be a function (ctx) => boolean, got ${describeValue(options.skipIf)}`);
  }
  const { shadow = false } = options;
  if (typeof shadow !== 'boolean') throw new TypeError(`RedisLimitModule: shadow must be a boolean, got ${describeValue(shadow)}`);
  const expiringHash = resolveExpiringHash(options.expiringHash);
  const delayQueue = resolveDelayQueueOptions(options.delayQueue);
  return {
    redis: options.redis,
    keyPrefix,
    failMode,
    commandTimeoutMs,
    headers,
    tracker,
    ipv6Subnet,
    expiringHash,
    delayQueue,
    defaultLimits: options.defaultLimits,
    skipIf: options.skipIf,
    localDivisor,
    shadow,
    refusalCache: refusalCacheOption(options.refusalCache),
  };
}

export function assertIpv6Subnet(value: unknown, what = 'RedisLimitModule: ipv6Subnet'): asserts value is number | false {
  if (value === false || (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 128)) return;
  throw new (numberError(value))(`${what} must be an integer from 1 to 128 or false, got ${describeValue(value)}`);
}

function resolveExpiringHash(options: ExpiringHashOptions = {}): Required<ExpiringHashOptions> {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`RedisLimitModule: expiringHash must be an object, got ${String(options)}`);
  }
  const { mode = 'auto', sweepIntervalMs = 1000, sweepShards = 16 } = options;
  if (!['auto', 'native', 'index'].includes(mode)) {
    throw new TypeError(`RedisLimitModule: expiringHash.mode must be 'auto', 'native' or 'index', got ${describeValue(mode)}`);
  }
  assertTimerMs(sweepIntervalMs, 'an integer >= 0', 'RedisLimitModule: expiringHash.sweepIntervalMs');
  if (!Number.isSafeInteger(sweepShards) || sweepShards < 1 || sweepShards > 16384) {
    throw new (numberError(sweepShards))(`RedisLimitModule: expiringHash.sweepShards must be an integer from 1 to 16384, got ${sweepShards}`);
  }
  return { mode, sweepIntervalMs, sweepShards };
}

/** A timer's length in ms: a positive integer (or one >= 0) no larger than MAX_TIMER_MS. */
function assertTimerMs(value: unknown, what: 'a positive integer' | 'an integer >= 0', argument: string): void {
  const min = what === 'a positive integer' ? 1 : 0;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_TIMER_MS) {
    throw new (numberError(value))(`${argument} must be ${what} (ms) up to ${MAX_TIMER_MS}, got ${describeValue(value)}`);
  }
}

/** The `redis` option's shape; ioredis checks the rest when it connects. Anything else would have
 * been taken for "no options" and connected to localhost:6379. */
function assertRedis(redis: unknown): void {
  if (redis === undefined) return;
  if (typeof redis === 'string') {
    if (redis.length === 0) throw new TypeError('RedisLimitModule: redis must be a non-empty URL, got ""');
    return;
  }
  if (typeof redis !== 'object' || redis === null || Array.isArray(redis)) {
    throw new TypeError(`RedisLimitModule: redis must be a URL, ioredis options, { cluster: { nodes } } or a client, got ${describeValue(redis)}`);
  }
  // a client (duck-typed, as createClient does) has a cluster() command method: not a config
  if (typeof (redis as { defineCommand?: unknown }).defineCommand === 'function') return;
  if ('cluster' in redis) {
    const cluster = redis.cluster;
    const nodes = typeof cluster === 'object' && cluster !== null ? (cluster as { nodes?: unknown }).nodes : undefined;
    if (!Array.isArray(nodes) || nodes.length === 0) {
      throw new TypeError(`RedisLimitModule: redis.cluster.nodes must be a non-empty array of startup nodes, got ${describeValue(nodes)}`);
    }
  }
}

/** A failMode, or with `local: false` one of 'closed' and 'open' only (`@MaxPending`). */
export function assertFailMode(value: unknown, argument: string, local = true): asserts value is FailMode {
  if (value === 'closed' || value === 'open' || (local && value === 'local')) return;
  const also = local ? " (or 'local': the same limits kept in this process while Redis is down)" : '';
  throw new TypeError(`${argument} must be 'closed' or 'open', got ${String(value)}${also}`);
}

function refusalCacheOption(value: unknown): ResolvedOptions['refusalCache'] {
  if (value === undefined || value === true) return { maxEntries: DEFAULT_REFUSAL_CACHE_ENTRIES };
  if (value === false) return false;
  const argument = 'RedisLimitModule: refusalCache';
  if (typeof value !== 'object' || value === null) throw new TypeError(`${argument} must be a boolean or { maxEntries? }, got ${describeValue(value)}`);
  const { maxEntries = DEFAULT_REFUSAL_CACHE_ENTRIES, ...rest } = value as { maxEntries?: unknown };
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw new TypeError(`${argument}.${unknown} is not an option (maxEntries)`);
  assertPositiveInteger(maxEntries, `${argument}.maxEntries`);
  return { maxEntries };
}
