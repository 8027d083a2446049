import { Logger } from '@nestjs/common';
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

/**
 * How consumers hear of work due earlier than they planned: a pub/sub channel per queue, named
 * with the queue's hash tag. On a Redis Cluster whose servers have sharded pub/sub (Redis >= 7)
 * it is SPUBLISH/SSUBSCRIBE, so a wake-up stays on its queue's shard instead of being broadcast
 * to every node; elsewhere plain PUBLISH/SUBSCRIBE. One subscriber connection per module (one per
 * master when sharded).
 */
export class WakeUps {
  private readonly logger = new Logger('DelayQueue');
  private command: WakeCommand | undefined;
  private subscriber: Redis | Cluster | undefined;
  /** channel -> queue */
  private readonly queueOf = new Map<string, string>();
  private readonly subscriptions = new Map<string, Promise<unknown>>();

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
    this.subscriber?.disconnect();
    this.subscriber = undefined;
    this.subscriptions.clear();
    this.queueOf.clear();
  }

  private knownCommand(): Promise<WakeCommand> {
    return this.redis.hasCommand('SPUBLISH').then((sharded) => (this.command = sharded ? 'SPUBLISH' : 'PUBLISH'));
  }

  private createSubscriber(command: WakeCommand): Redis | Cluster {
    const subscriber = this.redis.subscriberConnection(command === 'SPUBLISH');
    // wake-ups published while it was disconnected (or moving between shards) are lost
    subscriber.on('ready', () => this.listener.resync());
    subscriber.on('subscribersReady', () => this.listener.resync());
    const onMessage = (from: string, runAt: string) => {
      const queue = this.queueOf.get(from);
      if (queue !== undefined) this.listener.hint(queue, Number(runAt));
    };
    subscriber.on('message', onMessage);
    subscriber.on('smessage', onMessage);
    return subscriber;
  }
}
