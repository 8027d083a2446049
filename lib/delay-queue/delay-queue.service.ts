import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Optional, type BeforeApplicationShutdown } from '@nestjs/common';
import { assertMetricPrefix, PROMETHEUS_PREFIX } from '../observability/prometheus.js';
import { Telemetry } from '../observability/telemetry.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { LIMITS_OFF } from '../rate-limit/limits-off.js';
import { QueueReply } from '../redis/replies.js';
import { Consumer } from './consumer.js';
import { MessageSources, sourceTag, type MessageSource, type SourceEnqueue } from './message-sources.js';
import { DeadLetters } from './dead-letters.js';
import { resolveDeadIds, resolveDeadPage, resolveListPage } from './dead-letters.input.js';
import {
  assertEnqueueOptions,
  assertName,
  DELAY_QUEUE_OPTIONS,
  resolveConsumeOptions,
  resolveSizeOptions,
  resolveWhen,
  serializePayload,
} from './delay-queue.input.js';
import type {
  ConsumeOptions,
  DeadPage,
  DelayedHandler,
  DelayQueueConsumer,
  DelayQueueOptions,
  EnqueueManyItem,
  EnqueueOptions,
  ListOptions,
  MessagePage,
  QueuedMessage,
  QueueSize,
  ScheduleInfo,
  ScheduleSpec,
  RescheduleOptions,
} from './delay-queue.types.js';
import { MessageInspector } from './message-inspector.js';
import { resolveSchedule } from './recurring.input.js';
import { RecurringSchedules } from './recurring-schedules.js';
import { queueKeys, schedulesKey, type QueueKeys } from './queue-keys.js';
import { QueueRegistry } from './queue-registry.js';
import { WakeUps } from './wake-ups.js';

/** Messages one enqueueMany script call schedules at most. */
const ENQUEUE_MANY_BATCH = 1000;

/**
 * Delayed messages on Redis: a sorted set per queue scored by due time (server clock), claimed in
 * batches by one script into an in-flight set with a visibility deadline, acknowledged when the
 * handler resolves, retried with backoff, dead after `maxAttempts`. Consumers sleep on timers and
 * are woken by the queue's pub/sub channel (see WakeUps): they never poll. Delivery is at least
 * once, to one handler at a time. Methods reject only on bad input (TypeError / RangeError naming
 * the argument, before Redis is asked; `consume` throws them) or when Redis fails
 * (RedisLimitError). See docs/delay-queue.md and docs/delay-queue-operations.md.
 * @example
 * ```ts
 * @Injectable()
 * export class Reminders {
 *   constructor(private readonly queue: DelayQueueService) {}
 *
 *   schedule(userId: number): Promise<string> {
 *     return this.queue.enqueue('reminders', { userId }, { delayMs: 86_400_000 });
 *   }
 *
 *   @OnDelayed('reminders', { maxAttempts: 5 })
 *   async remind(message: DelayedMessage<{ userId: number }>): Promise<void> {
 *     console.log(`remind user ${message.payload.userId} (attempt ${message.attempt})`);
 *   }
 * }
 * ```
 */
@Injectable()
export class DelayQueueService implements BeforeApplicationShutdown {
  private readonly consumers = new Map<string, Set<Consumer>>();
  private readonly wakeUps: WakeUps;
  private readonly registry: QueueRegistry;
  private readonly deadLetters: DeadLetters;
  private readonly inspector: MessageInspector;
  private readonly recurring: RecurringSchedules;
  private readonly sources = new MessageSources();

  constructor(
    @Inject(RedisConnection) private readonly redis: RedisConnection,
    /** The module's `delayQueue`: how much of each dead set is kept. */
    @Inject(DELAY_QUEUE_OPTIONS) private readonly deadRetention: Required<DelayQueueOptions>,
    @Inject(Telemetry) private readonly telemetry: Telemetry,
    /** forTesting({ limits: 'off' }): a consumer's `rateLimit` paces nothing. */
    @Optional() @Inject(LIMITS_OFF) private readonly limitsOff: boolean = false,
  ) {
    this.wakeUps = new WakeUps(redis, {
      hint: (queue, runAt) => this.consumers.get(queue)?.forEach((consumer) => consumer.hint(runAt)),
      resync: () => this.consumers.forEach((set) => set.forEach((consumer) => consumer.wake())),
    });
    this.registry = new QueueRegistry(redis);
    this.deadLetters = new DeadLetters(redis, this.wakeUps);
    this.inspector = new MessageInspector(redis);
    this.recurring = new RecurringSchedules(redis, this.wakeUps);
  }

  /**
   * @internal The port for a part of the library whose messages ride the queue (ExpiringHash's
   * expiry notifications), not API: registers what it needs done before such a message's outcome
   * is recorded, and returns how it enqueues them, marked as its own.
   */
  source(kind: string, source: MessageSource): SourceEnqueue {
    this.sources.register(kind, source);
    return (queue, payload, id, ref) => this.send(queue, payload, { id }, sourceTag(kind, ref));
  }

  /**
   * Schedules `payload` on `queue`, due after `opts.delayMs` or at `opts.runAt` (Redis server
   * clock); due at once by default. An id already scheduled or in flight changes nothing (its
   * payload and time stay); an id in the dead set is scheduled afresh.
   * @param queue - the queue's name: a non-empty string of at most 1,024 bytes (UTF-8)
   * @param payload - JSON that comes back as it was: plain objects, arrays, strings, finite
   * numbers, booleans, null. An object property that is `undefined` is dropped, as
   * `JSON.stringify` drops it (an optional field left out)
   * @param opts - `delayMs` (ms >= 0, default 0) or `runAt` (a Date or ms since the epoch; a past
   * time is due at once), and `id` (default a random UUID)
   * @returns the message's id
   * @throws TypeError / RangeError `queue`, `opts.id` (not a non-empty well-formed string, over
   * 1,024 bytes); TypeError `payload…` naming where JSON would change it (a Date, a Map,
   * `undefined` as the payload or an array item, a function, a symbol, a BigInt, `NaN`, a cycle);
   * TypeError `opts` when not an object or with both `delayMs` and
   * `runAt`; TypeError / RangeError `opts.delayMs`, `opts.runAt` when not a whole number of ms >= 0
   * (or a valid Date).
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * await queue.enqueue('reminders', { userId: 42 }, { delayMs: 60_000 });
   * await queue.enqueue('invoices', { invoice: 7 }, { runAt: new Date('2027-01-01'), id: 'invoice-7' });
   * ```
   */
  async enqueue<T>(queue: string, payload: T, opts: EnqueueOptions = {}): Promise<string> {
    return this.send(queue, payload, opts, '');
  }

  /** enqueue, for a user's message (`source` '') or one of the library's own (MessageSource). */
  private async send(queue: string, payload: unknown, opts: EnqueueOptions, source: string): Promise<string> {
    assertName(queue, 'queue');
    assertEnqueueOptions(opts);
    const json = serializePayload(payload);
    const [runAt, delayMs] = resolveWhen(opts, 'opts');
    const id = opts.id ?? randomUUID();
    const publish = await this.wakeUps.publishCommand();
    const span = this.telemetry.startEnqueue(queue, 1);
    span?.sent(id);
    const args = { id, payload: json, runAt, delayMs, wakeChannel: this.wakeUps.channel(queue), publish, source, context: span?.carried ?? '' };
    const sent = Promise.all([this.redis.scripts.call('queueEnqueue', { keys: this.keys(queue), args }), this.registry.register(queue)]);
    const [{ status, runAt: due }] = await (span === undefined ? sent : span.around(sent));
    this.redis.events.queue({ type: 'redis-limit.queue.enqueued', queue, id, runAt: due, scheduled: status === QueueReply.SCHEDULED });
    return id;
  }

  /**
   * Schedules many messages of one queue, in bounded script calls (ENQUEUE_MANY_BATCH messages
   * each, so none blocks Redis for long); resolves their ids, in order. Each as `enqueue` would:
   * an id already scheduled or in flight (or given twice) changes nothing. Every message is
   * checked before any is sent; a Redis failure after the first call leaves the earlier calls'
   * messages scheduled (sending the same ids again changes nothing for them).
   * @param messages - each `{ payload, id?, delayMs?, runAt? }` as `enqueue`'s payload and opts
   * @returns the messages' ids, in order
   * @throws TypeError / RangeError `queue` as `enqueue`; TypeError `messages` when not an array;
   * each message's errors as `enqueue`'s, named `messages[i]`, `messages[i].id`,
   * `messages[i].payload…`, `messages[i].delayMs`, `messages[i].runAt`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * const ids = await queue.enqueueMany('reminders', [
   *   { payload: { userId: 1 }, delayMs: 60_000 },
   *   { payload: { userId: 2 }, runAt: new Date('2027-01-01'), id: 'invoice-8' },
   * ]);
   * ```
   */
  async enqueueMany<T>(queue: string, messages: EnqueueManyItem<T>[]): Promise<string[]> {
    assertName(queue, 'queue');
    if (!Array.isArray(messages)) throw new TypeError('messages must be an array of { payload, id?, delayMs?, runAt? }');
    const checked = messages.map((message, i) => {
      const at = `messages[${i}]`;
      assertEnqueueOptions(message, at);
      const { id = randomUUID(), payload } = message;
      const [runAt, delayMs] = resolveWhen(message, at);
      return { id, payload: serializePayload(payload, `${at}.payload`), runAt, delayMs };
    });
    const publish = await this.wakeUps.publishCommand();
    const wakeChannel = this.wakeUps.channel(queue);
    // one span for the whole call: every message carries its context
    const span = this.telemetry.startEnqueue(queue, checked.length);
    const context = span?.carried ?? '';
    const rows = checked.map((row) => ({ ...row, context }));
    const sent = (async () => {
      await this.registry.register(queue);
      for (let i = 0; i < rows.length; i += ENQUEUE_MANY_BATCH) {
        const batch = rows.slice(i, i + ENQUEUE_MANY_BATCH);
        const reply = await this.redis.scripts.call('queueEnqueueMany', { keys: this.keys(queue), args: { wakeChannel, publish, messages: batch } });
        batch.forEach(({ id }, j) => {
          const { status, runAt } = reply.messages[j]!;
          this.redis.events.queue({ type: 'redis-limit.queue.enqueued', queue, id, runAt, scheduled: status === QueueReply.SCHEDULED });
        });
      }
      return rows.map(({ id }) => id);
    })();
    return span === undefined ? sent : span.around(sent);
  }

  /**
   * Removes a scheduled message with its payload.
   * @returns true when it was scheduled; false when it is in flight, dead or unknown
   * @throws TypeError / RangeError `queue`, `id` when not a non-empty well-formed string of at
   * most 1,024 bytes.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async cancel(queue: string, id: string): Promise<boolean> {
    assertName(queue, 'queue');
    assertName(id, 'id');
    return (await this.redis.scripts.call('queueCancel', { keys: this.keys(queue), args: { id } })) === QueueReply.CANCELLED;
  }

  /**
   * Moves a scheduled message to a new time (Redis server clock); its payload and attempts stay.
   * @param opts - `delayMs` (ms from now, >= 0) or `runAt` (a Date or ms since the epoch); neither:
   * due now
   * @returns true when it was scheduled; false when it is in flight, dead or unknown
   * @throws TypeError / RangeError `queue`, `id` as `cancel`; TypeError `opts` when not an object
   * or with both `delayMs` and `runAt`; TypeError / RangeError `opts.delayMs`, `opts.runAt` as
   * `enqueue`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * const moved = await queue.reschedule('invoices', 'invoice-7', { delayMs: 3_600_000 });
   * ```
   */
  async reschedule(queue: string, id: string, opts: RescheduleOptions): Promise<boolean> {
    assertName(queue, 'queue');
    assertName(id, 'id');
    if (typeof opts !== 'object' || opts === null) throw new TypeError('opts must be an object { delayMs } or { runAt }');
    const [runAt, delayMs] = resolveWhen(opts, 'opts');
    const publish = await this.wakeUps.publishCommand();
    const args = { id, runAt, delayMs, wakeChannel: this.wakeUps.channel(queue), publish };
    return (await this.redis.scripts.call('queueReschedule', { keys: this.keys(queue), args })) >= 0;
  }

  /**
   * How many of `queue`'s messages are scheduled, in flight (claimed, handler not done) and dead;
   * the sizes are kept for the synchronous `RedisLimitEvents.prometheus()`. With
   * `opts.overdueAfterMs`, also `overdue`: the scheduled messages due more than that long ago (by
   * the Redis clock) and not yet claimed, a backlog no consumer keeps up with.
   * @throws TypeError / RangeError `queue` as `enqueue`; TypeError `opts` when not an object or
   * with another option; TypeError / RangeError `opts.overdueAfterMs` when not an integer >= 0.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async size(queue: string, opts?: { overdueAfterMs?: number }): Promise<QueueSize> {
    assertName(queue, 'queue');
    const overdueAfterMs = resolveSizeOptions(opts);
    const { scheduled, inFlight, dead, overdue } = await this.redis.scripts.call('queueSize', { keys: this.keys(queue), args: { overdueAfterMs } });
    this.redis.events.queueSize(queue, { scheduled, inFlight, dead });
    return overdueAfterMs === undefined ? { scheduled, inFlight, dead } : { scheduled, inFlight, dead, overdue };
  }

  /**
   * Creates or replaces the recurring schedule `name` of `queue`: each tick enqueues one message,
   * id `<name>@<tick ms>`, with `spec.payload`, handled by the queue's consumers like any other.
   * Exactly one message per tick, however many instances consume the queue and however often the
   * schedule is replaced; ticks missed while no consumer ran are not replayed (one runs for them).
   * Scheduling the same spec again changes nothing; a changed spec takes effect from its next
   * tick after now (or after a tick already due, which still runs), and counts its runs afresh.
   * @param spec - `cron` (5 fields, or 6 with seconds first) in `tz` (an IANA zone, default UTC),
   * or `everyMs` (counted from `startAt`, else from the epoch); `payload`; `startAt`, `endAt` (Date
   * or ms); `limit` (runs in all)
   * @returns `nextRunAt`: the first tick's time; its message's id is `<name>@<nextRunAt>`
   * @throws TypeError / RangeError `queue`, `name` as `enqueue` takes `queue` (a name leaves room
   * for '@<ms>' in 1,024 bytes); TypeError `spec` when not an object, with another option, or
   * without exactly one of `cron` and `everyMs`; TypeError `spec.cron` when not 5 or 6 valid
   * fields; TypeError / RangeError `spec.tz` (not an IANA zone, or with `everyMs`),
   * `spec.everyMs` (not a whole number >= 1), `spec.startAt`, `spec.endAt` (not a Date or ms >= 0;
   * `endAt` before `startAt` or leaving no tick), `spec.limit` (not a whole number >= 1; or the
   * same spec again once its runs are done), `spec.payload…` as `enqueue`'s payload.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * await queue.schedule('reports', 'nightly', { cron: '30 2 * * *', tz: 'America/New_York', payload: { kind: 'sales' } });
   * await queue.schedule('health', 'ping', { everyMs: 60_000 });
   * ```
   */
  async schedule<T = unknown>(queue: string, name: string, spec: ScheduleSpec<T>): Promise<{ nextRunAt: number }> {
    assertName(queue, 'queue');
    const resolved = resolveSchedule(name, spec);
    const [nextRunAt] = await Promise.all([this.recurring.set(queue, this.scheduleKeys(queue), name, resolved), this.registry.register(queue)]);
    return { nextRunAt };
  }

  /**
   * Removes the recurring schedule `name` of `queue` and its pending tick's message (one already
   * claimed runs to its end).
   * @returns whether the schedule existed
   * @throws TypeError / RangeError `queue`, `name` as `schedule`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async unschedule(queue: string, name: string): Promise<boolean> {
    assertName(queue, 'queue');
    assertName(name, 'name');
    return this.recurring.remove(this.scheduleKeys(queue), name);
  }

  /**
   * The recurring schedules of `queue`, or of every queue (`queues()`), by queue then name:
   * each with its spec, its next tick (`nextRunAt`, null once it has no more) and its runs since
   * it was last created or replaced.
   * @throws TypeError / RangeError `queue` as `enqueue`, when given.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async schedules(queue?: string): Promise<ScheduleInfo[]> {
    if (queue !== undefined) {
      assertName(queue, 'queue');
      return this.recurring.list(queue, this.scheduleKeys(queue));
    }
    const names = (await this.registry.names()).map(([name]) => name).sort();
    return (await Promise.all(names.map((name) => this.recurring.list(name, this.scheduleKeys(name))))).flat();
  }

  /**
   * One message of `queue`, wherever it is: scheduled, in flight or dead. `runAt` is when it is
   * due (scheduled), or was due for the delivery in flight or its last one (dead); `attempts`
   * counts deliveries so far (0 before the first, 1 while the first runs; waits for a rate limit
   * or a concurrency slot and RetryLater are none). A payload that cannot be parsed is `null`.
   * @returns the message, or null when the queue holds no such id (never enqueued, or
   * acknowledged, cancelled or purged)
   * @throws TypeError / RangeError `queue`, `id` as `enqueue` takes them.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * const message = await queue.get<{ orderId: string }>('orders', 'order-7');
   * if (message?.state === 'scheduled') console.log(`due at ${new Date(message.runAt).toISOString()}`);
   * ```
   */
  async get<T = unknown>(queue: string, id: string): Promise<QueuedMessage<T> | null> {
    assertName(queue, 'queue');
    assertName(id, 'id');
    return this.inspector.get<T>(this.keys(queue), id);
  }

  /**
   * A page of `queue`'s scheduled messages (in due order) or in-flight ones (in lease deadline
   * order), then by id. Following the cursors lists each message that stays put once; one that
   * moves meanwhile (claimed, deferred, its lease renewed) may show on two pages or on none.
   * @param opts - `state`: 'scheduled' or 'in-flight' (dead ones: `dead()`); `limit`: messages
   * per page, 1 to 1,000 (default 100); `cursor`: the previous page's (omitted or null: the
   * first page)
   * @returns `messages` (id, runAt, attempts, payload, as `get` has them) and the `cursor` of the
   * next page (null when this is the last)
   * @throws TypeError / RangeError `queue` as `enqueue`; TypeError `opts` when not an object or
   * with another option; TypeError `opts.state` when neither 'scheduled' nor 'in-flight';
   * TypeError / RangeError `opts.limit` when not an integer from 1 to 1,000; TypeError
   * `opts.cursor` when not a cursor `list()` returned.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * let page = await queue.list('orders', { state: 'scheduled', limit: 1000 });
   * for (;;) {
   *   for (const message of page.messages) console.log(message.id, new Date(message.runAt));
   *   if (page.cursor === null) break;
   *   page = await queue.list('orders', { state: 'scheduled', limit: 1000, cursor: page.cursor });
   * }
   * ```
   */
  async list<T = unknown>(queue: string, opts: ListOptions): Promise<MessagePage<T>> {
    assertName(queue, 'queue');
    const { state, limit, after } = resolveListPage(opts);
    return this.inspector.list<T>(this.keys(queue), state, limit, after);
  }

  /**
   * Where one message of `queue` stands and why, in one sentence, from one script call: "due in
   * N ms"; "due since T: waiting for a consumer to claim it"; "waiting for key K's rate limit
   * until T"; "waiting for a concurrency slot of key K"; "paused by RetryLater until T"; "leased
   * by this process" (or "another process"), "claim N, lease until T"; "dead: <error>";
   * "unknown: …". Times are ISO 8601, Redis server clock.
   * @throws TypeError / RangeError `queue`, `id` as `enqueue` takes them.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * console.log(await queue.explain('webhooks', 'delivery-42'));
   * // waiting for key "tenant-a"'s rate limit until 2026-11-29T10:00:00.000Z (in 1200 ms)
   * ```
   */
  async explain(queue: string, id: string): Promise<string> {
    assertName(queue, 'queue');
    assertName(id, 'id');
    const consumers = this.consumers.get(queue);
    return this.inspector.explain(queue, this.keys(queue), id, (held, token) => [...(consumers ?? [])].some((c) => c.holds(held, token)));
  }

  /**
   * A page of `queue`'s dead messages, oldest first (by time of death, then id). Following the
   * cursors lists each dead message once, even while others die, are retried or purged. A message
   * whose stored payload cannot be parsed as JSON is listed with `payload: null` and an `error`
   * naming the parse failure; it never fails the page.
   * @param opts - `limit`: messages per page, 1 to 1,000 (default 100); `cursor`: the previous
   * page's (omitted or null: the first page)
   * @returns `messages` and the `cursor` of the next page (null when this is the last)
   * @throws TypeError / RangeError `queue` as `enqueue`; TypeError `opts` when not an object or
   * with another option; TypeError / RangeError `opts.limit` when not an integer from 1 to 1,000;
   * TypeError `opts.cursor` when not a cursor `dead()` returned.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * let page = await queue.dead<{ orderId: string }>('orders', { limit: 500 });
   * for (;;) {
   *   for (const message of page.messages) console.log(message.payload.orderId, message.attempts, message.error);
   *   if (page.cursor === null) break;
   *   page = await queue.dead<{ orderId: string }>('orders', { limit: 500, cursor: page.cursor });
   * }
   * ```
   */
  async dead<T = unknown>(queue: string, opts: { limit?: number; cursor?: string | null } = {}): Promise<DeadPage<T>> {
    assertName(queue, 'queue');
    const { limit, after } = resolveDeadPage(opts);
    return this.deadLetters.page<T>(queue, this.keys(queue), limit, after);
  }

  /**
   * Dead messages back to scheduled, due now, attempt 1 next, error cleared; consumers are woken
   * as by an enqueue. Without `ids`, every message dead when the call starts, in calls of 200.
   * @param ids - at most 1,000 ids (duplicates and ids not dead are skipped); omitted: all
   * @returns how many moved
   * @throws TypeError / RangeError `queue` as `enqueue`; TypeError `ids` when not an array (null
   * too); RangeError `ids` with more than 1,000; TypeError / RangeError `ids[i]` as an `id`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * await queue.retryDead('orders', ['order-1', 'order-2']);
   * await queue.retryDead('orders'); // every dead message of the queue
   * ```
   */
  async retryDead(queue: string, ids?: string[]): Promise<number> {
    assertName(queue, 'queue');
    const chosen = resolveDeadIds(ids);
    const count = await this.deadLetters.retry(this.keys(queue), queue, chosen);
    if (count > 0) this.redis.events.queue({ type: 'redis-limit.queue.dead-retried', queue, count });
    return count;
  }

  /**
   * Dead messages deleted with their payloads. Without `ids`, every message dead when the call
   * starts, in calls of 200.
   * @param ids - at most 1,000 ids (duplicates and ids not dead are skipped); omitted: all
   * @returns how many were deleted
   * @throws TypeError / RangeError `queue`, `ids`, `ids[i]` as `retryDead`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * await queue.purgeDead('orders', ['order-3']);
   * ```
   */
  async purgeDead(queue: string, ids?: string[]): Promise<number> {
    assertName(queue, 'queue');
    const count = await this.deadLetters.purge(this.keys(queue), resolveDeadIds(ids));
    if (count > 0) this.redis.events.queue({ type: 'redis-limit.queue.dead-purged', queue, count });
    return count;
  }

  /**
   * Every queue that holds a message (scheduled, in flight or dead), sorted. Read from the
   * queue registry (see QueueRegistry), never by scanning the keyspace; each queue's sizes are
   * read too (and kept for `prometheus()`), and empty queues are dropped from the registry once
   * nobody has used them for a day.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async queues(): Promise<string[]> {
    const names = (await this.registry.names()).map(([name]) => name);
    const sizes = await Promise.all(names.map((name) => this.size(name)));
    const held = names.filter((_, i) => sizes[i]!.scheduled + sizes[i]!.inFlight + sizes[i]!.dead > 0);
    await this.registry.forget(names.filter((name) => !held.includes(name)));
    return held.sort();
  }

  /**
   * `RedisLimitEvents.prometheus()` with every queue's sizes read first: the synchronous
   * `prometheus()` reports the sizes last read (by `size()`, `queues()` or this).
   * @param prefix - the metric names' prefix (default 'nest_redis_limit')
   * @throws TypeError `prefix` when not a Prometheus metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`),
   * before any Redis call.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async prometheus(prefix: string = PROMETHEUS_PREFIX): Promise<string> {
    // checked before the sizes are read: a bad prefix costs Redis nothing
    assertMetricPrefix(prefix);
    await this.queues();
    return this.redis.events.prometheus(prefix);
  }

  /**
   * Starts consuming `queue` with `handler`; stopped by `stop()` or application shutdown. A
   * message is acknowledged when the handler resolves; a handler that throws (or rejects) is
   * retried after `backoffMs`, doubled per attempt up to `maxBackoffMs`, until `maxAttempts`, then
   * the message moves to the dead set with its error. A message whose stored payload cannot be
   * parsed as JSON moves to the dead set on that delivery, its error naming the parse failure,
   * without reaching the handler; the rest of its batch runs. Redis failures while consuming are logged and
   * retried, never thrown. `@OnDelayed` does the same from a provider method.
   * @param handler - called with each message (`attempt` 1 on first delivery); should be
   * idempotent: a consumer that dies mid-message has it delivered again
   * @param opts - see ConsumeOptions; every option has a default
   * @returns the consumer, to `stop()` it
   * @throws TypeError / RangeError, synchronously (no Redis call is made): `queue` as `enqueue`;
   * TypeError `handler` when not a function; TypeError `opts` when not an object or with an
   * unknown option; TypeError / RangeError `opts.concurrency`, `opts.visibilityTimeoutMs`,
   * `opts.maxAttempts`, `opts.globalConcurrency` when not an integer >= 1, `opts.backoffMs`,
   * `opts.maxBackoffMs` when not an integer >= 0; TypeError / RangeError `opts.rateLimit…` as a
   * RateLimiterService `policy`, TypeError `opts.rateLimit.key` when not a function.
   * @example
   * ```ts
   * const consumer = queue.consume<{ tenant: string }>('webhooks', async (message) => {
   *   await fetch(`https://hooks.example.com/${message.payload.tenant}`, { method: 'POST' });
   * }, {
   *   concurrency: 20,
   *   rateLimit: { limit: 10, windowMs: 1000, key: (message) => message.payload.tenant },
   * });
   * await consumer.stop();
   * ```
   */
  consume<T>(queue: string, handler: DelayedHandler<T>, opts?: ConsumeOptions<T>): DelayQueueConsumer {
    assertName(queue, 'queue');
    if (typeof handler !== 'function') throw new TypeError('handler must be a function (message) => unknown');
    const checked = resolveConsumeOptions(opts);
    // checked whatever `limits` says, as a route's @RateLimit is at start-up
    const options = this.limitsOff ? { ...checked, rateLimit: undefined } : checked;
    const consumer = new Consumer({
      redis: this.redis,
      queue,
      keys: this.keys(queue),
      wakeUp: { channel: this.wakeUps.channel(queue), command: () => this.wakeUps.publishCommand() },
      handler: handler as DelayedHandler,
      sources: this.sources,
      options,
      dead: this.deadRetention,
      telemetry: this.telemetry,
      onStop: (stopped) => this.forget(queue, stopped),
    });
    const consumers = this.consumers.get(queue) ?? new Set();
    this.consumers.set(queue, consumers);
    consumers.add(consumer);
    // a queue with messages from before the registry existed is listed once it is consumed
    void this.registry.register(queue);
    // claim once subscribed: an enqueue before then is found by that claim, one after wakes us
    void this.wakeUps.listen(queue).finally(() => consumer.start());
    return consumer;
  }

  /** Before the connections close: stop every consumer, letting handlers in flight finish. */
  async beforeApplicationShutdown(): Promise<void> {
    const all = [...this.consumers.values()].flatMap((set) => [...set]);
    await Promise.all(all.map((consumer) => consumer.stop()));
    this.wakeUps.close();
  }

  private keys(queue: string): QueueKeys {
    return queueKeys(this.redis.keys, queue);
  }

  private scheduleKeys(queue: string): QueueKeys & { schedules: string } {
    return { ...this.keys(queue), schedules: schedulesKey(this.redis.keys, queue) };
  }

  private forget(queue: string, consumer: Consumer): void {
    this.consumers.get(queue)?.delete(consumer);
  }
}
