import { Logger } from '@nestjs/common';
import type { DelayQueueService } from '../delay-queue/delay-queue.service.js';
import type { DelayQueueConsumer } from '../delay-queue/delay-queue.types.js';
import { queueKeys } from '../delay-queue/queue-keys.js';
import type { ScriptAccess } from '../redis/redis-connection.js';

/** 0.1's internal timer queue of a registry shard (0.1 kept no queue registry: each is asked). */
export function legacyTimerQueue(shard: number): string {
  return `nrl.expiring-hash.notify.${shard}`;
}

/** A 0.1 timer message: the hash's user key, the field and the expiry its notification was armed for. */
interface LegacyTimer {
  k: string;
  f: string;
  e: number;
}

/**
 * Upgrades from 0.1 lose no notification. 0.1 armed them in the hash's outbox as 0.2 does, but
 * found them by a timer message due at the expiry, on internal DelayQueue queues, where 0.2 finds
 * them through the sweep registry (which never listed a 0.1 hash in native mode). A sweeping
 * process consumes the timer queues that still hold messages: each timer, when due, lists its
 * hash in the registry, and the sweeper then delivers the notification (once: its message id is
 * the arming's, the same in both versions). A queue's consumer stops once the queue is empty, so
 * an app that never ran 0.1 pays one size call per shard, at its first ExpiringHash call.
 */
export class LegacyTimers {
  private started = false;
  private readonly consumers = new Set<DelayQueueConsumer>();
  private readonly logger = new Logger('ExpiringHashService');

  constructor(
    private readonly queues: DelayQueueService,
    private readonly redis: ScriptAccess,
    private readonly shards: number,
    private readonly list: (key: string, at: number) => Promise<void>,
  ) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    this.adopt().catch((error: unknown) => {
      this.logger.error(`could not look for the timer queues of 0.1 (their notifications wait until the next start): ${(error as Error).message}`);
    });
  }

  async stop(): Promise<void> {
    await Promise.all([...this.consumers].map((consumer) => consumer.stop()));
  }

  private async adopt(): Promise<void> {
    const queues = Array.from({ length: this.shards }, (_, shard) => legacyTimerQueue(shard));
    const left = await Promise.all(queues.map((queue) => this.left(queue)));
    await Promise.all(queues.filter((_, i) => left[i]![0] + left[i]![1] > 0).map((queue) => this.drain(queue)));
  }

  /** [scheduled, in flight] timers of `queue` (read as DelayQueueService.size does, without
   * reporting to prometheus() a queue the app never made). */
  private async left(queue: string): Promise<[number, number]> {
    const { scheduled, inFlight } = await this.redis.scripts.call('queueSize', { keys: queueKeys(this.redis.keys, queue), args: {} });
    return [scheduled, inFlight];
  }

  private async drain(queue: string): Promise<void> {
    let emptied!: () => void;
    const empty = new Promise<void>((resolve) => (emptied = resolve));
    const consumer = this.queues.consume<LegacyTimer>(
      queue,
      async ({ payload: { k, e } }) => {
        await this.list(k, e);
        // the handlers still running finish before stop() returns; a timer a dead 0.1 process
        // held comes back after its lease, for the next start to adopt
        if ((await this.left(queue))[0] === 0) emptied();
      },
      { concurrency: 20 },
    );
    this.consumers.add(consumer);
    await empty;
    this.consumers.delete(consumer);
    await consumer.stop();
  }
}
