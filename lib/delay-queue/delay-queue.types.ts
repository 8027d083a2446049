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

export interface RescheduleOptions {
  delayMs?: number;
  runAt?: number | Date;
}

export interface ConsumeOptions {
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

export interface DelayQueueConsumer {
  /** Claims nothing more and waits (at most `timeoutMs`, default 10 s) for the handlers in flight. */
  stop(timeoutMs?: number): Promise<void>;
}

export type DelayedHandler<T = unknown> = (message: DelayedMessage<T>) => unknown | Promise<unknown>;
