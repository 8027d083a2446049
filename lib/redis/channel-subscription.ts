import type { Cluster, Redis } from 'ioredis';
import type { Subscriptions } from './redis-connection.js';

/** What a ChannelSubscription tells its owner. */
export interface ChannelListener {
  message(text: string): void;
  /** Subscribed (again): from now on no message is missed. */
  live(): void;
  /** Not subscribed: messages may be missed until `live` is called again. */
  lost(): void;
}

/**
 * SUBSCRIBE to one channel on a connection of its own (plain PUBLISH, which a Redis Cluster
 * delivers on every node), saying when it is live and when it may miss messages. It subscribes
 * again on every reconnect (see subscriberConnection); the subscription is live once that is
 * confirmed, and lost while it is refused. Nothing is reported after `close`.
 */
export class ChannelSubscription {
  private subscriber: Redis | Cluster | undefined;

  constructor(
    redis: Subscriptions,
    readonly channel: string,
    private readonly listener: ChannelListener,
  ) {
    const subscriber = redis.subscriberConnection();
    this.subscriber = subscriber;
    subscriber.on('message', (_channel: string, text: string) => {
      if (this.subscriber !== undefined) listener.message(text);
    });
    subscriber.on('close', () => {
      if (this.subscriber !== undefined) listener.lost();
    });
    subscriber.on('ready', () => void this.subscribe(subscriber));
    void this.subscribe(subscriber);
  }

  close(): void {
    const subscriber = this.subscriber;
    this.subscriber = undefined;
    subscriber?.disconnect();
  }

  private async subscribe(subscriber: Redis | Cluster): Promise<void> {
    try {
      await subscriber.subscribe(this.channel);
      if (subscriber === this.subscriber && subscriber.status === 'ready') this.listener.live();
    } catch {
      if (subscriber === this.subscriber) this.listener.lost();
    }
  }
}
