import { randomUUID } from 'node:crypto';
import { Inject, Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { assertMetricPrefix, PROMETHEUS_PREFIX } from '../observability/prometheus.js';
import { RedisConnection } from '../redis/redis-connection.js';
import type { ScriptName } from '../redis/scripts.js';
import { Consumer } from './consumer.js';
import { DeadLetters } from './dead-letters.js';
import { resolveDeadIds, resolveDeadPage } from './dead-letters.input.js';
import { assertEnqueueOptions, assertName, resolveConsumeOptions, resolveWhen, serializePayload } from './delay-queue.input.js';
import type {
  ConsumeOptions,
  DeadPage,
  DelayedHandler,
  DelayQueueConsumer,
  EnqueueManyItem,
  EnqueueOptions,
  QueueSize,
  RescheduleOptions,
} from './delay-queue.types.js';
import { queueKeys } from './queue-keys.js';
import { QueueRegistry } from './queue-registry.js';
import { WakeUps } from './wake-ups.js';

/** Messages one enqueueMany script call schedules at most. */
const ENQUEUE_MANY_BATCH = 1000;

/**
 * Delayed messages on Redis: a sorted set per queue scored by due time (server clock), claimed in
 * batches by one script into an in-flight set with a visibility deadline, acknowledged when the
 * handler resolves, retried with backoff, dead after `maxAttempts`. Consumers sleep on timers and
 * are woken by the queue's pub/sub channel (see WakeUps): they never poll.
 */
@Injectable()
export class DelayQueueService implements BeforeApplicationShutdown {
  private readonly consumers = new Map<string, Set<Consumer>>();
  private readonly wakeUps: WakeUps;
  private readonly registry: QueueRegistry;
  private readonly deadLetters: DeadLetters;

  constructor(@Inject(RedisConnection) private readonly redis: RedisConnection) {
    this.wakeUps = new WakeUps(redis, {
      hint: (queue, runAt) => this.consumers.get(queue)?.forEach((consumer) => consumer.hint(runAt)),
      resync: () => this.consumers.forEach((set) => set.forEach((consumer) => consumer.wake())),
    });
    this.registry = new QueueRegistry(redis);
    this.deadLetters = new DeadLetters(redis, this.wakeUps);
  }

  /** Schedules `payload`; resolves its id. An id already scheduled or in flight changes nothing. */
  async enqueue<T>(queue: string, payload: T, opts: EnqueueOptions = {}): Promise<string> {
    assertName(queue, 'queue');
    assertEnqueueOptions(opts);
    const json = serializePayload(payload);
    const [runAt, delayMs] = resolveWhen(opts, 'opts');
    const id = opts.id ?? randomUUID();
    const publish = await this.wakeUps.publishCommand();
    const enqueued = this.run('queueEnqueue', queue, ['', id, json, runAt, delayMs, this.wakeUps.channel(queue), publish]);
    const [[scheduled, due]] = (await Promise.all([enqueued, this.registry.register(queue)])) as [number[], void];
    this.redis.events.queue({ type: 'redis-limit.queue.enqueued', queue, id, runAt: Number(due), scheduled: scheduled === 1 });
    return id;
  }

  /**
   * Schedules many messages of one queue, in bounded script calls (ENQUEUE_MANY_BATCH messages
   * each, so none blocks Redis for long); resolves their ids, in order. Each as `enqueue` would:
   * an id already scheduled or in flight (or given twice) changes nothing. Every message is
   * checked before any is sent.
   */
  async enqueueMany<T>(queue: string, messages: EnqueueManyItem<T>[]): Promise<string[]> {
    assertName(queue, 'queue');
    if (!Array.isArray(messages)) throw new TypeError('messages must be an array of { payload, id?, delayMs?, runAt? }');
    const args = messages.map((message, i) => {
      const at = `messages[${i}]`;
      assertEnqueueOptions(message, at);
      const { id = randomUUID(), payload } = message;
      return [id, serializePayload(payload, `${at}.payload`), ...resolveWhen(message, at)] as const;
    });
    const publish = await this.wakeUps.publishCommand();
    const channel = this.wakeUps.channel(queue);
    await this.registry.register(queue);
    for (let i = 0; i < args.length; i += ENQUEUE_MANY_BATCH) {
      const batch = args.slice(i, i + ENQUEUE_MANY_BATCH);
      const reply = (await this.run('queueEnqueueMany', queue, ['', channel, publish, ...batch.flat()])) as number[];
      batch.forEach(([id], j) => {
        this.redis.events.queue({ type: 'redis-limit.queue.enqueued', queue, id, runAt: Number(reply[2 * j + 1]), scheduled: reply[2 * j] === 1 });
      });
    }
    return args.map(([id]) => id);
  }

  /** Removes a scheduled message; false when it is in flight, dead or unknown. */
  async cancel(queue: string, id: string): Promise<boolean> {
    assertName(queue, 'queue');
    assertName(id, 'id');
    return (await this.run('queueCancel', queue, [id])) === 1;
  }

  /** Moves a scheduled message to a new time; false when it is in flight, dead or unknown. */
  async reschedule(queue: string, id: string, opts: RescheduleOptions): Promise<boolean> {
    assertName(queue, 'queue');
    assertName(id, 'id');
    if (typeof opts !== 'object' || opts === null) throw new TypeError('opts must be an object { delayMs } or { runAt }');
    const [runAt, delayMs] = resolveWhen(opts, 'opts');
    const publish = await this.wakeUps.publishCommand();
    return Number(await this.run('queueReschedule', queue, ['', id, runAt, delayMs, this.wakeUps.channel(queue), publish])) >= 0;
  }

  async size(queue: string): Promise<QueueSize> {
    assertName(queue, 'queue');
    const [scheduled, inFlight, dead] = (await this.run('queueSize', queue, [])) as number[];
    const size = { scheduled: scheduled!, inFlight: inFlight!, dead: dead! };
    this.redis.events.queueSize(queue, size);
    return size;
  }

  /** A page of `queue`'s dead messages, oldest first; `cursor` from the previous page. */
  async dead<T = unknown>(queue: string, opts: { limit?: number; cursor?: string } = {}): Promise<DeadPage<T>> {
    assertName(queue, 'queue');
    const { limit, after } = resolveDeadPage(opts);
    return this.deadLetters.page<T>(queue, this.keys(queue), limit, after);
  }

  /** Dead messages back to scheduled, due now, attempt 1 next (all when `ids` is omitted);
   * resolves how many moved. */
  async retryDead(queue: string, ids?: string[]): Promise<number> {
    assertName(queue, 'queue');
    const chosen = resolveDeadIds(ids);
    const count = await this.deadLetters.retry(this.keys(queue), queue, chosen);
    if (count > 0) this.redis.events.queue({ type: 'redis-limit.queue.dead-retried', queue, count });
    return count;
  }

  /** Dead messages deleted with their payloads (all when `ids` is omitted); resolves how many. */
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
   */
  async prometheus(prefix: string = PROMETHEUS_PREFIX): Promise<string> {
    // checked before the sizes are read: a bad prefix costs Redis nothing
    assertMetricPrefix(prefix);
    await this.queues();
    return this.redis.events.prometheus(prefix);
  }

  /** Starts consuming `queue` with `handler`; stopped by `stop()` or application shutdown. */
  consume<T>(queue: string, handler: DelayedHandler<T>, opts?: ConsumeOptions<T>): DelayQueueConsumer {
    assertName(queue, 'queue');
    if (typeof handler !== 'function') throw new TypeError('handler must be a function (message) => unknown');
    const options = resolveConsumeOptions(opts);
    const consumer = new Consumer({
      redis: this.redis,
      queue,
      keys: this.keys(queue),
      wakeUp: { channel: this.wakeUps.channel(queue), command: () => this.wakeUps.publishCommand() },
      handler: handler as DelayedHandler,
      options,
      dead: this.redis.options.delayQueue,
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

  private keys(queue: string): string[] {
    return queueKeys(this.redis.keys, queue);
  }

  private run(script: ScriptName, queue: string, args: (string | number)[]) {
    return this.redis.scripts.run(script, this.keys(queue), args);
  }

  private forget(queue: string, consumer: Consumer): void {
    this.consumers.get(queue)?.delete(consumer);
  }
}
