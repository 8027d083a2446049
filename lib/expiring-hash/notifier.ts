import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import type { DelayQueueService } from '../delay-queue/delay-queue.service.js';
import type { DelayedMessage } from '../delay-queue/delay-queue.types.js';
import type { ScriptAccess } from '../redis/redis-connection.js';
import type { ExpiringHashSweepNoticeReply } from '../redis/script-bindings.generated.js';
import type { ExpiringHashKeys } from './expiring-hash.keys.js';

/** A notification handed over is not handed over again for this long: its delivery may still be
 * under way (sweep.lua). */
export const HANDOVER_LEASE_MS = 3000;
/** How long after a handover its enqueue may still land; a consumer holds a notification handed
 * over more than once until then (settle.lua). Far above any command's time in flight. */
const HANDOVER_GRACE_MS = 10_000;
/** A disarm or settle that failed (a timeout under load) is tried this often, then given up. */
const ATTEMPTS = 5;
const RETRY_MS = 100;

/** What an expiry notification delivers to the queue named by `notify`. */
export interface ExpiredField {
  key: string;
  field: string;
  value: string;
}

/**
 * Delivers expiry notifications, exactly once per lapsed field whatever process dies when. A
 * write arms one in the hash's own slot (the outbox, lua/expiring-hash/outbox.lua), in the same
 * script that writes the field. The sweeper hands the due ones over (sweep.lua, which records the
 * handover); this enqueues `{ key, field, value }` on the user's queue with an id derived from the
 * arming, so a second enqueue changes nothing while the first message is queued, and then
 * disarms them. What a death or a failed call leaves armed is handed over again after a lease;
 * and the consumer settles a notification (disarms it, settle.lua) before acknowledging it, so
 * nothing is handed over once its message has been handled.
 */
export class ExpiryNotifier {
  private readonly logger = new Logger('ExpiryNotifier');

  constructor(
    private readonly redis: ScriptAccess,
    private readonly keys: ExpiringHashKeys,
    private readonly queues: DelayQueueService,
  ) {}

  /** Delivers `key`'s due notifications, as sweep.lua handed them over; their enqueues are sent
   * at once, in the turn that heard the handover. */
  async deliver(key: string, handed: readonly ExpiringHashSweepNoticeReply[]): Promise<void> {
    const names: string[] = [];
    const enqueues: Promise<string>[] = [];
    for (const { name, notice } of handed) {
      const colon = name.indexOf(':');
      const field = name.slice(colon + 1);
      const { q, v } = JSON.parse(notice) as { q: string; v: string };
      const expired: ExpiredField = { key, field, value: v };
      enqueues.push(this.queues.enqueue(q, expired, { id: armingId(key, field, name.slice(0, colon)) }));
      names.push(name);
    }
    // disarm every one that was enqueued, even when others failed: fewer handovers to repeat
    const outcomes = await Promise.allSettled(enqueues);
    const enqueued = names.filter((_, i) => outcomes[i]!.status === 'fulfilled');
    if (enqueued.length > 0) await this.retried(() => this.redis.scripts.call('hashNotify', { keys: this.keys.hash(key), args: { names: enqueued } }));
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /**
   * Settles `message` if it is an expiry notification (else undefined): disarms it, and resolves
   * how long to hold it before acknowledging it, when a later handover's enqueue may still land.
   * Never rejects: a settle that keeps failing is logged, and the message is acknowledged anyway.
   */
  settle(message: DelayedMessage): Promise<number> | undefined {
    const expiry = /^n:(\d+):[0-9a-f]{40}$/.exec(message.id)?.[1];
    if (expiry === undefined) return undefined;
    const { key, field } = (message.payload ?? {}) as Partial<ExpiredField>;
    if (typeof key !== 'string' || typeof field !== 'string' || armingId(key, field, expiry) !== message.id) return undefined;
    const args = { name: `${expiry}:${field}`, graceMs: HANDOVER_GRACE_MS };
    return this.retried(() => this.redis.scripts.call('hashSettle', { keys: this.keys.hash(key), args })).catch((error: unknown) => {
      this.logger.warn(`could not settle the expiry notification ${message.id}: ${(error as Error).message}`);
      return 0;
    });
  }

  /** Runs an idempotent call, trying again after a failure (a timeout under load). */
  private async retried<T>(call: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        if (attempt >= ATTEMPTS) throw error;
        await sleep(RETRY_MS * attempt);
      }
    }
  }
}

/** A message id for one arming: the same arming always gets the same id, and a consumer can tell
 * the arming from the id and the payload. */
export function armingId(key: string, field: string, expiry: string): string {
  return `n:${expiry}:${createHash('sha1').update(`${key}\u0000${field}\u0000${expiry}`).digest('hex')}`;
}
