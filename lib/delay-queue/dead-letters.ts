import type { ScriptAccess } from '../redis/redis-connection.js';
import { QueueReply } from '../redis/replies.js';
import { encodeCursor, type PageCursor } from './dead-letters.input.js';
import { parsePayload } from './delay-queue.input.js';
import type { DeadMessage } from './delay-queue.types.js';
import type { QueueKeys } from './queue-keys.js';
import type { WakeUps } from './wake-ups.js';

/** Dead messages one retry or purge script call moves at most when asked for all: about 1 ms
 * of Redis time per call (INFO commandstats, 100,000 dead on a loaded 2-core machine: retry
 * 1.0 ms, purge 0.7 ms per call of 200; 2.8 and 2.0 ms at 500), so Redis serves everyone else
 * between batches. */
export const DEAD_BATCH = 200;

/**
 * A queue's dead set, seen and replayed: pages by cursor (page.lua), and retry / purge of given
 * ids in one script call or of all of them in batches (retry-dead.lua, purge-dead.lua).
 */
export class DeadLetters {
  constructor(
    private readonly redis: ScriptAccess,
    private readonly wakeUps: WakeUps,
  ) {}

  async page<T>(queue: string, keys: QueueKeys, limit: number, after: PageCursor | undefined): Promise<{ messages: DeadMessage<T>[]; cursor: string | null }> {
    const cursor = after ? { afterScore: after.score, afterId: after.id } : {};
    const { more, messages: dead } = await this.redis.scripts.call('queuePage', { keys, args: { set: 'd', ...cursor, count: limit } });
    const messages: DeadMessage<T>[] = [];
    for (const { id, score: diedAt, payload: stored, attempts, error: died } of dead) {
      const parsed = parsePayload(stored);
      // unreadable: listed with no payload and the parse failure, rather than failing the page
      // (one that died of it was stored with that same text)
      const [payload, error] = parsed instanceof Error ? [null, deadError(parsed, died)] : [parsed.payload, died];
      messages.push({ id, queue, payload: payload as T, attempts, error, diedAt });
    }
    const last = messages.at(-1);
    return { messages, cursor: more === QueueReply.MORE && last ? encodeCursor({ score: last.diedAt, id: last.id }) : null };
  }

  /** Back to scheduled, due now; resolves how many moved. */
  async retry(keys: QueueKeys, queue: string, ids: string[] | undefined): Promise<number> {
    const publish = await this.wakeUps.publishCommand();
    const wakeChannel = this.wakeUps.channel(queue);
    return this.inBatches(ids, (diedBy, chosen) =>
      this.redis.scripts.call('queueRetryDead', { keys, args: { wakeChannel, publish, count: DEAD_BATCH, diedBy, ids: chosen } }),
    );
  }

  /** Deleted with their payloads; resolves how many. */
  purge(keys: QueueKeys, ids: string[] | undefined): Promise<number> {
    return this.inBatches(ids, (diedBy, chosen) => this.redis.scripts.call('queuePurgeDead', { keys, args: { count: DEAD_BATCH, diedBy, ids: chosen } }));
  }

  /**
   * Given ids: one call. All: batches of the oldest, each its own script call, bounded by the
   * server time of the first call so the loop ends while messages keep dying.
   */
  private async inBatches(ids: string[] | undefined, call: (diedBy: number | '', ids: string[]) => Promise<{ done: number; now: number }>): Promise<number> {
    if (ids !== undefined) {
      if (ids.length === 0) return 0;
      return (await call('', ids)).done;
    }
    let total = 0;
    let bound: number | '' = '';
    for (;;) {
      const { done, now } = await call(bound, []);
      bound = bound === '' ? now : bound;
      total += done;
      if (done < DEAD_BATCH) return total;
    }
  }
}

/** A dead message's error when its payload cannot be parsed: the parse failure, then the error it
 * died of when that was something else (its payload was damaged after it died). */
function deadError(parse: SyntaxError, stored: string): string {
  const text = `${parse.name}: ${parse.message}`;
  return stored === '' || stored === text ? text : `${text}; it died of ${stored}`;
}
