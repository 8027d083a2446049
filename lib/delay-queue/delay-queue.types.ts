import type { RateLimitPolicy } from '../rate-limit/policy.js';

/** A message as a handler receives it (`T`: the payload's type, as enqueued). */
export interface DelayedMessage<T = unknown> {
  /** The id `enqueue` resolved (given or a random UUID). */
  id: string;
  /** The queue it was enqueued to. */
  queue: string;
  /** The payload, parsed from the JSON it was stored as. */
  payload: T;
  /** When it was due (ms since the epoch, Redis server clock): its runAt, or the time of its
   * retry. */
  runAt: number;
  /** 1 on first delivery, one more per redelivery; a rate-limited message's wait for its limit
   * (or an admission that never happened) is no attempt. It dies when attempt `maxAttempts`
   * fails. */
  attempt: number;
  /**
   * Fires when this delivery should end: `timeoutMs` passed (reason: a DelayQueueTimeoutError;
   * the attempt has failed already), its lease was lost (another consumer may hold the message
   * now; whatever this handler does next is ignored), or its consumer is stopping (reason: an
   * AbortError; a handler that then gives up, throwing that reason or any AbortError, puts its
   * message back at once, as no attempt). Pass it to `fetch` and the like.
   */
  signal: AbortSignal;
  /**
   * A number that grows with every claim of any message of this queue: for this id it grows with
   * every delivery and never repeats, across acknowledgements and enqueues of the same id again.
   * A token for fenced writes downstream (write only if the stored fence is lower), so a late
   * write from a handler that lost its lease or timed out loses to a newer delivery's.
   */
  fence: number;
}

/** `enqueue`'s options: when the message is due (`delayMs` or `runAt`, not both) and its id. */
export interface EnqueueOptions {
  /** Due this many ms from now (Redis server clock): a whole number >= 0.
   * @default 0 (due at once) */
  delayMs?: number;
  /** Due at this time (ms since the epoch, or a Date); a time in the past is due at once. A whole
   * number >= 0 or a valid Date; not with `delayMs`.
   * @default now + `delayMs` */
  runAt?: number | Date;
  /** The message id: a non-empty well-formed string of at most 1,024 bytes (UTF-8). Enqueuing an
   * id that is scheduled or in flight changes nothing; one that is dead is scheduled afresh.
   * @default a random UUID */
  id?: string;
}

/** One message of `enqueueMany`: its payload and enqueue options. */
export interface EnqueueManyItem<T = unknown> extends EnqueueOptions {
  /** JSON that comes back as it was, as `enqueue`'s `payload`. */
  payload: T;
}

/** `reschedule`'s options: the new due time, `delayMs` or `runAt` (not both). */
export interface RescheduleOptions {
  /** Due this many ms from now (Redis server clock): a whole number >= 0.
   * @default 0 (due at once) */
  delayMs?: number;
  /** Due at this time (ms since the epoch, or a Date); a past time is due at once.
   * @default now + `delayMs` */
  runAt?: number | Date;
}

/**
 * Options of `consume()` and `@OnDelayed`; `T`: the payload type, which `rateLimit.key` reads.
 * Every option is checked when the consumer is created (`consume()` throws, `@OnDelayed` fails
 * `app.init()`); an unknown option is a TypeError, and `undefined` means the default.
 */
export interface ConsumeOptions<T = unknown> {
  /** Handlers running at once in this consumer (process-wide: see `globalConcurrency`).
   * @default 10
   * @throws TypeError / RangeError `opts.concurrency` when not an integer >= 1. */
  concurrency?: number;
  /** ms a claimed message's lease lasts; renewed every third of it while its handler runs, so it
   * bounds how long a consumer that died keeps a message (then it is delivered again).
   * @default 30_000
   * @throws TypeError / RangeError `opts.visibilityTimeoutMs` when not an integer >= 1. */
  visibilityTimeoutMs?: number;
  /** Deliveries before a failing message moves to the dead set (1: never retried).
   * @default 3
   * @throws TypeError / RangeError `opts.maxAttempts` when not an integer >= 1. */
  maxAttempts?: number;
  /** ms before the first retry, doubled for each further one (0: retried at once).
   * @default 1000
   * @throws TypeError / RangeError `opts.backoffMs` when not an integer >= 0. */
  backoffMs?: number;
  /** ms a retry waits at most, however often the delay has doubled (or whatever `backoff` says).
   * @default 3_600_000 (an hour)
   * @throws TypeError / RangeError `opts.maxBackoffMs` when not an integer >= 0. */
  maxBackoffMs?: number;
  /**
   * ms before the next attempt once attempt `attempt` (1 on first delivery) failed with `error`:
   * replaces the doubling of `backoffMs` (so not given with it), still capped by `maxBackoffMs`.
   * A throw, or a result that is not a finite number >= 0, falls back to the doubling (logged
   * once per consumer). Not called for `RetryLater` (its own delay) or `Unrecoverable` (no retry).
   * @default the doubling of `backoffMs`
   * @throws TypeError `opts.backoff` when not a function, or given with `opts.backoffMs`.
   */
  backoff?: (attempt: number, error: unknown) => number;
  /** Each retry's delay drawn uniformly from [delay / 2, delay] rather than the delay itself, so
   * messages that failed together (an upstream outage) do not all come back at once.
   * @default false
   * @throws TypeError `opts.jitter` when not a boolean. */
  jitter?: boolean;
  /**
   * At most `limit` handler starts per `windowMs` per key (e.g. per tenant), across every process
   * consuming the queue, counted by the rate limiter's own algorithm (default sliding window).
   * `key` names a message's counter (default: one counter for the whole queue); it must return a
   * non-empty string, else the message fails as if its handler had thrown.
   *
   * A message over its limit goes back to the queue, due when its key allows again: that is not
   * an attempt, and it never dies of waiting. Keys never wait for each other: a refused message
   * moves out of the way of the others due. How: the claim script leases due messages; the
   * consumer computes their keys (the option applies to messages already enqueued, so the key is
   * the consumer's to compute), then one script per batch checks that each claim still holds its
   * lease, charges each key's counter (a key in the queue's hash slot, so one atomic step on a
   * cluster) and gives the refused back, counting their claim as no attempt. A consumer that
   * dies between the two steps leaves leases that expire as usual.
   *
   * `adaptive: true` learns an upstream's limit nobody told us (AIMD, per key, shared by every
   * process): a handler's `RetryLater` with `pauseKey` (the upstream answered 429) halves that
   * key's limit, not below 1 and at most once a window; each window without one adds 1 back, up
   * to `limit`. See docs/flow-control.md.
   * @default none: handlers start as fast as `concurrency` allows
   * @throws TypeError `opts.rateLimit` when not an object; TypeError / RangeError
   * `opts.rateLimit.limit` / `.windowMs` when not a positive integer; TypeError
   * `opts.rateLimit.algorithm` when not a RateLimitAlgorithm; RangeError `opts.rateLimit` for a
   * token bucket whose limit × windowMs is above 2^53; TypeError `opts.rateLimit.key` when not a
   * function; TypeError `opts.rateLimit.adaptive` when not a boolean.
   */
  // a method, so that options for one payload type still fit ConsumeOptions<unknown> (@OnDelayed)
  rateLimit?: RateLimitPolicy & { key?(message: DelayedMessage<T>): string; adaptive?: boolean };
  /**
   * Handlers running at once at most per key, across every process: `key` names a message's
   * concurrency key (a tenant, an account), and at most `limit` of its messages are handled at
   * once; it must return a non-empty string, else the message fails as if its handler had thrown.
   *
   * A message whose key has every slot taken waits: back in the queue, out of the way of the other
   * keys' messages (a tenant with 10,000 waiting does not hold up one with 1), and due again as
   * soon as one of its key's handlers ends, in the order they came to wait. Waiting is not an
   * attempt, and it never dies of it. A slot is held while its message's lease is, so one a dead
   * consumer held frees when that lease runs out (`visibilityTimeoutMs`); a waiting message is
   * looked at again after that long anyway. A `RetryLater` with `pauseKey` pauses the key too.
   * With a `rateLimit` as well, a message takes a slot and a permit in one atomic step, or
   * neither. See docs/flow-control.md.
   * @default none: only `concurrency` per consumer (and `globalConcurrency` per queue)
   * @throws TypeError `opts.concurrencyPerKey` when not an object with only `limit` and `key`;
   * TypeError / RangeError `opts.concurrencyPerKey.limit` when not an integer >= 1; TypeError
   * `opts.concurrencyPerKey.key` when not a function.
   */
  concurrencyPerKey?: { limit: number; key(message: DelayedMessage<T>): string };
  /**
   * Handlers of this queue running at once at most, across every process. Counted from the
   * queue's leases: a consumer that dies frees its share when its leases expire
   * (`visibilityTimeoutMs`). A consumer finding the queue full does not poll: whatever frees a
   * slot first (an ack, a failure, a rate-limit deferral) wakes it over the queue's channel.
   * @default none: only `concurrency` per consumer
   * @throws TypeError / RangeError `opts.globalConcurrency` when not an integer >= 1.
   */
  globalConcurrency?: number;
  /**
   * ms a handler may run: then `message.signal` fires with a DelayQueueTimeoutError, and the
   * attempt fails with it (retried after the backoff, dead after `maxAttempts`), even if the
   * handler ignores the signal; what that handler does afterwards (its resolve, its throw) changes
   * nothing. Until it really ends it still takes one of `concurrency`'s places.
   * @default none: a handler runs as long as it takes (its lease is renewed meanwhile)
   * @throws TypeError / RangeError `opts.timeoutMs` when not an integer from 1 to 2^31 − 1.
   */
  timeoutMs?: number;
}

/** Module option `delayQueue`: how much of each queue's dead set is kept. Checked when the
 * module is created; an unknown option is a TypeError. */
export interface DelayQueueOptions {
  /** ms a dead message is kept; older ones are deleted (with their payloads) by the queue's
   * consumers as they claim, up to 1,000 at a time.
   * @default 604_800_000 (7 days)
   * @throws TypeError / RangeError `delayQueue.deadRetentionMs` when not an integer >= 1. */
  deadRetentionMs?: number;
  /** Dead messages kept per queue, the newest; older ones are deleted as later ones die (0: none
   * is kept).
   * @default 10_000
   * @throws TypeError / RangeError `delayQueue.maxDead` when not an integer >= 0. */
  maxDead?: number;
}

/** `size()`'s answer: a queue's messages by state. */
export interface QueueSize {
  /** Waiting for their due time, or due and not yet claimed. */
  scheduled: number;
  /** Claimed by a consumer and not yet acknowledged or failed (a dead consumer's, until its
   * lease runs out). */
  inFlight: number;
  /** In the dead set: out of attempts, kept as `DelayQueueOptions` says. */
  dead: number;
  /** Only when `size` was given `overdueAfterMs`: the scheduled messages due more than that long
   * ago and not yet claimed. */
  overdue?: number;
}

/** A message in a queue's dead set, as `dead()` lists it. */
export interface DeadMessage<T = unknown> {
  /** Its id: what `retryDead` and `purgeDead` take. */
  id: string;
  /** The queue it died in. */
  queue: string;
  /** The payload, as enqueued; `null` when what Redis holds cannot be parsed as JSON (written
   * there by something else, or damaged), and then `error` says so. */
  payload: T;
  /** Deliveries it had (rate-limit waits are not counted); a message whose payload could not be
   * parsed dies on the delivery that found it so, without reaching its handler. */
  attempts: number;
  /** The last failure, as `Name: message`. When the payload cannot be parsed: `SyntaxError: the
   * stored payload could not be parsed as JSON: …`, followed by `; it died of <error>` when it
   * died of something else (its payload was damaged after it died). */
  error: string;
  /** When it died (ms since the epoch, Redis server clock). */
  diedAt: number;
}

/** One page of `dead()`. */
export interface DeadPage<T = unknown> {
  /** Oldest first. */
  messages: DeadMessage<T>[];
  /** Pass to `dead()` for the next page; null when this page is the last. */
  cursor: string | null;
}

/** A recurring schedule (`schedule()`): a cron in a time zone, or a fixed interval. */
export interface ScheduleSpec<T = unknown> {
  /** 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first); day of month
   * and day of week match either, as cron reads them. Exactly one of `cron` and `everyMs`. */
  cron?: string;
  /** The IANA time zone `cron` reads its wall clock in (default 'UTC'). */
  tz?: string;
  /** Every this many ms, counted from `startAt` (from the epoch when omitted, so schedules of one
   * interval tick together). */
  everyMs?: number;
  /** Each tick's message's payload (default null). */
  payload?: T;
  /** No tick before it (a Date or ms since the epoch). */
  startAt?: number | Date;
  /** No tick after it. */
  endAt?: number | Date;
  /** Runs in all; then the schedule has no next tick. */
  limit?: number;
}

/** A recurring schedule as `schedules()` lists it. */
export interface ScheduleInfo {
  queue: string;
  name: string;
  /** As given, with times in ms, `tz` filled in for a cron and `payload` null when omitted. */
  spec: object;
  /** Its next tick: the message `<name>@<nextRunAt>` is scheduled; null once it has no more. */
  nextRunAt: number | null;
  /** Ticks run since it was last created or replaced. */
  runs: number;
}

/** Where a message is: `get()`'s `state`, and the sets `list()` pages. */
export type MessageState = 'scheduled' | 'in-flight' | 'dead';

/** A message as `list()` shows it. */
export interface ListedMessage<T = unknown> {
  id: string;
  /** When it is due (scheduled), or was due for the delivery now in flight (in flight) or for its
   * last one (dead); ms since the epoch, Redis server clock. */
  runAt: number;
  /** Deliveries so far: 0 before the first, 1 while the first runs; rate-limit and concurrency
   * waits and RetryLater are not counted. */
  attempts: number;
  /** The payload, as enqueued; `null` when what Redis holds cannot be parsed as JSON. */
  payload: T;
}

/** A message as `get()` finds it. */
export interface QueuedMessage<T = unknown> extends ListedMessage<T> {
  state: MessageState;
}

/** `list()`'s options. */
export interface ListOptions {
  /** The set to page: due order for 'scheduled', lease deadline order for 'in-flight'. */
  state: 'scheduled' | 'in-flight';
  /** Messages per page, 1 to 1,000 (default 100). */
  limit?: number;
  /** The previous page's cursor; omitted or null: the first page. */
  cursor?: string | null;
}

/** One page of `list()`. */
export interface MessagePage<T = unknown> {
  messages: ListedMessage<T>[];
  /** Pass to `list()` for the next page; null when this page is the last. */
  cursor: string | null;
}

/** What `consume()` returns. Application shutdown stops it too. */
export interface DelayQueueConsumer {
  /** Claims nothing more and waits (at most `timeoutMs` ms, default 10 s) for the handlers in
   * flight; a message whose handler is still running then is delivered again once its lease runs
   * out. Stopping twice is harmless.
   * @throws TypeError / RangeError `timeoutMs` when not a finite number >= 0 (the promise rejects). */
  stop(timeoutMs?: number): Promise<void>;
}

/** A consumer's handler: resolving acknowledges the message; throwing or rejecting is a failed
 * attempt (retried with backoff, dead after `maxAttempts`), except `RetryLater` (due again after
 * its delay, no attempt) and `Unrecoverable` (dead now). */
// eslint-disable-next-line @typescript-eslint/no-redundant-type-constituents -- says a handler may return a promise, as the API's contract reads
export type DelayedHandler<T = unknown> = (message: DelayedMessage<T>) => unknown | Promise<unknown>;
