import { describeValue, numberError } from '../validation.js';

// Recognised by a brand rather than `instanceof`: an app that loads the library twice (its ESM
// and CommonJS builds, or two copies in node_modules) throws one copy's class at the other's
// consumer.
const RETRY_LATER = Symbol.for('nest-redis-limit.RetryLater');
const UNRECOVERABLE = Symbol.for('nest-redis-limit.Unrecoverable');

/** `RetryLater`'s options. */
export interface RetryLaterOptions {
  /**
   * Hold every message with this message's rate key (the consumer's `rateLimit.key`) or
   * concurrency key (`concurrencyPerKey.key`) until this one is due again, in every process: an
   * upstream answered 429 with Retry-After for the tenant, not only for this call. Needs a
   * consumer with `rateLimit` or `concurrencyPerKey`; elsewhere the message alone waits (and the
   * consumer logs that once).
   * @default false
   */
  pauseKey?: boolean;
}

/**
 * Thrown by a handler: run this message again after `delayMs`. That is no attempt (it does not
 * count towards `maxAttempts`, and the message never dies of it), and it records no error.
 * @example
 * ```ts
 * @OnDelayed('webhooks', { rateLimit: { limit: 50, windowMs: 1000, key: (m) => (m.payload as Webhook).tenant } })
 * async send(message: DelayedMessage<Webhook>) {
 *   const response = await fetch(message.payload.url, { method: 'POST', body: message.payload.body });
 *   if (response.status === 429) throw new RetryLater(retryAfterMs(response), { pauseKey: true });
 *   if (response.status === 410) throw new Unrecoverable('the endpoint is gone');
 *   if (!response.ok) throw new Error(`HTTP ${response.status}`); // an attempt: backoff, then dead
 * }
 * ```
 */
export class RetryLater extends Error {
  readonly [RETRY_LATER] = true;
  readonly pauseKey: boolean;

  /**
   * @param delayMs - ms until the message is due again (Redis server clock): a whole number >= 0
   * @throws TypeError / RangeError `delayMs` when not a whole number >= 0; TypeError `opts` when
   * not an object, `opts.pauseKey` when not a boolean
   */
  constructor(
    readonly delayMs: number,
    opts: RetryLaterOptions = {},
  ) {
    if (typeof delayMs !== 'number' || !Number.isSafeInteger(delayMs) || delayMs < 0) {
      throw new (numberError(delayMs))(`RetryLater: delayMs must be a whole number of ms >= 0, got ${describeValue(delayMs)}`);
    }
    if (typeof opts !== 'object' || opts === null) throw new TypeError(`RetryLater: opts must be an object, got ${describeValue(opts)}`);
    const { pauseKey = false } = opts;
    if (typeof pauseKey !== 'boolean') throw new TypeError(`RetryLater: opts.pauseKey must be a boolean, got ${describeValue(pauseKey)}`);
    super(`retry in ${delayMs} ms${pauseKey ? ', pausing its key' : ''}`);
    this.name = 'RetryLater';
    this.pauseKey = pauseKey;
  }
}

/**
 * Thrown by a handler: this message can never succeed (a payload the upstream rejects for good,
 * a resource that is gone). It moves to the dead set now, whatever attempts it has left, with
 * this error as its last; `retryDead` can still bring it back.
 */
export class Unrecoverable extends Error {
  readonly [UNRECOVERABLE] = true;

  constructor(message?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'Unrecoverable';
  }
}

export const isRetryLater = (error: unknown): error is RetryLater =>
  typeof error === 'object' && error !== null && (error as { [RETRY_LATER]?: unknown })[RETRY_LATER] === true;

export const isUnrecoverable = (error: unknown): error is Unrecoverable =>
  typeof error === 'object' && error !== null && (error as { [UNRECOVERABLE]?: unknown })[UNRECOVERABLE] === true;

/**
 * Why a handler's `message.signal` fired when it ran past the consumer's `timeoutMs`, and the
 * error its attempt failed with (`Name: message` in the dead set when it was the last).
 */
export class DelayQueueTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the handler timed out: it ran past timeoutMs (${timeoutMs} ms)`);
    this.name = 'DelayQueueTimeoutError';
  }
}

/** The signal's reason when the lease was lost, or the consumer is stopping: an AbortError, as
 * `fetch` and timers reject with. */
export function abortReason(why: string): Error {
  const error = new Error(why);
  error.name = 'AbortError';
  return error;
}
