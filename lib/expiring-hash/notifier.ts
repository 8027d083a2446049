import { createHash } from 'node:crypto';
import type { DelayQueueService } from '../delay-queue/delay-queue.service.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import type { ExpiringHashKeys } from './expiring-hash.keys.js';

/** What an expiry notification delivers to the queue named by `notify`. */
export interface ExpiredField {
  key: string;
  field: string;
  value: string;
}

/**
 * Delivers expiry notifications. A write arms one in the hash's own slot (the outbox,
 * lua/expiring-hash/outbox.lua), in the same script that writes the field; the sweeper hands over
 * the due ones (sweep.lua) and this enqueues `{ key, field, value }` on the user's queue with an id
 * derived from the arming, so a retry cannot enqueue it twice while it is pending, and only then
 * disarms them. A process that dies between the two leaves them armed for the next sweep.
 */
export class ExpiryNotifier {
  constructor(
    private readonly redis: RedisConnection,
    private readonly keys: ExpiringHashKeys,
    private readonly queues: DelayQueueService,
  ) {}

  /** Delivers `key`'s due notifications: `handed` is sweep.lua's flat list of name, JSON pairs. */
  async deliver(key: string, handed: readonly string[]): Promise<void> {
    const names: string[] = [];
    const enqueues: Promise<string>[] = [];
    for (let i = 0; i < handed.length; i += 2) {
      const name = handed[i]!;
      const colon = name.indexOf(':');
      const field = name.slice(colon + 1);
      const { q, v } = JSON.parse(handed[i + 1]!) as { q: string; v: string };
      const expired: ExpiredField = { key, field, value: v };
      enqueues.push(this.queues.enqueue(q, expired, { id: armingId(key, field, name.slice(0, colon)) }));
      names.push(name);
    }
    await Promise.all(enqueues);
    await this.redis.scripts.run('hashNotify', this.keys.hash(key), ['', ...names]);
  }
}

/** A message id for one arming: the same arming always gets the same id. */
function armingId(key: string, field: string, expiry: string): string {
  return `n:${createHash('sha1').update(`${key}\u0000${field}\u0000${expiry}`).digest('hex')}`;
}
