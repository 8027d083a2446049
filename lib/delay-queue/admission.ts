import { counterKind } from '../rate-limit/policy.js';
import type { RedisKeys } from '../redis/keys.js';
import type { ScriptAccess } from '../redis/redis-connection.js';
import { QueueReply } from '../redis/replies.js';
import type { DelayQueueAdmitFlowKeys, DelayQueueAdmitLease } from '../redis/script-bindings.generated.js';
import type { ScriptReply } from '../redis/scripts.js';
import type { ConsumerRateLimit, ConsumerSlots } from './delay-queue.input.js';
import type { DelayedMessage } from './delay-queue.types.js';
import type { QueueKeys } from './queue-keys.js';

/** A message's concurrency key: its slots and waiting set (lua/delay-queue/admit.lua). */
export interface SlotKeys {
  slots: string;
  waiting: string;
}

/** What admission decided for one claimed message. */
export type Verdict =
  /** Its handler may start; with a cap per key, it holds `slot` until it ends (`release`). */
  | { kind: 'start'; slot?: SlotKeys }
  /** Over its key's limit (or its key paused): back in the queue, due at `dueAt` (server ms), not an attempt. */
  | { kind: 'deferred'; dueAt: number }
  /** Every slot of its concurrency key taken: back in the queue until one frees, not an attempt. */
  | { kind: 'waiting' }
  /** That claim no longer holds the message (its lease ran out and was handed on). */
  | { kind: 'lost' }
  /** A key function threw or returned no key: the message fails as its handler would. */
  | { kind: 'broken'; error: Error };

/** A message's keys for admit.lua, and the names its key functions gave. */
interface Flow {
  keys: DelayQueueAdmitFlowKeys;
  /** The rate key's name ('' for the queue's one counter); undefined without a rate limit. */
  rate: string | undefined;
  /** The concurrency key's slots; undefined without a cap per key. */
  slot: SlotKeys | undefined;
}

/**
 * A consumer's rate limit (option `rateLimit`) and cap per key (`concurrencyPerKey`): claimed
 * messages are admitted in one script call per batch (lua/delay-queue/admit.lua), which charges
 * each rate key's counter and takes a slot of each concurrency key, or gives the message back to
 * the queue. Every key has the queue as its hash tag, so they share its slot on a cluster:
 * - a rate key's counter `dqr.<algorithm>.<windowMs>:<rate key>:{<queue>}` and its pace `dqp.…`
 *   (without a key function, the queue's one counter, `dqr.<algorithm>.<windowMs>:{<queue>}`);
 * - a concurrency key's slots `dqc:<key>:{<queue>}`, its waiting messages `dqcw:…` and its pause
 *   `dqch:…`.
 */
export class Admission {
  private readonly kind: string;
  private readonly paceKind: string;
  /** Each admitted message's flow, for its RetryLater's pause. */
  private readonly flows = new WeakMap<DelayedMessage, Flow>();

  constructor(
    private readonly redis: ScriptAccess,
    private readonly keys: RedisKeys,
    private readonly queue: string,
    private readonly queueKeys: QueueKeys,
    private readonly rateLimit: ConsumerRateLimit | undefined,
    private readonly slots: ConsumerSlots | undefined,
    /** How long a message waiting for a slot stays back at most: a slot a dead consumer held
     * frees when its lease runs out, which nothing announces (the consumer's visibility timeout). */
    private readonly parkMs: number,
  ) {
    this.kind = rateLimit ? `dqr.${counterKind(rateLimit.spec)}` : '';
    this.paceKind = rateLimit ? `dqp.${counterKind(rateLimit.spec)}` : '';
  }

  /**
   * Admits `messages`, each claimed with the lease token at the same index. A call that fails
   * leaves them pending: their leases run out and the claim that hands them on counts no attempt
   * (lua/delay-queue/claim.lua). A call that timed out but ran after all passes its verdicts to
   * `late`, so admitted messages still start.
   */
  async admit(messages: DelayedMessage[], tokens: number[], late: (verdicts: Verdict[]) => void): Promise<Verdict[]> {
    const verdicts: (Verdict | undefined)[] = messages.map(() => undefined);
    const flows: DelayQueueAdmitFlowKeys[] = [];
    const admitted: Flow[] = [];
    const leases: DelayQueueAdmitLease[] = [];
    messages.forEach((message, i) => {
      const flow = this.flow(message);
      if (flow instanceof Error) {
        verdicts[i] = { kind: 'broken', error: flow };
        return;
      }
      this.flows.set(message, flow);
      flows.push(flow.keys);
      admitted.push(flow);
      leases.push({ id: message.id, token: tokens[i]! });
    });
    if (flows.length === 0) return verdicts as Verdict[];
    const { algorithm, limit, windowMs } = this.rateLimit?.spec ?? { algorithm: '-' as const, limit: 0, windowMs: 0 };
    const adaptive = this.rateLimit?.adaptive ? '1' : '0';
    const slots = this.slots?.limit ?? 0;
    const sent = this.redis.scripts.send('queueAdmit', {
      keys: { ...this.queueKeys, flows },
      args: { algorithm, limit, windowMs, adaptive, slots, parkMs: this.parkMs, leases },
    });
    const decide = (reply: ScriptReply<'queueAdmit'>) => {
      let next = 0;
      return verdicts.map((verdict): Verdict => {
        if (verdict !== undefined) return verdict;
        const flow = admitted[next]!;
        const code = reply.verdicts[next++]!;
        if (code === QueueReply.ADMITTED) return flow.slot ? { kind: 'start', slot: flow.slot } : { kind: 'start' };
        if (code === QueueReply.WAITING) return { kind: 'waiting' };
        return code === QueueReply.LEASE_LOST ? { kind: 'lost' } : { kind: 'deferred', dueAt: code };
      });
    };
    try {
      return decide(await this.redis.scripts.bounded(sent, 'queueAdmit'));
    } catch (error) {
      // nothing is decided yet: every verdict (broken keys too) waits for the reply, if it comes
      sent
        .then(
          (reply) => late(decide(reply)),
          () => undefined,
        )
        .catch(() => undefined);
      throw error;
    }
  }

  /**
   * A handler that held `slot` ended: the slot frees and its key's longest waiting message is due
   * now (lua/delay-queue/slot-release.lua). Resolves whether one was.
   */
  async release(message: DelayedMessage, token: number, slot: SlotKeys): Promise<boolean> {
    const woken = await this.redis.scripts.call('queueSlotRelease', {
      keys: { scheduled: this.queueKeys.scheduled, ...slot },
      args: { id: message.id, token },
    });
    return woken === 1;
  }

  /** What a RetryLater with pauseKey pauses for an admitted message: its rate key's pace (first)
   * and its concurrency key's hold, and the rate key's name; or why it has none. */
  paces(message: DelayedMessage): { paces: string[]; rate: string | undefined } | Error {
    const flow = this.flows.get(message) ?? this.flow(message);
    if (flow instanceof Error) return flow;
    const paces: string[] = [];
    if (flow.rate !== undefined) paces.push(flow.keys.pace);
    if (flow.slot !== undefined) paces.push(flow.keys.hold);
    return { paces, rate: flow.rate };
  }

  /** What RetryLater with pauseKey tells retry-later.lua: the limit and window to halve, if adaptive. */
  get adaptive(): { limit: number; windowMs: number } | undefined {
    return this.rateLimit?.adaptive ? { limit: this.rateLimit.spec.limit, windowMs: this.rateLimit.spec.windowMs } : undefined;
  }

  /** A message's keys, from its key functions, or why it has none. */
  private flow(message: DelayedMessage): Flow | Error {
    let counter: string | undefined;
    let pace: string | undefined;
    let rate: string | undefined;
    if (this.rateLimit) {
      const name = this.rateLimit.key === undefined ? '' : keyOf(this.rateLimit.key, message, 'rateLimit.key');
      if (name instanceof Error) return name;
      rate = name;
      const scope = name === '' ? undefined : name;
      counter = this.keys.build(this.kind, this.queue, scope);
      pace = this.keys.build(this.paceKind, this.queue, scope);
    }
    let slot: SlotKeys | undefined;
    let hold: string | undefined;
    if (this.slots) {
      const name = keyOf(this.slots.key, message, 'concurrencyPerKey.key');
      if (name instanceof Error) return name;
      slot = { slots: this.keys.build('dqc', this.queue, name), waiting: this.keys.build('dqcw', this.queue, name) };
      hold = this.keys.build('dqch', this.queue, name);
    }
    // a row the consumer does not use repeats another of the message's keys (admit.lua never reads it)
    const pauseKey = (pace ?? hold)!;
    return {
      keys: { counter: counter ?? pauseKey, pace: pauseKey, slots: slot?.slots ?? pauseKey, waiting: slot?.waiting ?? pauseKey, hold: hold ?? pauseKey },
      rate,
      slot,
    };
  }
}

/** A key function's key for `message`, or why it has none. */
function keyOf(key: (message: DelayedMessage) => string, message: DelayedMessage, option: string): string | Error {
  let name: unknown;
  try {
    name = key(message);
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
  if (typeof name !== 'string' || name.length === 0) {
    return new TypeError(`${option} must return a non-empty string, got ${typeof name === 'string' ? '""' : typeof name}`);
  }
  return name;
}
