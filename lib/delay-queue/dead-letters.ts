import type { RedisConnection } from '../redis/redis-connection.js';
import { QueueReply } from '../redis/replies.js';
import { encodeCursor, type DeadCursor } from './dead-letters.input.js';
import { parsePayload } from './delay-queue.input.js';
import type { DeadMessage } from './delay-queue.types.js';
import type { WakeUps } from './wake-ups.js';

/** Dead messages one retry or purge script call moves at most when asked for all: about 1 ms
 * of Redis time per call (INFO commandstats, 100,000 dead on a loaded 2-core machine: retry
 * 1.0 ms, purge 0.7 ms per call of 200; 2.8 and 2.0 ms at 500), so Redis serves everyone else
 * between batches. */
export const DEAD_BATCH = 200;

/**
 * A queue's dead set, seen and replayed: pages by cursor (dead.lua), and retry / purge of given
 * ids in one script call or of all of them in batches (retry-dead.lua, purge-dead.lua).
 */
export class DeadLetters {
  constructor(
    private readonly redis: RedisConnection,
    private readonly wakeUps: WakeUps,
  ) {}

  async page<T>(queue: string, keys: string[], limit: number, after: DeadCursor | undefined): Promise<{ messages: DeadMessage<T>[]; cursor: string | null }> {
    const args = after ? [after.diedAt, after.id, limit] : ['', '', limit];
    const [more, ...flat] = (await this.redis.scripts.run('queueDead', keys, args)) as (string | number)[];
    const messages: DeadMessage<T>[] = [];
    for (let i = 0; i < flat.length; i += 5) {
      const id = String(flat[i]);
      const parsed = parsePayload(flat[i + 2]);
      const stored = String(flat[i + 4]);
      // unreadable: listed with no payload and the parse failure, rather than failing the page
      // (one that died of it was stored with that same text)
      const [payload, error] = parsed instanceof Error ? [null, deadError(parsed, stored)] : [parsed.payload, stored];
      messages.push({ id, queue, payload: payload as T, attempts: Number(flat[i + 3]), error, diedAt: Number(flat[i + 1]) });
    }
    const last = messages.at(-1);
    return { messages, cursor: more === QueueReply.MORE && last ? encodeCursor(last) : null };
  }

  /** Back to scheduled, due now; resolves how many moved. */
  async retry(keys: string[], queue: string, ids: string[] | undefined): Promise<number> {
    const publish = await this.wakeUps.publishCommand();
    const channel = this.wakeUps.channel(queue);
    return this.inBatches(ids, (bound, chosen) => this.redis.scripts.run('queueRetryDead', keys, ['', channel, publish, DEAD_BATCH, bound, ...chosen]));
  }

  /** Deleted with their payloads; resolves how many. */
  purge(keys: string[], ids: string[] | undefined): Promise<number> {
    return this.inBatches(ids, (bound, chosen) => this.redis.scripts.run('queuePurgeDead', keys, ['', DEAD_BATCH, bound, ...chosen]));
  }

  /**
   * Given ids: one call. All: batches of the oldest, each its own script call, bounded by the
   * server time of the first call so the loop ends while messages keep dying.
   */
  private async inBatches(ids: string[] | undefined, call: (bound: number | '', ids: string[]) => Promise<unknown>): Promise<number> {
    if (ids !== undefined) {
      if (ids.length === 0) return 0;
      return ((await call('', ids)) as number[])[0]!;
    }
    let total = 0;
    let bound: number | '' = '';
    for (;;) {
      const [moved, , now] = (await call(bound, [])) as number[];
      bound = bound === '' ? now! : bound;
      total += moved!;
      if (moved! < DEAD_BATCH) return total;
    }
  }
}

/** A dead message's error when its payload cannot be parsed: the parse failure, then the error it
 * died of when that was something else (its payload was damaged after it died). */
function deadError(parse: SyntaxError, stored: string): string {
  const text = `${parse.name}: ${parse.message}`;
  return stored === '' || stored === text ? text : `${text}; it died of ${stored}`;
}
