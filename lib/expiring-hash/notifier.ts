import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import type { DelayQueueService } from '../delay-queue/delay-queue.service.js';
import type { MessageSource, SourceEnqueue } from '../delay-queue/message-sources.js';
import type { ScriptAccess } from '../redis/redis-connection.js';
import type { ExpiringHashSweepNoticeReply } from '../redis/script-bindings.generated.js';
import type { ExpiringHashKeys } from './expiring-hash.keys.js';

/** A notification handed over is not handed over again for this long: its delivery may still be
 * under way (sweep.lua). */
export const HANDOVER_LEASE_MS = 3000;
/** How long after a handover its enqueue may still land; a consumer keeps a notification handed
 * over more than once until then before recording its outcome (disarm-handled.lua). Far above any
 * command's time in flight. */
const HANDOVER_GRACE_MS = 10_000;
/** A disarm that failed (a timeout under load) is tried this often, then given up. */
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
 * and the consumer disarms a notification (disarm-handled.lua) before recording its outcome, so
 * nothing is handed over once its message has been handled. The notifications ride the queue
 * through its port for the library's own messages (MessageSource): each is marked in Redis as
 * this source's with its hash and name, which its claim hands back.
 */
export class ExpiryNotifier implements MessageSource {
  private readonly logger = new Logger('ExpiryNotifier');
  private readonly enqueue: SourceEnqueue;

  constructor(
    private readonly redis: ScriptAccess,
    private readonly keys: ExpiringHashKeys,
    queues: DelayQueueService,
  ) {
    this.enqueue = queues.source(EXPIRY_SOURCE, this);
  }

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
      enqueues.push(this.enqueue(q, expired, armingId(key, field, name.slice(0, colon)), notificationRef(key, name)));
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
   * A notification handled (or given up on): disarms it (`ref`: its hash and name), and resolves
   * how long to wait before its outcome is recorded, when a later handover's enqueue may still
   * land. Never rejects: a disarm that keeps failing is logged, and the outcome recorded anyway.
   */
  async beforeOutcome(ref: string, message: { id: string }): Promise<number> {
    try {
      // a mark only the notifier writes; one tampered with fails here, as a failed disarm would
      const [key, name] = JSON.parse(ref) as [string, string];
      const args = { name, graceMs: HANDOVER_GRACE_MS };
      return await this.retried(() => this.redis.scripts.call('hashDisarmHandled', { keys: this.keys.hash(key), args }));
    } catch (error) {
      this.logger.warn(`could not disarm the expiry notification ${message.id}: ${(error as Error).message}`);
      return 0;
    }
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

/** The kind of message source expiry notifications are (MessageSource). */
export const EXPIRY_SOURCE = 'expiry';

/** A message id for one arming: the same arming always gets the same id, so a second enqueue of
 * it changes nothing while the first message is queued. */
export function armingId(key: string, field: string, expiry: string): string {
  return `n:${expiry}:${createHash('sha1').update(`${key}\u0000${field}\u0000${expiry}`).digest('hex')}`;
}

/** What a notification's message is marked with: its hash and its name in the outbox. */
export function notificationRef(key: string, name: string): string {
  return JSON.stringify([key, name]);
}
