import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import { RedisLimitError } from '../errors.js';
import type { Telemetry } from '../observability/telemetry.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import { QueueReply } from '../redis/replies.js';
import type { DelayQueueClaimMessageReply, DelayQueueClaimReply } from '../redis/script-bindings.generated.js';
import { failureDelayMs } from './backoff.js';
import { abortReason, DelayQueueTimeoutError, isRetryLater, isUnrecoverable } from './handler-outcomes.js';
import { parsePayload, type ResolvedConsumeOptions } from './delay-queue.input.js';
import type { DelayedHandler, DelayedMessage, DelayQueueConsumer, DelayQueueOptions } from './delay-queue.types.js';
import { LeaseRenewer, type Lease } from './lease-renewer.js';
import { schedulesKey, type QueueKeys } from './queue-keys.js';
import { RecurringTicks } from './recurring-ticks.js';
import { Admission, type SlotKeys, type Verdict } from './admission.js';
import { AckBatcher } from './ack-batcher.js';
import { WakeSchedule } from './wake-schedule.js';
import { isTick, type MessageSources } from './message-sources.js';
import type { WakeCommand } from './wake-ups.js';
import { describeValue, numberError } from '../validation.js';

/** The longest delay a Node timer keeps (2^31 - 1 ms). */
const MAX_TIMER_MS = 2_147_483_647;
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

/** Whether a handler's error is its giving up when its signal fired with `reason`: the reason
 * itself, or an AbortError (what fetch, timers and streams reject with). */
const gaveUp = (error: unknown, reason: Error): boolean => error === reason || (error instanceof Error && error.name === 'AbortError');

export interface ConsumerDeps {
  redis: RedisConnection;
  queue: string;
  keys: QueueKeys;
  /** The queue's wake-up channel and publish command: a claim that finds the queue at its
   * global concurrency leaves them for whatever frees a slot to wake us (free-slot.lua). */
  wakeUp: { channel: string; command: () => WakeCommand | Promise<WakeCommand> };
  handler: DelayedHandler;
  /** The library's own messages' sources (MessageSources): asked before such an outcome is recorded. */
  sources: MessageSources;
  options: ResolvedConsumeOptions;
  /** What the dead set keeps (module option `delayQueue`). */
  dead: Required<DelayQueueOptions>;
  /** Spans for handling, in the trace each message was enqueued in. */
  telemetry: Telemetry;
  onStop: (consumer: Consumer) => void;
}

/**
 * One consumer of one queue. It sleeps until the earliest due time the last claim reported
 * (WakeSchedule), is woken early by the queue's channel when an earlier message arrives, claims
 * due messages in batches with one script call and runs their handlers; what holds the messages
 * meanwhile (LeaseRenewer) and acknowledges them (AckBatcher) are units of their own.
 */
export class Consumer implements DelayQueueConsumer {
  private readonly logger: Logger;
  private readonly schedule = new WakeSchedule(
    () => this.wake(),
    () => this.claiming,
    this.deps.redis.clock,
  );
  /** Stops the claim on each jump of a test clock (messages may have come due). */
  private readonly stopClock = this.deps.redis.clock.onAdvance(() => this.wake());
  private claiming = false;
  /** The last claim filled all the room there was: more may be due when a handler finishes. */
  private saturated = false;
  private again = false;
  private stopped = false;
  private readonly inFlight = new Set<Promise<void>>();
  /** Outcomes waiting to be recorded outside any handler's room (a source asked for time, or a
   * poison message dying): their messages stay leased meanwhile. */
  private readonly recording = new Set<Promise<void>>();
  /** Each delivered message's source, as its claim gave it ('' for a user's message). */
  private readonly sourceOf = new WeakMap<DelayedMessage, string>();
  /** The trace context each claimed message was enqueued in ('' when none). */
  private readonly contextOf = new WeakMap<DelayedMessage, string>();
  /** Every message this consumer holds, renewed until its outcome is recorded. */
  private readonly leases: LeaseRenewer;
  /** Handled messages to acknowledge. */
  private readonly acks: AckBatcher;
  /** Advances the recurring schedules whose ticks this consumer claims. */
  private readonly recurring: RecurringTicks;
  /** With a rate limit or a cap per key, what admits claimed messages to their handlers. */
  private readonly admission: Admission | undefined;
  /** Each delivered message's signal, from the claim until its handler runs. */
  private readonly controllers = new WeakMap<DelayedMessage, AbortController>();
  /** The signals of the handlers running, by their lease (which a reclaim keeps). */
  private readonly running = new Map<Lease, AbortController>();
  /** Every running handler's signal's reason once stop() is called. */
  private readonly stopping = abortReason('the consumer is stopping');
  /** A handler's signal's reason when Redis says another claim holds its message now. */
  private readonly leaseLost = abortReason('its lease was lost: another consumer may hold the message now');
  private backoffReported = false;
  private pauseUnkeyedReported = false;
  /** A `backoff` option that failed: said once per consumer, the doubling stands in. */
  private readonly reportBackoff = (problem: string): void => {
    if (this.backoffReported) return;
    this.backoffReported = true;
    this.logger.error(`${problem}: the doubling of backoffMs stands in (logged once)`);
  };

  constructor(private readonly deps: ConsumerDeps) {
    this.logger = new Logger(`DelayQueue:${deps.queue}`);
    const { redis, keys, options } = deps;
    this.leases = new LeaseRenewer({
      redis,
      keys,
      visibilityTimeoutMs: options.visibilityTimeoutMs,
      logger: this.logger,
      lost: (lease) => this.running.get(lease)?.abort(this.leaseLost),
    });
    this.acks = new AckBatcher({
      send: (leases) => redis.scripts.call('queueAck', { keys, args: { leases } }),
      leases: this.leases,
      logger: this.logger,
      retryMs: RETRY_MS,
      unacknowledged: (leases) => {
        for (const { id, attempt } of leases) redis.events.queue({ type: 'redis-limit.queue.unacknowledged', queue: deps.queue, id, attempt });
      },
    });
    this.recurring = new RecurringTicks({
      redis,
      keys: { ...keys, schedules: schedulesKey(redis.keys, deps.queue) },
      wakeUp: deps.wakeUp,
      missed: (schedule, from, to) => redis.events.queue({ type: 'redis-limit.queue.ticks-missed', queue: deps.queue, schedule, from, to }),
    });
    const { rateLimit, concurrencyPerKey, visibilityTimeoutMs } = options;
    if (rateLimit || concurrencyPerKey) this.admission = new Admission(redis, redis.keys, deps.queue, keys, rateLimit, concurrencyPerKey, visibilityTimeoutMs);
  }

  start(): void {
    this.wake();
  }

  /** A message due at `runAt` (server ms) was enqueued: wake then, if that is earlier than planned. */
  hint(runAt: number): void {
    this.schedule.hint(runAt);
  }

  /** Whether this consumer holds `id` under the claim `token` (explain's "this process"). */
  holds(id: string, token: number): boolean {
    return this.leases.get(id)?.token === token;
  }

  /** Claim now (after a reconnect, when capacity frees up, when a test clock jumps). */
  wake(): void {
    if (this.stopped) return;
    if (this.claiming) {
      this.again = true;
      return;
    }
    this.schedule.cancel();
    void this.claim();
  }

  async stop(timeoutMs = 10_000): Promise<void> {
    if (!(typeof timeoutMs === 'number' && Number.isFinite(timeoutMs) && timeoutMs >= 0)) {
      throw new (numberError(timeoutMs))(`timeoutMs must be a finite number >= 0, got ${describeValue(timeoutMs)}`);
    }
    // Node fires a longer timer after 1 ms: the wait for handlers would not happen at all
    if (timeoutMs > MAX_TIMER_MS) throw new RangeError(`timeoutMs must be at most ${MAX_TIMER_MS} (about 24.8 days), got ${timeoutMs}`);
    if (this.stopped) return;
    this.stopped = true;
    this.schedule.stop();
    this.stopClock();
    this.deps.onStop(this);
    for (const controller of this.running.values()) controller.abort(this.stopping);
    const finishing = Promise.allSettled([...this.inFlight]).then(() => Promise.allSettled([...this.recording]));
    await Promise.race([finishing, sleep(timeoutMs, undefined, { ref: false })]);
    await this.acks.flush();
    // a stopped consumer retries and renews no more: its connection is about to close
    this.acks.stop();
    this.leases.stop();
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
        const { globalConcurrency } = options;
        const claim = redis.scripts.send('queueClaim', {
          keys,
          args: {
            count: asked,
            visibilityMs: options.visibilityTimeoutMs,
            deadRetentionMs: this.deps.dead.deadRetentionMs,
            deadTrimBatch: DEAD_TRIM_BATCH,
            globalConcurrency,
            rateLimited: this.admission ? '1' : undefined,
            // at the queue's global concurrency, whatever frees a slot wakes us here
            wakeChannel: globalConcurrency === undefined ? undefined : this.deps.wakeUp.channel,
            publish: globalConcurrency === undefined ? undefined : await this.deps.wakeUp.command(),
          },
        });
        let reply: DelayQueueClaimReply;
        try {
          reply = await redis.scripts.bounded(claim, 'queueClaim');
        } catch (error) {
          // the claim may still run on a Redis that is only slow: whatever it leased is ours to handle
          claim
            .then(
              (late) => (this.stopped ? undefined : this.handle(late.messages, leasedUntil, late.now)),
              () => undefined,
            )
            .catch(() => undefined);
          throw error;
        }
        const { now, next, messages } = reply;
        this.schedule.synchronize(now);
        const claimed = messages.length;
        await this.handle(messages, leasedUntil, now);
        const left = options.concurrency - this.inFlight.size;
        this.saturated = left <= 0;
        if (claimed === asked && left > 0) this.again = true; // a full batch (or some deferred): maybe more due
        // at the queue's global concurrency, `next` is the earliest lease deadline, and whatever
        // frees a slot first wakes us over the channel
        this.schedule.replan(next === QueueReply.NOTHING_DUE ? now + IDLE_CHECK_MS : Math.min(next, now + IDLE_CHECK_MS));
        redis.reportSuccess();
      } while (this.again && !this.stopped);
    } catch (error) {
      if (!this.stopped) {
        if (error instanceof RedisLimitError) this.deps.redis.reportFailure(error);
        else this.logger.error(`claim failed: ${(error as Error).message}`);
        this.schedule.replan(this.schedule.serverNow() + RETRY_MS);
      }
    } finally {
      this.claiming = false;
    }
  }

  /** Starts the handlers of a claim's messages, once the rate limit and cap per key (if any) admit them. */
  private async handle(messages: readonly DelayQueueClaimMessageReply[], leasedUntil: number, now: number): Promise<void> {
    const fresh: DelayedMessage[] = [];
    const tokens: number[] = [];
    const ticks = await this.advanceSchedules(messages, now);
    for (const { id, payload, runAt, attempt, token, fence, source, context } of messages) {
      const held = this.leases.get(id);
      // a tick whose schedule did not advance here: dropped for a later tick, or back later
      if (isTick(source) && !held && !ticks.has(id)) continue;
      if (held && !held.failing) {
        // its lease ran out (a renewal came late) and our own claim took it back: the handler
        // still running here (or its ack on the way) records the new claim's outcome, rather
        // than a second one beside it. A failure being recorded is done with the message: its
        // retry (due at once with no backoff, its reply read in the same tick as this claim's)
        // is a delivery of its own, and its lease replaces the failing one.
        Object.assign(held, { token, attempt, leasedUntil });
        continue;
      }
      const parsed = parsePayload(payload);
      if (parsed instanceof Error) {
        // poison: its handler (and a rate key) could do nothing with it, and another delivery
        // would find it the same. It dies now, and the rest of the batch runs
        const lease = { id, token, attempt, leasedUntil };
        this.leases.hold(lease);
        // held like a handled message, so stop() waits for its death to be recorded
        const poison = { id, queue: this.deps.queue, payload: null, runAt, attempt, signal: new AbortController().signal, fence };
        this.sourceOf.set(poison, source);
        const dying: Promise<void> = this.fail(poison, lease, parsed, true).finally(() => this.recording.delete(dying));
        this.recording.add(dying);
        continue;
      }
      const controller = new AbortController();
      const message = { id, queue: this.deps.queue, payload: parsed.payload, runAt, attempt, signal: controller.signal, fence };
      this.controllers.set(message, controller);
      this.sourceOf.set(message, source);
      if (context !== '') this.contextOf.set(message, context);
      fresh.push(message);
      tokens.push(token);
    }
    const start = (verdicts: Verdict[] | undefined) => this.dispatch(fresh, tokens, verdicts, leasedUntil);
    if (!this.admission || fresh.length === 0) return start(undefined);
    // refused by Redis, admission leaves the leases to run out: the messages come back then, and
    // those claims count as no attempt
    start(await this.admission.admit(fresh, tokens, (late) => (this.stopped ? undefined : start(late))));
  }

  /**
   * The claimed ticks of recurring schedules whose handlers run, once their schedules advanced
   * (RecurringTicks). Redis failing, none runs: their leases run out and they come back.
   */
  private async advanceSchedules(messages: readonly DelayQueueClaimMessageReply[], now: number): Promise<Set<string>> {
    const ticks = messages.filter((m) => isTick(m.source) && !this.leases.get(m.id));
    if (ticks.length === 0) return new Set();
    try {
      return await this.recurring.advance(now, ticks);
    } catch (error) {
      if (error instanceof RedisLimitError) this.deps.redis.reportFailure(error);
      else this.logger.error(`recurring schedules could not advance: ${(error as Error).message}`);
      return new Set();
    }
  }

  /** Runs, defers or fails each claimed message as admission decided (all start without it). */
  private dispatch(messages: DelayedMessage[], tokens: number[], verdicts: Verdict[] | undefined, leasedUntil: number): void {
    messages.forEach((message, i) => {
      const verdict: Verdict = verdicts?.[i] ?? { kind: 'start' };
      const lease = { id: message.id, token: tokens[i]!, attempt: message.attempt, leasedUntil };
      if (verdict.kind === 'start') this.run(message, lease, verdict.slot);
      else if (verdict.kind === 'deferred')
        this.hint(verdict.dueAt); // the claim's reply plans the wake-up: keep this for it
      else if (verdict.kind === 'waiting')
        this.deps.redis.events.queue({ type: 'redis-limit.queue.waiting', queue: message.queue, id: message.id, attempt: message.attempt });
      else if (verdict.kind === 'broken') {
        this.leases.hold(lease);
        void this.fail(message, lease, verdict.error);
      }
    });
  }

  private run(message: DelayedMessage, lease: Lease, slot: SlotKeys | undefined): void {
    const { options } = this.deps;
    this.leases.hold(lease);
    // the slot names the token it was taken with: a reclaim of our own may change the lease's
    const release =
      slot === undefined
        ? () => undefined
        : (
            (token) => () =>
              this.releaseSlot(message, token, slot)
          )(lease.token);
    if (message.attempt > options.maxAttempts) {
      // delivered more often than allowed without an answer: its handler keeps dying
      void this.fail(message, lease, new Error('the consumer died or timed out on every attempt')).finally(release);
      return;
    }
    const { events } = this.deps.redis;
    const { id, queue, attempt } = message;
    const controller = this.controllers.get(message)!;
    this.running.set(lease, controller);
    events.queue({ type: 'redis-limit.queue.delivered', queue, id, attempt, runAt: message.runAt });
    let overdue: Promise<unknown> | undefined;
    const running: Promise<void> = (async () => {
      const outcome = await this.attempt(message, controller, (handling) => void (overdue = handling));
      if (controller.signal.reason === this.leaseLost) {
        // another claim holds the message: this outcome is not its to record
      } else if (outcome.ok) {
        events.queue({ type: 'redis-limit.queue.handled', queue, id, attempt });
        const waitMs = await this.beforeOutcome(message);
        if (waitMs > 0) this.ackAfter(lease, waitMs);
        else this.acks.ack(lease);
      } else if (controller.signal.reason === this.stopping && !outcome.timedOut && gaveUp(outcome.error, this.stopping)) {
        // asked to stop, it stopped: back now, no attempt
        await this.retryLater(message, lease, 0, false);
      } else if (isRetryLater(outcome.error)) await this.retryLater(message, lease, outcome.error.delayMs, outcome.error.pauseKey);
      else await this.fail(message, lease, outcome.error, isUnrecoverable(outcome.error));
      // a handler past its timeout keeps its place in `concurrency` until it really ends
      await overdue;
    })().finally(() => {
      this.running.delete(lease);
      this.inFlight.delete(running);
      release();
      if (this.saturated) this.wake();
    });
    this.inFlight.add(running);
  }

  /**
   * Runs the handler, bounded by `timeoutMs`: its outcome, or at the timeout a failure with a
   * DelayQueueTimeoutError, after which the handler runs on unheeded (`overdue` gets it, settled).
   * Traced, the attempt is a span in the trace the message was enqueued in.
   */
  private async attempt(
    message: DelayedMessage,
    controller: AbortController,
    overdue: (handling: Promise<unknown>) => void,
  ): Promise<{ ok: true } | { ok: false; error: unknown; timedOut?: true }> {
    const span = this.deps.telemetry.startHandling(message.queue, message.id, message.attempt, this.contextOf.get(message) ?? '');
    // a handler that throws synchronously fails like one that rejects
    const handle = async () => this.deps.handler(message);
    const settled = (span === undefined ? handle() : span.run(handle)).then(
      () => ({ ok: true as const }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    const outcome = await this.bounded(settled, controller, overdue);
    // RetryLater is the handler asking to wait: an event, not an error
    span?.end(outcome.ok ? undefined : outcome.error, !outcome.ok && isRetryLater(outcome.error) ? 'redis_limit.retry_later' : undefined);
    return outcome;
  }

  /** The handler's outcome, or at `timeoutMs` a DelayQueueTimeoutError (see attempt). */
  private async bounded(
    settled: Promise<{ ok: true } | { ok: false; error: unknown }>,
    controller: AbortController,
    overdue: (handling: Promise<unknown>) => void,
  ): Promise<{ ok: true } | { ok: false; error: unknown; timedOut?: true }> {
    const { timeoutMs } = this.deps.options;
    if (timeoutMs === undefined) return settled;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<{ ok: false; error: unknown; timedOut: true }>((resolve) => {
      timer = setTimeout(() => {
        const error = new DelayQueueTimeoutError(timeoutMs);
        controller.abort(error);
        overdue(settled);
        resolve({ ok: false, error, timedOut: true });
      }, timeoutMs);
    });
    try {
      return await Promise.race([settled, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Frees the slot of `concurrencyPerKey` a handler held; the message of its key that waited
   * longest is due at once, and this consumer looks for it. A failed call leaves the slot to free
   * with the lease, and the waiting message to come back after its wait.
   */
  private releaseSlot(message: DelayedMessage, token: number, slot: SlotKeys): void {
    this.admission!.release(message, token, slot).then(
      (woken) => {
        if (woken) this.wake();
      },
      // (a stopping consumer's connection may be closing: its slots free with the leases anyway)
      (error: unknown) => this.stopped || this.logger.warn(`could not free the slot of ${message.id}: ${(error as Error).message}`),
    );
  }

  /** What the source of `message`, if the library made it, asks before its outcome is
   * recorded: ms to wait (MessageSource). */
  private async beforeOutcome(message: DelayedMessage): Promise<number> {
    return (await this.deps.sources.beforeOutcome(this.sourceOf.get(message) ?? '', message)) ?? 0;
  }

  /** Acknowledges a handled message after `ms`; its lease is renewed meanwhile. */
  private ackAfter(lease: Lease, ms: number): void {
    const acking: Promise<void> = sleep(ms).then(() => {
      this.recording.delete(acking);
      this.acks.ack(lease);
    });
    this.recording.add(acking);
  }

  /**
   * Records a failure: a retry after the backoff, or death once the last attempt has failed (or
   * at once, `now`: a message no attempt can handle, or a handler's Unrecoverable). One script
   * call, fenced by the lease.
   */
  private async fail(message: DelayedMessage, lease: Lease, error: unknown, now = false): Promise<void> {
    const { options, dead, redis, keys } = this.deps;
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const { id, queue } = message;
    const dies = (attempt: number) => now || attempt >= options.maxAttempts;
    lease.failing = true;
    try {
      if (dies(lease.attempt)) {
        // a dead message is enqueued afresh by a late enqueue: wait as for a handled one
        const waitMs = await this.beforeOutcome(message);
        if (waitMs > 0) await sleep(waitMs);
      }
      const { attempt, token } = lease;
      const backoffMs = dies(attempt) ? -1 : failureDelayMs(attempt, error, options, this.reportBackoff);
      const { deadRetentionMs, maxDead } = dead;
      // LEASE_LOST: that claim no longer holds the message (its lease ran out and it was handed
      // on): nothing to record or report
      const dueAgain = await redis.scripts.call('queueFail', {
        keys,
        args: { id, backoffMs, error: text, token, deadRetentionMs, maxDead, deadTrimBatch: DEAD_TRIM_BATCH },
      });
      if (dueAgain >= 0) this.schedule.at(dueAgain);
      if (dueAgain === QueueReply.DIED) {
        redis.events.queue({ type: 'redis-limit.queue.dead', queue, id, attempt, error, ...(isUnrecoverable(error) ? { unrecoverable: true as const } : {}) });
      } else if (dueAgain >= 0) redis.events.queue({ type: 'redis-limit.queue.retry', queue, id, attempt, dueAt: dueAgain, error });
    } catch (failure) {
      this.logger.warn(`could not record the failure of ${message.id}: ${(failure as Error).message}`);
    } finally {
      // recorded, refused, or lost to an outage: either way it comes back without us
      this.leases.release(lease);
    }
  }

  /**
   * A handler's RetryLater (or a stop it heeded): the message is due again after `delayMs`, and
   * that claim was no attempt; with `pauseKey`, every message of its rate key waits as long
   * (admit.lua). Fenced by the lease as a failure is.
   */
  private async retryLater(message: DelayedMessage, lease: Lease, delayMs: number, pauseKey: boolean): Promise<void> {
    const { redis, keys } = this.deps;
    const { id, queue } = message;
    const pause = pauseKey ? this.pacesToPause(message) : undefined;
    const paces = pause?.paces ?? [];
    // an adaptive rate limit learns from the pause: retry-later.lua halves the key's limit
    const adaptive = pause?.rate === undefined ? undefined : this.admission?.adaptive;
    lease.failing = true;
    try {
      const { dueAt, limit } = await redis.scripts.call('queueRetryLater', {
        keys: { ...keys, paces },
        args: { id, delayMs, token: lease.token, limit: adaptive?.limit, windowMs: adaptive?.windowMs },
      });
      if (dueAt >= 0) {
        this.schedule.at(dueAt);
        if (adaptive !== undefined) redis.events.adaptiveLimit(queue, pause!.rate!, { halved: limit, ...adaptive });
        redis.events.queue({
          type: 'redis-limit.queue.retry-later',
          queue,
          id,
          attempt: message.attempt,
          dueAt,
          pausedKey: paces.length > 0,
          ...(adaptive === undefined ? {} : { adaptiveLimit: limit }),
        });
      }
    } catch (failure) {
      // the lease runs out and the message comes back (as an attempt: the claim stays counted)
      this.logger.warn(`could not schedule ${id} again as its handler asked: ${(failure as Error).message}`);
    } finally {
      this.leases.release(lease);
    }
  }

  /** The keys a RetryLater with pauseKey pauses, and its rate key's name: none without a rate
   * limit or a cap per key (said once). */
  private pacesToPause(message: DelayedMessage): { paces: string[]; rate: string | undefined } | undefined {
    const pause = this.admission?.paces(message);
    if (pause !== undefined && !(pause instanceof Error)) return pause;
    if (!this.pauseUnkeyedReported) {
      this.pauseUnkeyedReported = true;
      const why = pause === undefined ? 'this consumer has no rateLimit or concurrencyPerKey' : `its key failed: ${pause.message}`;
      this.logger.warn(`RetryLater with pauseKey: ${why}, so only the message waits (logged once)`);
    }
    return undefined;
  }
}
