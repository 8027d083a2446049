import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { RedisConnection } from '../redis/redis-connection.js';
import { SlotBatcher } from './slot-batch.js';

/** A concurrency slot this process holds: renewed every third of its lease until released. */
export interface HeldSlot {
  /** Gives the slot back, once (later calls do nothing). Rejects with a RedisLimitError when
   * Redis does not take it: the slot then comes back by itself when its lease ends. */
  release(): Promise<void>;
}

/** Why no slot was taken: every one is held. */
export interface SlotRefusal {
  /** Slots held. */
  held: number;
  /** ms until the soonest lease ends (a holder that died gives its slot back then; one that runs
   * renews it, and gives it back sooner when it ends). */
  retryAfterMs: number;
}

/**
 * Concurrency slots (`acquireSlot`, `@MaxConcurrent`): per key and name, a sorted set of the
 * slots held, scored by the end of their lease (lua/concurrency). A holder renews its lease every
 * third of it while it runs; a process that dies stops renewing, and its slots come back when
 * their leases end. Keys `cs:<name>:{<key>}` (`cs:{<key>}` without a name; an unnamed
 * `@MaxConcurrent`'s `csr:<route scope>:{<key>}`): one hash slot each on a cluster.
 */
@Injectable()
export class ConcurrencySlots {
  private readonly logger = new Logger('ConcurrencySlots');
  private readonly batcher: SlotBatcher;

  constructor(@Inject(RedisConnection) private readonly redis: RedisConnection) {
    this.batcher = new SlotBatcher(redis.scripts, redis.cluster);
  }

  /**
   * Takes a slot of `key` unless `limit` are held (a RedisLimitError when Redis cannot say),
   * counting it in the events' counters; a refusal is announced. `of`: the slots' name, or the
   * route whose own they are (an unnamed `@MaxConcurrent`; its `scope` keys them apart).
   */
  async acquire(key: string, of: { name?: string; route?: string; scope?: string }, limit: number, leaseMs: number): Promise<HeldSlot | SlotRefusal> {
    const { name, route, scope } = of;
    // a route's own slots are another kind of key: no name can meet them
    const slots = scope === undefined ? this.redis.keys.build('cs', key, name) : this.redis.keys.build('csr', key, scope);
    const id = randomUUID();
    const { done, held, retryAfterMs } = await this.batcher.run(slots, { op: 'a', id, limit, leaseMs });
    if (done !== 1) {
      this.redis.events.concurrencySlot({ route, name, key, limit, retryAfterMs });
      return { held, retryAfterMs };
    }
    this.redis.events.concurrencySlot();
    return new RenewedSlot(this.batcher, this.logger, slots, id, leaseMs);
  }
}

export const isRefusal = (result: HeldSlot | SlotRefusal): result is SlotRefusal => 'retryAfterMs' in result;

class RenewedSlot implements HeldSlot {
  private readonly timer: NodeJS.Timeout;
  private released = false;

  constructor(
    private readonly batcher: SlotBatcher,
    private readonly logger: Pick<Logger, 'warn'>,
    private readonly slots: string,
    private readonly id: string,
    private readonly leaseMs: number,
  ) {
    this.timer = setInterval(() => void this.renew(), Math.max(1, Math.floor(leaseMs / 3))).unref();
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.timer);
    await this.batcher.run(this.slots, { op: 'r', id: this.id, limit: 0, leaseMs: 0 });
  }

  private async renew(): Promise<void> {
    try {
      const { done } = await this.batcher.run(this.slots, { op: 'n', id: this.id, limit: 0, leaseMs: this.leaseMs });
      if (done === 1 || this.released) return;
      clearInterval(this.timer);
      this.logger.warn(`a concurrency slot of ${this.slots} ended before it could be renewed (its holder still runs, over the limit)`);
    } catch {
      // Redis unreachable: the next renewal tries again, and the lease may run out meanwhile
    }
  }
}
