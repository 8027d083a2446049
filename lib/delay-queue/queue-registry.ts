import type { ClientAccess, ScriptAccess } from '../redis/redis-connection.js';

/** A process registers a queue again after this long: the registry's score stays this fresh
 * while anyone enqueues to or consumes the queue. */
export const REGISTER_EVERY_MS = 3_600_000;
/** A queue found empty is forgotten once nobody has registered it for this long. */
export const FORGET_AFTER_MS = 24 * 3_600_000;

/**
 * The names of the queues in use, for `queues()` (which must not SCAN the keyspace): one sorted
 * set, queue name -> when it was last registered. On a cluster it sits in one slot and a queue's
 * keys in another, so no script can write both: enqueue and consume register the name with a
 * plain ZADD of their own, at most once an hour per queue and process (the first enqueue pays one
 * extra command, sent alongside it). An empty queue is forgotten only when its registration is a
 * day old (registry-prune.lua), so a process still holding a fresh registration never loses it.
 */
export class QueueRegistry {
  /** queue -> local ms until which its registration is fresh */
  private readonly fresh = new Map<string, number>();

  constructor(private readonly redis: ClientAccess & ScriptAccess) {}

  get key(): string {
    return this.redis.keys.build('dqr', 'queues');
  }

  /**
   * Registers `queue` unless this process did so within the hour. Never rejects: the message
   * an enqueue stored is what its caller asked about, and a registration that failed (Redis
   * unreachable) is made by the next enqueue or consume.
   */
  async register(queue: string): Promise<void> {
    const now = Date.now();
    if ((this.fresh.get(queue) ?? 0) > now) return;
    try {
      await this.redis.scripts.bounded(this.redis.client.zadd(this.key, now, queue), 'ZADD queue registry');
      this.fresh.set(queue, now + REGISTER_EVERY_MS);
    } catch {
      // not fresh: tried again next time
    }
  }

  /** Every registered name, with when it was last registered (ms). */
  async names(): Promise<[string, number][]> {
    const flat = await this.redis.scripts.bounded(this.redis.client.zrange(this.key, '0', '-1', 'WITHSCORES'), 'ZRANGE queue registry');
    const names: [string, number][] = [];
    for (let i = 0; i < flat.length; i += 2) names.push([flat[i]!, Number(flat[i + 1])]);
    return names;
  }

  /** Forgets `empty` queues not registered for a day. */
  async forget(empty: string[]): Promise<void> {
    if (empty.length === 0) return;
    await this.redis.scripts.call('queueRegistryPrune', { keys: { registry: this.key }, args: { cutoff: Date.now() - FORGET_AFTER_MS, names: empty } });
  }
}
