import type { RedisLimitCounters } from '../../lib/index.js';

// What the soak's processes share: the limits its routes enforce (the invariants are checked
// against the same numbers) and the messages between the controller and its workers.

export const SOAK = {
  keyPrefix: 'soak:',
  /** Short, so that a paused Redis shows up as failMode answers well inside a fault. */
  commandTimeoutMs: 250,
  /** GET /hot: every worker on one fixed-window key; failMode 'closed'. */
  hot: { limit: 20, windowMs: 1000 },
  /** GET /sliding: one exact sliding-window key; failMode 'open', so outages pass unchecked. */
  sliding: { limit: 15, windowMs: 1000 },
  /** GET /cold/:k: token buckets on many keys, each hit now and then; failMode 'closed'. */
  cold: { keys: 40, limit: 3, windowMs: 2000 },
  /** GET /funnel: one funnel; failMode 'closed'. */
  funnel: { capacity: 8, leakingDurationMs: 1000 },
  /** POST /orders/:owner (@MaxPending) and DELETE /orders/:owner/:slot (paying); a slot that
   * lapses unpaid is notified on the `notify` queue, which the consumer processes handle. */
  pending: { name: 'soak-unpaid', max: 3, ttlMs: 3000, owners: 12, notify: 'soak-unpaid-expired' },
  /** GET /login/:acct: a sliding window counting failed answers only (countIf: status >= 400);
   * the handler answers 401 about half the time. A refund reaches the other worker's refusal
   * cache over pub/sub: the check allows it `invalidationMs` (the docs' "within moments"). */
  login: { limit: 3, windowMs: 1000, accounts: 2, invalidationMs: 250 },
  /** GET /lock/:k: a sliding window whose refusal locks its key out for blockMs. */
  lock: { limit: 3, windowMs: 1000, blockMs: 2000, keys: 2 },
  /** GET /flood: one fixed-window key both workers flood (their own loop, `rate` req/s each), mostly
   * refused: the refusal cache's route (it is on by default on every route). */
  flood: { limit: 10, windowMs: 1000, rate: 30 },
  /** GET /local: failMode 'local', a fixed window; `divisor` is the module's localDivisor. Its own
   * loop (`rate` req/s per worker). */
  local: { limit: 4, windowMs: 1000, divisor: 2, rate: 15 },
  /** GET /exports/:k (@MaxConcurrent, failMode 'closed'): at most `limit` requests of a key in its
   * handler at once across the web workers, each holding its slot about `holdMs`; `loops` per
   * worker with a request in flight each, on `keys` keys, so the cap is met often; a lease short
   * enough that a slot leaked by a fault (taken by a call that timed out) comes back soon. */
  concurrent: { limit: 2, keys: 2, loops: 3, holdMs: 100, leaseMs: 3000, name: 'soak-exports' },
  /** Delay messages every worker enqueues and the consumer processes handle. */
  /** A handler asks to run later now and then, and overruns `timeoutMs` now and then (then it
   * must write nothing: the attempt has failed and runs again); `maxAttempts` high enough that
   * those never kill a message, `backoffMs` short enough that the drain sees them through.
   * `rateLimit`: per tenant (`tenants` of them, from the id), adaptive: some RetryLaters pause the
   * tenant (an upstream's 429), which halves its limit; `limit` is well above the tenants' rate, so
   * the halved limits never hold the drain up. `concurrencyPerKey`: at most `limit` handlers of a
   * tenant at once, across the consumer processes. */
  /** A recurring schedule of `everyMs` the controller replaces every `replaceEveryMs` (its payload
   * alternating) while the run goes on; the consumer processes handle its ticks. */
  recurring: { queue: 'soak-ticks', name: 'tick', everyMs: 250, replaceEveryMs: 1000 },
  queue: {
    name: 'soak',
    maxDelayMs: 1500,
    visibilityTimeoutMs: 4000,
    concurrency: 20,
    timeoutMs: 1000,
    maxAttempts: 20,
    backoffMs: 200,
    maxBackoffMs: 2000,
    rateLimit: { limit: 50, windowMs: 1000, tenants: 8 },
    concurrencyPerKey: { limit: 2 },
  },
} as const;

/** Routes, as the web workers log them. */
export type Route = 'hot' | 'sliding' | 'cold' | 'funnel' | 'order' | 'pay' | 'login' | 'lock' | 'flood' | 'local' | 'exports';

/** Controller → worker. */
export type ToWorker = { type: 'stop' };

/** Worker → controller. */
export type FromWorker = { type: 'ready' } | { type: 'stopped'; log: string };

/** How a worker is told what to do: argv[2] as JSON. */
export interface WorkerConfig {
  name: string;
  redisUrl: string;
  /** Where the worker writes its log. */
  dir: string;
  /** Web workers: HTTP requests per second their load loops aim for. */
  rate?: number;
  /** Web workers: delay messages enqueued per second. */
  enqueueRate?: number;
  /** The controller's `clockOffset()`: every process stamps with the same clock (see `now`). */
  clockOffsetMs: number;
}

/** A web worker's log, written when it stops. */
export interface WebLog {
  name: string;
  /** Granted, decided requests per route: [key, arrival ms, decided-by ms]. */
  grants: Record<'hot' | 'sliding' | 'cold' | 'funnel' | 'lock' | 'flood' | 'local', [string, number, number][]>;
  /** /login grants (by Redis): [key, arrival ms, finish ms, failed (0/1), refund done ms or -1]. */
  logins: [string, number, number, number, number][];
  /** 429s Redis (or the refusal cache) gave /login and /lock: [route, key, arrival ms, finish ms,
   * a lockout was set in Redis for it (0/1), answered from the refusal cache (0/1)]. 503s on
   * /login: the same with route 'login-503'. */
  refusals: [string, string, number, number, number, number][];
  /** /local grants decided in process memory (failMode 'local'): [key, arrival, finish], Date.now() ms. */
  localGrants: [string, number, number][];
  /** Every answer: [route, arrival ms, finish ms, status, answered by failMode (0/1)]. */
  answers: [Route, number, number, number, number][];
  /** Reserved slots: [owner, slot, reserve arrival ms, reserve finish ms, release start ms or -1]. */
  slots: [string, string, number, number, number][];
  /** /exports/:k handler runs, each inside its concurrency slot: [key, handler start, handler end]. */
  exports: [string, number, number][];
  /** Delay message ids whose enqueue succeeded, and ids whose enqueue failed (they may exist). */
  enqueued: string[];
  uncertain: string[];
  /** The worker's RedisLimitEvents counters. */
  counters: RedisLimitCounters;
  /** Requests the load loop could not complete (connection errors, client timeouts). */
  clientErrors: number;
  /** How far this process' `performance.timeOrigin + performance.now()` was from `now()` at its
   * start: what stamping with it instead would have put between the workers' logs. */
  originSkewMs: number;
}

const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;

/** Wall time minus the monotonic clock, read at the edge of a Date.now() tick (µs, not 1 ms, off). */
function measureOffset(): number {
  const before = Date.now();
  let wall: number;
  while ((wall = Date.now()) === before);
  return wall - monotonicMs();
}

let offsetMs = measureOffset();

/** The controller hands its offset to every worker, which takes it with `shareClock`. */
export const clockOffset = (): number => offsetMs;
export function shareClock(offset: number): void {
  offsetMs = offset;
}

/**
 * Wall time in ms, sub-ms precise, on the same clock in every soak process: the machine's monotonic
 * clock plus one offset. `performance.timeOrigin + performance.now()` need not be: each process
 * fixes its origin at start-up, from two clocks read one after the other (hog run 25's violations
 * between the two web workers looked like a 7 ms skew of theirs; the report prints each one's).
 */
export const now = (): number => monotonicMs() + offsetMs;

/**
 * A worker's life: `start` gets it running and returns how to stop it (resolving with the log
 * file it wrote); the controller hears 'ready', later says 'stop', and hears 'stopped'.
 */
export function runWorker(start: () => Promise<() => Promise<string>>): void {
  start().then(
    (stop) => {
      process.on('message', (message: ToWorker) => {
        if (message.type !== 'stop') return;
        void stop().then((log) => process.send!({ type: 'stopped', log } satisfies FromWorker, () => process.exit(0)));
      });
      process.send!({ type: 'ready' } satisfies FromWorker);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
