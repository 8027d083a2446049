import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DelayQueueService } from '../delay-queue/delay-queue.service.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import type { ExpiringHashKeys } from './expiring-hash.keys.js';

/** A disarm that failed (a timeout under load) is tried this often before the sweep gives up. */
const DISARM_ATTEMPTS = 4;
const DISARM_RETRY_MS = 100;

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
    // An arming left armed after its message was enqueued is handed over again by a later sweep,
    // and enqueued afresh if that message was handled meanwhile: disarm every one that was
    // enqueued, even when others failed, and retry a disarm that failed (disarming is idempotent).
    const outcomes = await Promise.allSettled(enqueues);
    const enqueued = names.filter((_, i) => outcomes[i]!.status === 'fulfilled');
    if (enqueued.length > 0) await this.disarm(key, enqueued);
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async disarm(key: string, names: string[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.redis.scripts.run('hashNotify', this.keys.hash(key), ['', ...names]);
        return;
      } catch (error) {
        if (attempt >= DISARM_ATTEMPTS) throw error;
        await sleep(DISARM_RETRY_MS * attempt);
      }
    }
  }
}

/** A message id for one arming: the same arming always gets the same id. */
function armingId(key: string, field: string, expiry: string): string {
  return `n:${createHash('sha1').update(`${key}\u0000${field}\u0000${expiry}`).digest('hex')}`;
}
