import { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Cluster, Redis } from 'ioredis';
import type { RedisConnection } from '../redis/redis-connection.js';

/** The command enqueue and reschedule scripts publish a wake-up with. */
export type WakeCommand = 'PUBLISH' | 'SPUBLISH';

export interface WakeUpListener {
  /** A message due at `runAt` (server ms) arrived in `queue`. */
  hint(queue: string, runAt: number): void;
  /** Wake-ups may have been missed (the subscriber reconnected): every consumer should look. */
  resync(): void;
}

/** A probe's due time: so far ahead (the year 287,000) that every consumer takes it as no news. */
const PROBE_FLOOR = 9e15;
/** How long a probe may take to come back before the subscriber is taken for deaf. */
const PROBE_WAIT_MS = 5000;

/**
 * How consumers hear of work due earlier than they planned: a pub/sub channel per queue, named
 * with the queue's hash tag. On a Redis Cluster whose servers have sharded pub/sub (Redis >= 7)
 * it is SPUBLISH/SSUBSCRIBE, so a wake-up stays on its queue's shard instead of being broadcast
 * to every node; elsewhere plain PUBLISH/SUBSCRIBE. One subscriber connection per module (one per
 * master when sharded).
 *
 * ioredis (6.0) can lose sharded subscriptions for good when a cluster comes back from an outage
 * while its masters still refuse commands: a reset of its subscriber group that never finishes
 * holds back every later one, and the shards are never subscribed again. Consumers then hear of
 * new work only at their idle re-check. So after every (re)connect of a sharded subscriber, each
 * channel gets a probe (a wake-up due in the far future, which every consumer ignores); a channel
 * whose probe does not come back gets a new subscriber connection, probed in turn.
 */
export class WakeUps {
  private readonly logger = new Logger('DelayQueue');
  private command: WakeCommand | undefined;
  private subscriber: Redis | Cluster | undefined;
  /** channel -> queue */
  private readonly queueOf = new Map<string, string>();
  private readonly subscriptions = new Map<string, Promise<unknown>>();
  /** Probes on their way: the text published -> what to call when it arrives. */
  private readonly probes = new Map<string, () => void>();
  private probeCount = 0;
  private probing: Promise<void> | undefined;
  private probeAgain = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly redis: RedisConnection,
    private readonly listener: WakeUpListener,
  ) {
    if (!redis.cluster) this.command = 'PUBLISH';
  }

  channel(queue: string): string {
    return this.redis.keys.build('dqw', queue);
  }

  /** The publish command, once known: at once off a cluster, else after one COMMAND INFO
   * (bounded by commandTimeoutMs while Redis is unreachable). */
  publishCommand(): WakeCommand | Promise<WakeCommand> {
    return this.command ?? this.redis.scripts.bounded(this.knownCommand(), 'COMMAND INFO SPUBLISH');
  }

  /** Subscribes to `queue`'s wake-ups; resolves once subscribed (or the attempt was logged).
   * While Redis is unreachable it waits: there is nothing to consume then anyway. */
  async listen(queue: string): Promise<unknown> {
    let command = this.command;
    while (command === undefined) {
      // not events.once: it rejects on the 'error' events an outage brings
      command = await this.knownCommand().catch(() => new Promise<undefined>((resolve) => this.redis.client.once('ready', () => resolve(undefined))));
    }
    const subscriber = (this.subscriber ??= this.createSubscriber(command));
    const channel = this.channel(queue);
    let subscribed = this.subscriptions.get(channel);
    if (subscribed === undefined) {
      this.queueOf.set(channel, queue);
      const subscribing = command === 'SPUBLISH' ? subscriber.ssubscribe(channel) : subscriber.subscribe(channel);
      subscribed = subscribing.catch((error: Error) => this.logger.warn(`could not subscribe to ${channel}: ${error.message}`));
      this.subscriptions.set(channel, subscribed);
    }
    return subscribed;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.dropSubscriber();
    this.queueOf.clear();
  }

  private dropSubscriber(): void {
    this.subscriber?.disconnect();
    this.subscriber = undefined;
    this.subscriptions.clear();
    for (const arrived of this.probes.values()) arrived();
    this.probes.clear();
  }

  private knownCommand(): Promise<WakeCommand> {
    return this.redis.hasCommand('SPUBLISH').then((sharded) => (this.command = sharded ? 'SPUBLISH' : 'PUBLISH'));
  }

  private createSubscriber(command: WakeCommand): Redis | Cluster {
    const subscriber = this.redis.subscriberConnection(command === 'SPUBLISH');
    if (!this.redis.cluster) subscriber.on('ready', () => this.subscribeAgain(subscriber));
    // wake-ups published while it was disconnected (or moving between shards) are lost
    subscriber.on('ready', () => this.listener.resync());
    subscriber.on('subscribersReady', () => this.listener.resync());
    if (command === 'SPUBLISH') {
      subscriber.on('ready', () => this.probeSoon());
      subscriber.on('subscribersReady', () => this.probeSoon());
    }
    const onMessage = (from: string, runAt: string) => {
      const at = Number(runAt);
      if (at >= PROBE_FLOOR) return this.probes.get(runAt)?.();
      const queue = this.queueOf.get(from);
      if (queue !== undefined) this.listener.hint(queue, at);
    };
    subscriber.on('message', onMessage);
    subscriber.on('smessage', onMessage);
    return subscriber;
  }

  /** After a reconnect off a cluster: every channel listened to (see subscriberConnection). */
  private subscribeAgain(subscriber: Redis | Cluster): void {
    const channels = [...this.queueOf.keys()];
    if (channels.length === 0 || subscriber !== this.subscriber) return;
    subscriber
      .subscribe(...channels)
      .catch((error: Error) => this.logger.warn(`could not subscribe again to ${channels.length} wake-up channel(s): ${error.message}`));
  }

  /** Probes every channel, once at a time (a call meanwhile probes again after). */
  private probeSoon(): void {
    if (this.closed) return;
    if (this.probing) {
      this.probeAgain = true;
      return;
    }
    this.probing = this.probeAll().finally(() => {
      this.probing = undefined;
      if (this.probeAgain && !this.closed) {
        this.probeAgain = false;
        this.probeSoon();
      }
    });
  }

  private async probeAll(): Promise<void> {
    const subscriber = this.subscriber;
    await Promise.race([Promise.all(this.subscriptions.values()), sleep(PROBE_WAIT_MS, undefined, { ref: false })]);
    const outcomes = await Promise.all([...this.queueOf.keys()].map((channel) => this.probe(channel)));
    if (subscriber !== this.subscriber || this.closed) return;
    if (outcomes.includes('unheard')) this.renewSubscriber();
    // Redis did not take the probe: try again once it may (a reconnect probes at once anyway)
    else if (outcomes.includes('unsent')) this.retryTimer = setTimeout(() => this.probeSoon(), PROBE_WAIT_MS).unref();
  }

  /** Publishes a probe on `channel` and waits for it to come back. */
  private async probe(channel: string): Promise<'heard' | 'unheard' | 'unsent'> {
    const text = String(PROBE_FLOOR + ++this.probeCount);
    let timer: NodeJS.Timeout | undefined;
    const arrived = new Promise<'heard' | 'unheard'>((resolve) => {
      timer = setTimeout(() => resolve('unheard'), PROBE_WAIT_MS);
      timer.unref();
      this.probes.set(text, () => resolve('heard'));
    });
    try {
      await this.redis.scripts.bounded(this.redis.client.call('SPUBLISH', channel, text), 'SPUBLISH');
      return await arrived;
    } catch {
      return 'unsent';
    } finally {
      clearTimeout(timer);
      this.probes.delete(text);
    }
  }

  /** A new subscriber connection for every queue listened to; consumers look for what they missed. */
  private renewSubscriber(): void {
    this.logger.warn('wake-ups went unheard after a reconnect: subscribing again on a new connection');
    const queues = [...new Set(this.queueOf.values())];
    this.dropSubscriber();
    this.queueOf.clear();
    for (const queue of queues) void this.listen(queue);
    this.listener.resync();
  }
}
