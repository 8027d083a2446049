// node:timers' own setImmediate, which jest's fake timers leave alone: an app whose tests fake
// timers still gets its decisions
import { setImmediate } from 'node:timers';
import { clusterSlot } from './slot.js';

/**
 * Gathers the calls made in one turn of the event loop into batches, one per cluster slot, and
 * hands each to `send`: a busy app pays one round trip, one script start and one TIME for many
 * calls. The flush runs in setImmediate, after the poll phase: requests read from many sockets in
 * one pass share a batch (with process.nextTick each would go alone). A lone call waits for
 * nothing else; a batch that reaches `max` goes at once, which bounds how long one call holds Redis.
 */
export class TurnBatcher<T> {
  private readonly open = new Map<number, T[]>();
  private scheduled = false;

  constructor(
    private readonly send: (batch: T[]) => void,
    /** Group by slot: a cluster runs each call on the node that owns its keys. */
    private readonly cluster: boolean,
    private readonly max: number,
  ) {}

  /** Adds `item`, whose keys are in `key`'s hash slot, to this turn's batch of that slot. */
  add(key: string, item: T): void {
    const slot = this.cluster ? clusterSlot(key) : 0;
    const batch = this.open.get(slot);
    if (batch === undefined) this.open.set(slot, [item]);
    else if (batch.push(item) >= this.max) {
      this.open.delete(slot);
      this.send(batch);
    }
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    for (const batch of this.open.values()) this.send(batch);
    this.open.clear();
  }
}
