import type { ScriptAccess } from '../redis/redis-connection.js';
import { QueueReply } from '../redis/replies.js';
import { encodeCursor, type PageCursor } from './dead-letters.input.js';
import { parsePayload } from './delay-queue.input.js';
import type { ListOptions, MessagePage, QueuedMessage } from './delay-queue.types.js';
import { explainMessage } from './message-explanation.js';
import type { QueueKeys } from './queue-keys.js';

const STATES = { s: 'scheduled', f: 'in-flight', d: 'dead' } as const;
const SETS = { scheduled: 's', 'in-flight': 'f' } as const;

/** Whether a consumer in this process holds `id` under the claim `token`. */
export type HeldHere = (id: string, token: number) => boolean;

/**
 * Seeing inside a queue: one message (inspect.lua) as `get` shows it or `explain` tells it, and
 * pages of the scheduled or in-flight set (page.lua, as `dead()` pages the dead one).
 */
export class MessageInspector {
  constructor(private readonly redis: ScriptAccess) {}

  async get<T>(keys: QueueKeys, id: string): Promise<QueuedMessage<T> | null> {
    const m = await this.redis.scripts.call('queueInspect', { keys, args: { id } });
    if (m.state === '-') return null;
    // the due time of the delivery in flight, or of the last one once dead
    const runAt = m.state === 's' ? m.score : (m.runAt ?? m.score);
    return { id, state: STATES[m.state], runAt, attempts: m.attempts, payload: payloadOf<T>(m.payload) };
  }

  async list<T>(keys: QueueKeys, state: ListOptions['state'], limit: number, after: PageCursor | undefined): Promise<MessagePage<T>> {
    const cursor = after ? { afterScore: after.score, afterId: after.id } : {};
    const page = await this.redis.scripts.call('queuePage', { keys, args: { set: SETS[state], ...cursor, count: limit } });
    const messages = page.messages.map((m) => ({
      id: m.id,
      runAt: state === 'scheduled' ? m.score : (m.runAt ?? m.score),
      attempts: m.attempts,
      payload: payloadOf<T>(m.payload),
    }));
    const last = page.messages.at(-1);
    return { messages, cursor: page.more === QueueReply.MORE && last ? encodeCursor({ score: last.score, id: last.id }) : null };
  }

  async explain(queue: string, keys: QueueKeys, id: string, heldHere: HeldHere): Promise<string> {
    const m = await this.redis.scripts.call('queueInspect', { keys, args: { id } });
    return explainMessage(queue, id, m, m.state === 'f' && heldHere(id, m.claims), (key) => this.redis.keys.scopeOf(key));
  }
}

/** A stored payload, or null when it cannot be parsed (as `dead()` lists one). */
function payloadOf<T>(stored: string): T {
  const parsed = parsePayload(stored);
  return (parsed instanceof Error ? null : parsed.payload) as T;
}
