import { ChannelSubscription } from '../redis/channel-subscription.js';
import type { ClientAccess, ScriptAccess, Subscriptions } from '../redis/redis-connection.js';
import type { RefusalCache } from './refusal-cache.js';

/**
 * How every process's refusal cache hears that a counter got permits back (reset, refund, block):
 * one pub/sub channel under the key prefix, whose messages are counter keys. Plain PUBLISH, which a
 * Redis Cluster delivers on every node.
 *
 * A refusal may be remembered only while this process is subscribed, and only if it stayed
 * subscribed from before the request was sent until the reply (`epoch` did not move): otherwise an
 * invalidation could have been missed. Losing the subscription forgets every remembered refusal.
 * The subscriber connection is opened on the first refusal, so an app that is never refused opens
 * none.
 */
export class RefusalChannel {
  readonly name: string;
  private subscription: ChannelSubscription | undefined;
  private live = false;
  private generation = 0;

  constructor(
    private readonly redis: ClientAccess & ScriptAccess & Subscriptions,
    private readonly cache: RefusalCache,
  ) {
    this.name = redis.keys.build('rc', 'invalidate');
  }

  /** Changes whenever the subscription may have missed a message; -1 while not subscribed. */
  get epoch(): number {
    return this.live ? this.generation : -1;
  }

  /** Subscribes if not yet (in the background): refusals count once it is live. */
  open(): void {
    this.subscription ??= new ChannelSubscription(this.redis, this.name, {
      message: (counter) => this.cache.invalidate(counter),
      live: () => {
        this.generation += 1;
        this.live = true;
      },
      lost: () => this.lost(),
    });
  }

  /** Tells every process (this one included, at once) that `counters` may grant again. */
  async publish(counters: readonly string[]): Promise<void> {
    for (const counter of counters) this.cache.invalidate(counter);
    await Promise.all(counters.map((counter) => this.redis.client.publish(this.name, counter)));
  }

  close(): void {
    this.lost();
    this.subscription?.close();
    this.subscription = undefined;
  }

  private lost(): void {
    this.live = false;
    this.generation += 1;
    this.cache.clear();
  }
}
