import type { DelayQueueInspectReply } from '../redis/script-bindings.generated.js';

/** Why a message was last given back to wait (message-fields.lua's 'y:'), parsed. */
interface Wait {
  /** 'r' over its rate limit, 'p' its key paused, 'c' waiting for a concurrency slot, 'l' its
   * handler's RetryLater. */
  code: string;
  /** The due time it was given then: the reason holds while the message is still due then. */
  due: number;
  /** The key it waits on (a Redis key), for every code but 'l'. */
  key: string | undefined;
}

function parseWait(why: string): Wait | undefined {
  const match = /^([rpcl]) (\d+)(?: (.+))?$/s.exec(why);
  return match ? { code: match[1]!, due: Number(match[2]), key: match[3] } : undefined;
}

/**
 * One sentence on where a message stands and why, from inspect.lua's reading. `heldHere`: this
 * process's consumer holds the lease in flight; `keyName`: the user's key a Redis key was built
 * for (undefined for a queue's single key).
 */
export function explainMessage(queue: string, id: string, m: DelayQueueInspectReply, heldHere: boolean, keyName: (key: string) => string | undefined): string {
  const at = (ms: number) => new Date(ms).toISOString();
  const from = (ms: number) => `${Math.max(0, Math.ceil(ms - m.now))} ms`;
  const attempts = `${m.attempts} attempt${m.attempts === 1 ? '' : 's'}`;
  switch (m.state) {
    case '-':
      return `unknown: queue ${JSON.stringify(queue)} holds no message ${JSON.stringify(id)} (never enqueued, or acknowledged, cancelled or purged)`;
    case 'd':
      return `dead: ${m.error === '' ? 'no error recorded' : m.error} (died at ${at(m.score)}, after ${attempts})`;
    case 'f': {
      const who = heldHere ? 'this process' : 'another process';
      if (m.score <= m.now) return `leased by ${who}, claim ${m.claims}, lease ran out at ${at(m.score)}: the next claim delivers it again`;
      const doing = m.pending === 1 ? 'awaiting its admission past its rate limit and concurrency cap' : `attempt ${m.attempts}`;
      return `leased by ${who}, claim ${m.claims}, ${doing}, lease until ${at(m.score)} (in ${from(m.score)})`;
    }
    case 's': {
      const wait = parseWait(m.why);
      // a reason holds while the message is still due when that wait made it due
      if (wait && Math.floor(m.score) === wait.due && m.score > m.now) {
        const scope = wait.key === undefined ? undefined : keyName(wait.key);
        const key = scope === undefined ? "the queue's key" : `key ${JSON.stringify(scope)}`;
        const until = `until ${at(m.score)} (in ${from(m.score)})`;
        if (wait.code === 'r') return `waiting for ${scope === undefined ? "the queue's" : `${key}'s`} rate limit ${until}`;
        if (wait.code === 'p') return `waiting: ${key} is paused by RetryLater ${until}`;
        if (wait.code === 'c') return `waiting for a concurrency slot of ${key}: due once one frees, ${at(m.score)} at the latest`;
        return `paused by RetryLater ${until}`;
      }
      if (m.score > m.now) {
        const failed = m.error === '' ? '' : `; a retry after ${attempts}, the last failed: ${m.error}`;
        return `due in ${from(m.score)}, at ${at(m.score)}${failed}`;
      }
      return `due since ${at(m.score)} (${Math.floor(m.now - m.score)} ms ago): waiting for a consumer to claim it`;
    }
  }
}
