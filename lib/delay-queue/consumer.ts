import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import { RedisLimitError } from '../errors.js';
import { describeValue, numberError } from '../redis/keys.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import type { ConsumeOptions, DelayedHandler, DelayedMessage, DelayQueueConsumer } from './delay-queue.types.js';

/** Messages one claim takes at most: large batches keep a burst cheap, small ones keep it fair. */
const MAX_BATCH = 200;
/** With nothing due, look again after this long anyway: a wake-up lost while the subscriber
 * was reconnecting costs at most this delay. It is the whole idle cost: one call per 5 s. */
const IDLE_CHECK_MS = 5000;
/** After a Redis failure, try again after this long. */
const RETRY_MS = 500;

interface PendingAck {
  id: string;
  leasedUntil: number;
}

export interface ConsumerDeps {
  redis: RedisConnection;
  queue: string;
  keys: string[];
  handler: DelayedHandler;
  options: Required<ConsumeOptions>;
  onStop: (consumer: Consumer) => void;
}

/**
 * One consumer of one queue. It sleeps on a local timer until the earliest due time the last
 * claim reported (corrected for the offset between this machine's clock and the server's), is
 * woken early by the queue's channel when an earlier message arrives, claims due messages in
 * batches with one script call, and acknowledges handled ones in batches too.
 */
export class Consumer implements DelayQueueConsumer {
  private readonly logger: Logger;
  private timer: NodeJS.Timeout | undefined;
  private wakeAt = Infinity;
  /** The earliest due time announced while a claim was in flight. */
  private hinted = Infinity;
  private claiming = false;
  /** The last claim filled all the room there was: more may be due when a handler finishes. */
  private saturated = false;
  private again = false;
  private stopped = false;
  private readonly inFlight = new Set<Promise<void>>();
  /** Handled messages to acknowledge, each with the local time its lease runs out. */
  private acks: PendingAck[] = [];
  private ackRetry: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** server clock − local clock, in ms, from the last claim. */
  private offsetMs = 0;

  constructor(private readonly deps: ConsumerDeps) {
    this.logger = new Logger(`DelayQueue:${deps.queue}`);
  }

  start(): void {
    this.wake();
  }

  /** A message due at `runAt` (server ms) was enqueued: wake then, if that is earlier than planned. */
  hint(runAt: number): void {
    // a claim in flight may have read the queue before this message arrived: keep the hint for
    // when its reply plans the next wake-up
    if (this.claiming) this.hinted = Math.min(this.hinted, runAt);
    else this.planWake(runAt);
  }

  /** Claim now (after a reconnect, when capacity frees up). */
  wake(): void {
    if (this.stopped) return;
    if (this.claiming) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.wakeAt = Infinity;
    void this.claim();
  }

  async stop(timeoutMs = 10_000): Promise<void> {
    if (!(typeof timeoutMs === 'number' && Number.isFinite(timeoutMs) && timeoutMs >= 0)) {
      throw new (numberError(timeoutMs))(`timeoutMs must be a finite number >= 0, got ${describeValue(timeoutMs)}`);
    }
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.timer);
    this.deps.onStop(this);
    await Promise.race([Promise.allSettled([...this.inFlight]), sleep(timeoutMs, undefined, { ref: false })]);
    await this.flushAcks();
    // a stopped consumer retries no more: its connection is about to close
    clearTimeout(this.ackRetry);
    if (this.acks.length > 0) this.logger.warn(`stopped with ${this.acks.length} message(s) unacknowledged; they will be delivered again`);
  }

  /** Replaces the planned wake-up by `serverMs`, or by a hint received meanwhile if earlier. */
  private replan(serverMs: number): void {
    const at = Math.min(serverMs, this.hinted);
    this.hinted = Infinity;
    this.wakeAt = Infinity;
    this.planWake(at);
  }

  private planWake(serverMs: number): void {
    if (this.stopped || serverMs >= this.wakeAt) return;
    clearTimeout(this.timer);
    this.wakeAt = serverMs;
    const delay = Math.max(0, serverMs - (Date.now() + this.offsetMs));
    this.timer = setTimeout(() => this.wake(), delay);
    this.timer.unref();
  }

  private async claim(): Promise<void> {
    this.claiming = true;
    const { redis, keys, options } = this.deps;
    try {
      do {
        this.again = false;
        const room = options.concurrency - this.inFlight.size;
        if (room <= 0) break; // a finishing handler wakes us
        // leases run from the claim's execution, which is after this: a safe local bound for them
        const leasedUntil = Date.now() + options.visibilityTimeoutMs;
        const claim = redis.scripts.send('queueClaim', keys, ['', Math.min(room, MAX_BATCH), options.visibilityTimeoutMs]);
        let reply: (string | number)[];
        try {
          reply = (await redis.scripts.bounded(claim, 'queueClaim')) as (string | number)[];
        } catch (error) {
          // the claim may still run on a Redis that is only slow: whatever it leased is ours to handle
          claim.then((late) => !this.stopped && this.handle(late as (string | number)[], leasedUntil), () => undefined);
          throw error;
        }
        const [now, next] = reply as [number, number];
        this.offsetMs = now - Date.now();
        const claimed = this.handle(reply, leasedUntil);
        this.saturated = claimed === room;
        if (claimed === Math.min(room, MAX_BATCH) && claimed < room) this.again = true; // a full batch: maybe more due
        this.replan(next >= 0 ? Math.min(next, now + IDLE_CHECK_MS) : now + IDLE_CHECK_MS);
        redis.reportSuccess();
      } while (this.again && !this.stopped);
    } catch (error) {
      if (!this.stopped) {
        if (error instanceof RedisLimitError) this.deps.redis.reportFailure(error);
        else this.logger.error(`claim failed: ${(error as Error).message}`);
        this.replan(Date.now() + this.offsetMs + RETRY_MS);
      }
    } finally {
      this.claiming = false;
    }
  }

  /** Starts the handlers of a claim's messages; returns how many there were. */
  private handle(reply: (string | number)[], leasedUntil: number): number {
    for (let i = 2; i < reply.length; i += 4) {
      this.run(
        {
          id: String(reply[i]),
          queue: this.deps.queue,
          payload: JSON.parse(String(reply[i + 1])) as unknown,
          runAt: Number(reply[i + 2]),
          attempt: Number(reply[i + 3]),
        },
        leasedUntil,
      );
    }
    return (reply.length - 2) / 4;
  }

  private run(message: DelayedMessage, leasedUntil: number): void {
    const { options } = this.deps;
    if (message.attempt > options.maxAttempts) {
      // delivered more often than allowed without an answer: its handler keeps dying
      void this.fail(message, new Error('the consumer died or timed out on every attempt'), true);
      return;
    }
    const { events } = this.deps.redis;
    const { id, queue, attempt } = message;
    events.queue({ type: 'redis-limit.queue.delivered', queue, id, attempt, runAt: message.runAt });
    const running: Promise<void> = (async () => {
      try {
        await this.deps.handler(message);
        events.queue({ type: 'redis-limit.queue.handled', queue, id, attempt });
        this.ack({ id: message.id, leasedUntil });
      } catch (error) {
        await this.fail(message, error, message.attempt >= options.maxAttempts);
      }
    })().finally(() => {
      this.inFlight.delete(running);
      if (this.saturated) this.wake();
    });
    this.inFlight.add(running);
  }

  /** Acks go out in one call per turn of the event loop. */
  private ack(pending: PendingAck): void {
    this.acks.push(pending);
    if (this.acks.length === 1 && this.ackRetry === undefined) setImmediate(() => void this.flushAcks());
  }

  private async flushAcks(): Promise<void> {
    await this.flushing;
    clearTimeout(this.ackRetry);
    this.ackRetry = undefined;
    if (this.acks.length === 0) return;
    const batch = this.acks;
    this.acks = [];
    this.flushing = this.deps.redis.scripts.run('queueAck', this.deps.keys, batch.map((a) => a.id)).then(
      () => undefined,
      (error: unknown) => this.ackFailed(batch, error as Error),
    );
    await this.flushing;
  }

  /**
   * A message handled but not acknowledged would be delivered again when its lease runs out, so
   * a failed ack (Redis paused, restarting, the connection killed) is retried while the lease
   * lasts. Past it, another consumer may hold the message, or a new one may have taken its id.
   */
  private ackFailed(batch: PendingAck[], error: Error): void {
    const now = Date.now();
    const live = batch.filter((a) => a.leasedUntil > now + RETRY_MS);
    const given = batch.length - live.length;
    if (given > 0) {
      this.logger.warn(`could not acknowledge ${given} message(s) before their lease ran out (${error.message}); they will be delivered again`);
    }
    if (live.length === 0) return;
    this.acks.unshift(...live);
    this.ackRetry ??= setTimeout(() => void this.flushAcks(), RETRY_MS).unref();
  }

  private async fail(message: DelayedMessage, error: unknown, dead: boolean): Promise<void> {
    const { options, redis, keys } = this.deps;
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const backoff = dead ? -1 : options.backoffMs * 2 ** (message.attempt - 1);
    try {
      const dueAgain = Number(await redis.scripts.run('queueFail', keys, ['', message.id, backoff, text, message.attempt]));
      if (dueAgain >= 0) this.planWake(dueAgain);
      // -2: that attempt no longer held the message (its lease ran out); nothing to report
      const { id, queue, attempt } = message;
      if (dueAgain === -1) redis.events.queue({ type: 'redis-limit.queue.dead', queue, id, attempt, error });
      else if (dueAgain >= 0) redis.events.queue({ type: 'redis-limit.queue.retry', queue, id, attempt, dueAt: dueAgain, error });
    } catch (failure) {
      this.logger.warn(`could not record the failure of ${message.id}: ${(failure as Error).message}`);
    }
  }
}
