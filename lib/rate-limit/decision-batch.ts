import { RateLimitReply } from '../redis/replies.js';
import { clusterSlot } from '../redis/slot.js';
import { replyFailure, type Reply, type ScriptRunner } from '../redis/scripts.js';

/** Stacks per script call: bounds how long one batch holds Redis (about 5 µs per limit here). */
const MAX_STACKS = 128;

interface Pending {
  keys: readonly string[];
  /** consume flag, limit count, four per limit: decide.lua's per-stack arguments. */
  args: readonly (string | number)[];
  resolve: (reply: Reply[]) => void;
  reject: (error: unknown) => void;
}

/**
 * Sends the stacks decided in one turn of the event loop as one decide.lua call (per cluster
 * slot), so a busy app pays one round trip, one script start and one TIME for many decisions.
 * Each stack is still atomic on its own, and a stack whose Redis call fails fails alone. The flush
 * runs in setImmediate, after the poll phase: requests read from many sockets in one pass share a
 * call (with process.nextTick each would go alone). A lone call waits for nothing else.
 */
export class DecisionBatcher {
  private readonly open = new Map<number, Pending[]>();
  private scheduled = false;

  constructor(
    private readonly scripts: ScriptRunner,
    /** Group by slot: a cluster runs each call on the node that owns its keys. */
    private readonly cluster: boolean,
  ) {}

  /** This stack's part of the reply: allowed, then five per limit (the fifth a grant id). */
  decide(keys: readonly string[], args: readonly (string | number)[], now?: number): Promise<Reply[]> {
    return new Promise((resolve, reject) => {
      const pending: Pending = { keys, args, resolve, reject };
      // the test hook's explicit clock is per call; it never shares a batch
      if (now !== undefined) return void this.send([pending], String(now));
      const slot = this.cluster ? clusterSlot(keys[0]!) : 0;
      const batch = this.open.get(slot);
      if (batch === undefined) this.open.set(slot, [pending]);
      else if (batch.push(pending) >= MAX_STACKS) {
        this.open.delete(slot);
        this.send(batch, '');
      }
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    for (const batch of this.open.values()) this.send(batch, '');
    this.open.clear();
  }

  private send(batch: Pending[], now: string): void {
    const keys: string[] = [];
    const args: (string | number)[] = [now];
    for (const pending of batch) {
      keys.push(...pending.keys);
      args.push(...pending.args);
    }
    this.scripts.run('rateLimitDecide', keys, args).then(
      (reply) => split(reply as Reply[], batch),
      (error: unknown) => batch.forEach((pending) => pending.reject(error)),
    );
  }
}

function split(reply: Reply[], batch: Pending[]): void {
  let at = 0;
  for (const pending of batch) {
    if (reply[at] === RateLimitReply.STACK_FAILED) {
      pending.reject(replyFailure('rateLimitDecide', new Error(String(reply[at + 1]))));
      at += 2;
    } else {
      const length = 1 + pending.keys.length * 5;
      pending.resolve(reply.slice(at, at + length));
      at += length;
    }
  }
}
