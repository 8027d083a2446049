import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import { RedisLimitError } from '../errors.js';
import { describeValue, numberError } from '../redis/keys.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import { retryDelayMs } from './backoff.js';
import type { ResolvedConsumeOptions } from './delay-queue.input.js';
import type { DelayedHandler, DelayedMessage, DelayQueueConsumer, DelayQueueOptions } from './delay-queue.types.js';
import { LeaseRenewer, type Lease } from './lease-renewer.js';
import { RateAdmission, type Admission } from './rate-admission.js';
import type { WakeCommand } from './wake-ups.js';

/** Messages one claim takes at most: large batches keep a burst cheap, small ones keep it fair. */
const MAX_BATCH = 200;
/** With nothing due, look again after this long anyway: a wake-up lost while the subscriber
 * was reconnecting costs at most this delay. It is the whole idle cost: one call per 5 s. */
const IDLE_CHECK_MS = 5000;
/** After a Redis failure, try again after this long. */
const RETRY_MS = 500;
/** Dead messages one death or claim deletes at most (past retention or maxDead), so its script
 * stays short; the rest go with later calls. */
const DEAD_TRIM_BATCH = 1000;
/** A claimed message: claim.lua's reply holds five fields per message. */
const CLAIM_FIELDS = 5;

export interface ConsumerDeps {
  redis: RedisConnection;
  queue: string;
  keys: string[];
  /** The queue's wake-up channel and publish command: a claim that finds the queue at its
   * global concurrency leaves them for whatever frees a slot to wake us (free-slot.lua). */
  wakeUp: { channel: string; command: () => WakeCommand | Promise<WakeCommand> };
  handler: DelayedHandler;
  options: ResolvedConsumeOptions;
  /** What the dead set keeps (module option `delayQueue`). */
  dead: Required<DelayQueueOptions>;
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
  /** Every message this consumer holds, renewed until its outcome is recorded. */
  private readonly leases: LeaseRenewer;
  /** Handled messages to acknowledge. */
  private acks: Lease[] = [];
  private ackRetry: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  /** server clock − local clock, in ms, from the last claim. */
  private offsetMs = 0;
  /** With a rate limit, what admits claimed messages to their handlers. */
  private readonly admission: RateAdmission | undefined;

  constructor(private readonly deps: ConsumerDeps) {
    this.logger = new Logger(`DelayQueue:${deps.queue}`);
    const { redis, keys, options } = deps;
    this.leases = new LeaseRenewer({ redis, keys, visibilityTimeoutMs: options.visibilityTimeoutMs, logger: this.logger });
    if (options.rateLimit) this.admission = new RateAdmission(redis, redis.keys, deps.queue, keys, options.rateLimit);
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
    // a stopped consumer retries and renews no more: its connection is about to close
    clearTimeout(this.ackRetry);
    this.leases.stop();
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
        const asked = Math.min(room, MAX_BATCH);
        const args = ['', asked, options.visibilityTimeoutMs, this.deps.dead.deadRetentionMs, DEAD_TRIM_BATCH, options.globalConcurrency ?? '', this.admission ? 1 : ''];
        if (options.globalConcurrency !== undefined) args.push(this.deps.wakeUp.channel, await this.deps.wakeUp.command());
        const claim = redis.scripts.send('queueClaim', keys, args);
        let reply: (string | number)[];
        try {
          reply = (await redis.scripts.bounded(claim, 'queueClaim')) as (string | number)[];
        } catch (error) {
          // the claim may still run on a Redis that is only slow: whatever it leased is ours to handle
          claim.then((late) => (this.stopped ? undefined : this.handle(late as (string | number)[], leasedUntil)), () => undefined).catch(() => undefined);
          throw error;
        }
        const [now, next] = reply as [number, number];
        this.offsetMs = now - Date.now();
        const claimed = (reply.length - 2) / CLAIM_FIELDS;
        await this.handle(reply, leasedUntil);
        const left = options.concurrency - this.inFlight.size;
        this.saturated = left <= 0;
        if (claimed === asked && left > 0) this.again = true; // a full batch (or some deferred): maybe more due
        // at the queue's global concurrency, `next` is the earliest lease deadline, and whatever
        // frees a slot first wakes us over the channel
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

  /** Starts the handlers of a claim's messages, once the rate limit (if any) admits them. */
  private async handle(reply: (string | number)[], leasedUntil: number): Promise<void> {
    const fresh: DelayedMessage[] = [];
    const tokens: number[] = [];
    for (let i = 2; i < reply.length; i += CLAIM_FIELDS) {
      const id = String(reply[i]);
      const attempt = Number(reply[i + 3]);
      const token = Number(reply[i + 4]);
      const held = this.leases.get(id);
      if (held) {
        // its lease ran out (a renewal came late) and our own claim took it back: the handler
        // still running here settles the new claim, rather than a second one beside it
        Object.assign(held, { token, attempt, leasedUntil });
        continue;
      }
      fresh.push({ id, queue: this.deps.queue, payload: JSON.parse(String(reply[i + 1])) as unknown, runAt: Number(reply[i + 2]), attempt });
      tokens.push(token);
    }
    const start = (verdicts: Admission[] | undefined) => this.settle(fresh, tokens, verdicts, leasedUntil);
    if (!this.admission || fresh.length === 0) return start(undefined);
    // refused by Redis, admission leaves the leases to run out: the messages come back then, and
    // those claims count as no attempt
    start(await this.admission.admit(fresh, tokens, (late) => (this.stopped ? undefined : start(late))));
  }

  /** Runs, defers or fails each claimed message as admission decided (all start without it). */
  private settle(messages: DelayedMessage[], tokens: number[], verdicts: Admission[] | undefined, leasedUntil: number): void {
    messages.forEach((message, i) => {
      const verdict = verdicts?.[i] ?? { kind: 'start' };
      const lease = { id: message.id, token: tokens[i]!, attempt: message.attempt, leasedUntil };
      if (verdict.kind === 'start') this.run(message, lease);
      else if (verdict.kind === 'deferred') this.hint(verdict.dueAt); // the claim's reply plans the wake-up: keep this for it
      else if (verdict.kind === 'broken') {
        this.leases.hold(lease);
        void this.fail(message, lease, verdict.error);
      }
    });
  }

  private run(message: DelayedMessage, lease: Lease): void {
    const { options } = this.deps;
    this.leases.hold(lease);
    if (message.attempt > options.maxAttempts) {
      // delivered more often than allowed without an answer: its handler keeps dying
      void this.fail(message, lease, new Error('the consumer died or timed out on every attempt'));
      return;
    }
    const { events } = this.deps.redis;
    const { id, queue, attempt } = message;
    events.queue({ type: 'redis-limit.queue.delivered', queue, id, attempt, runAt: message.runAt });
    const running: Promise<void> = (async () => {
      try {
        await this.deps.handler(message);
        events.queue({ type: 'redis-limit.queue.handled', queue, id, attempt });
        this.ack(lease);
      } catch (error) {
        await this.fail(message, lease, error);
      }
    })().finally(() => {
      this.inFlight.delete(running);
      if (this.saturated) this.wake();
    });
    this.inFlight.add(running);
  }

  /** Acks go out in one call per turn of the event loop. */
  private ack(lease: Lease): void {
    this.acks.push(lease);
    if (this.acks.length === 1 && this.ackRetry === undefined) setImmediate(() => void this.flushAcks());
  }

  private async flushAcks(): Promise<void> {
    await this.flushing;
    clearTimeout(this.ackRetry);
    this.ackRetry = undefined;
    if (this.acks.length === 0) return;
    const batch = this.acks;
    this.acks = [];
    const tokens = batch.map((lease) => lease.token);
    const args = batch.flatMap((lease, i) => [lease.id, tokens[i]!]);
    this.flushing = this.deps.redis.scripts.run('queueAck', this.deps.keys, args).then(
      () => this.acked(batch, tokens),
      (error: unknown) => this.ackFailed(batch, error as Error),
    );
    await this.flushing;
  }

  /** Acknowledged, or refused to a stale claim; one claimed again by this consumer meanwhile
   * (our claim ran before the ack) is acknowledged again, as the claim it now is. */
  private acked(batch: Lease[], tokens: number[]): void {
    const again = batch.filter((lease, i) => lease.token !== tokens[i] && this.leases.get(lease.id) === lease);
    for (const lease of batch) if (!again.includes(lease)) this.leases.release(lease);
    again.forEach((lease) => this.ack(lease));
  }

  /**
   * A message handled but not acknowledged would be delivered again when its lease runs out, so
   * a failed ack (Redis paused, restarting, the connection killed) is retried while the lease
   * lasts. Past it, another consumer may hold the message, or a new one may have taken its id.
   */
  private ackFailed(batch: Lease[], error: Error): void {
    const now = Date.now();
    const live = batch.filter((a) => a.leasedUntil > now + RETRY_MS);
    const given = batch.length - live.length;
    batch.filter((a) => !live.includes(a)).forEach((a) => this.leases.release(a));
    if (given > 0) {
      this.logger.warn(`could not acknowledge ${given} message(s) before their lease ran out (${error.message}); they will be delivered again`);
    }
    if (live.length === 0) return;
    this.acks.unshift(...live);
    this.ackRetry ??= setTimeout(() => void this.flushAcks(), RETRY_MS).unref();
  }

  /** Records a failure: a retry after the backoff, or death once the last attempt has failed. */
  private async fail(message: DelayedMessage, lease: Lease, error: unknown): Promise<void> {
    const { options, dead, redis, keys } = this.deps;
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const { id, queue } = message;
    try {
      let dueAgain: number;
      let attempt: number;
      let token: number;
      do {
        ({ attempt, token } = lease);
        const backoff = attempt >= options.maxAttempts ? -1 : retryDelayMs(attempt, options);
        const args = ['', id, backoff, text, token, dead.deadRetentionMs, dead.maxDead, DEAD_TRIM_BATCH];
        dueAgain = Number(await redis.scripts.run('queueFail', keys, args));
        // -2: that claim no longer holds the message; unless our own claim took it back
        // meanwhile (then this failure is the new claim's), nothing to record or report
      } while (dueAgain === -2 && lease.token !== token && this.leases.get(id) === lease);
      if (dueAgain >= 0) this.planWake(dueAgain);
      if (dueAgain === -1) redis.events.queue({ type: 'redis-limit.queue.dead', queue, id, attempt, error });
      else if (dueAgain >= 0) redis.events.queue({ type: 'redis-limit.queue.retry', queue, id, attempt, dueAt: dueAgain, error });
    } catch (failure) {
      this.logger.warn(`could not record the failure of ${message.id}: ${(failure as Error).message}`);
    } finally {
      // recorded, refused, or lost to an outage: either way it comes back without us
      this.leases.release(lease);
    }
  }
}
