import type { RateLimitPolicy } from '../rate-limit/policy.js';

/** A message as a handler receives it. */
export interface DelayedMessage<T = unknown> {
  id: string;
  queue: string;
  payload: T;
  /** When it was due (ms, Redis server clock): its runAt, or the time of its retry. */
  runAt: number;
  /** 1 on first delivery. */
  attempt: number;
}

export interface EnqueueOptions {
  /** Due this many ms from now (Redis server clock). Default 0. */
  delayMs?: number;
  /** Due at this time (ms since the epoch, or a Date); a time in the past is due at once. */
  runAt?: number | Date;
  /** The message id; enqueuing an id that is scheduled or in flight changes nothing. Default: a UUID. */
  id?: string;
}

/** One message of `enqueueMany`: its payload and enqueue options. */
export interface EnqueueManyItem<T = unknown> extends EnqueueOptions {
  payload: T;
}

export interface RescheduleOptions {
  delayMs?: number;
  runAt?: number | Date;
}

/** `T`: the payload type, which `rateLimit.key` reads. */
export interface ConsumeOptions<T = unknown> {
  /** Handlers running at once in this consumer. Default 10. */
  concurrency?: number;
  /** ms a claimed message's lease lasts; renewed while its handler runs, so it bounds how long a
   * consumer that died keeps a message (then it is delivered again). Default 30_000. */
  visibilityTimeoutMs?: number;
  /** Deliveries before a failing message moves to the dead set. Default 3. */
  maxAttempts?: number;
  /** ms before the first retry, doubled for each further one. Default 1000. */
  backoffMs?: number;
  /** ms a retry waits at most, however often the delay has doubled. Default 3_600_000. */
  maxBackoffMs?: number;
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
   */
  // a method, so that options for one payload type still fit ConsumeOptions<unknown> (@OnDelayed)
  rateLimit?: RateLimitPolicy & { key?(message: DelayedMessage<T>): string };
  /**
   * Handlers of this queue running at once at most, across every process. Counted from the
   * queue's leases: a consumer that dies frees its share when its leases expire
   * (`visibilityTimeoutMs`). A consumer finding the queue full looks again when one of its own
   * handlers finishes, else within 50 ms.
   */
  globalConcurrency?: number;
}

/** Module option `delayQueue`: how much of each queue's dead set is kept. */
export interface DelayQueueOptions {
  /** ms a dead message is kept; older ones are deleted by the queue's consumers. Default 7 days. */
  deadRetentionMs?: number;
  /** Dead messages kept per queue, the newest; older ones are deleted as later ones die. Default 10_000. */
  maxDead?: number;
}

export interface QueueSize {
  scheduled: number;
  inFlight: number;
  dead: number;
}

/** A message in a queue's dead set, as `dead()` lists it. */
export interface DeadMessage<T = unknown> {
  id: string;
  queue: string;
  payload: T;
  /** Deliveries it had. */
  attempts: number;
  /** The last failure, as `Name: message`. */
  error: string;
  /** When it died (ms, Redis server clock). */
  diedAt: number;
}

export interface DeadPage<T = unknown> {
  /** Oldest first. */
  messages: DeadMessage<T>[];
  /** Pass to `dead()` for the next page; null when this page is the last. */
  cursor: string | null;
}

export interface DelayQueueConsumer {
  /** Claims nothing more and waits (at most `timeoutMs`, default 10 s) for the handlers in flight. */
  stop(timeoutMs?: number): Promise<void>;
}

export type DelayedHandler<T = unknown> = (message: DelayedMessage<T>) => unknown | Promise<unknown>;
