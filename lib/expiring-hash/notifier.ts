import { createHash } from 'node:crypto';
import type { DelayQueueService } from '../delay-queue/delay-queue.service.js';
import type { DelayedMessage } from '../delay-queue/delay-queue.types.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import type { ExpiringHashKeys } from './expiring-hash.keys.js';

/** What an expiry notification delivers to the queue named by `notify`. */
export interface ExpiredField {
  key: string;
  field: string;
  value: string;
}

interface Timer {
  k: string;
  f: string;
  e: number;
}

/**
 * Delivers expiry notifications. Arming one (in the hash's own slot, atomically with the write)
 * is followed by a timer message on an internal DelayQueue queue, due at the expiry; sharded like
 * the sweep registry so no one slot carries every tenant. When the timer fires, whichever instance
 * claims it checks that the field's notification is still armed (not deleted or re-set before it
 * expired), enqueues `{ key, field, value }` on the user's queue with an id derived from the
 * arming, so a retry cannot enqueue it twice while it is pending, and only then disarms it.
 */
export class ExpiryNotifier {
  private started = false;

  constructor(
    private readonly redis: RedisConnection,
    private readonly keys: ExpiringHashKeys,
    private readonly queues: DelayQueueService,
  ) {}

  /** Consumes every shard's timer queue (once per process, from its first ExpiringHash call). */
  start(): void {
    if (this.started) return;
    this.started = true;
    for (let shard = 0; shard < this.keys.shards; shard++) {
      this.queues.consume<Timer>(timerQueue(shard), (message) => this.fire(message), { concurrency: 20 });
    }
  }

  /** Sets the timer of a notification armed for `field` at `expiry`. */
  async schedule(key: string, field: string, expiry: number): Promise<void> {
    const timer: Timer = { k: key, f: field, e: expiry };
    await this.queues.enqueue(timerQueue(this.keys.shardOf(key)), timer, { runAt: expiry, id: armingId(timer, 't') });
  }

  private async fire({ payload: timer }: DelayedMessage<Timer>): Promise<void> {
    const keys = this.keys.hash(timer.k);
    const expiry = String(timer.e);
    const due = (await this.redis.scripts.run('hashNotify', keys, ['', timer.f, expiry, 'peek'])) as [string, string] | null;
    if (due === null) return; // deleted or re-set before it expired, or delivered already
    const [queue, value] = due;
    const expired: ExpiredField = { key: timer.k, field: timer.f, value };
    await this.queues.enqueue(queue, expired, { id: armingId(timer, 'n') });
    await this.redis.scripts.run('hashNotify', keys, ['', timer.f, expiry, 'done']);
  }
}

export function timerQueue(shard: number): string {
  return `nrl.expiring-hash.notify.${shard}`;
}

/** A message id for one arming: the same arming always gets the same id. */
function armingId({ k, f, e }: Timer, kind: string): string {
  return `${kind}:${createHash('sha1').update(`${k}\u0000${f}\u0000${e}`).digest('hex')}`;
}
