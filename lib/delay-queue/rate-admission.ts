import { counterKind } from '../rate-limit/policy.js';
import type { RedisKeys } from '../redis/keys.js';
import type { ScriptAccess } from '../redis/redis-connection.js';
import { QueueReply } from '../redis/replies.js';
import type { DelayQueueAdmitLease, DelayQueueAdmitRateKeys } from '../redis/script-bindings.generated.js';
import type { ScriptReply } from '../redis/scripts.js';
import type { ConsumerRateLimit } from './delay-queue.input.js';
import type { DelayedMessage } from './delay-queue.types.js';
import type { QueueKeys } from './queue-keys.js';

/** What admission decided for one claimed message. */
export type Admission =
  | { kind: 'start' }
  /** Over its key's limit: back in the queue, due at `dueAt` (server ms), not an attempt. */
  | { kind: 'deferred'; dueAt: number }
  /** That claim no longer holds the message (its lease ran out and was handed on). */
  | { kind: 'lost' }
  /** The key function threw or returned no key: the message fails as its handler would. */
  | { kind: 'broken'; error: Error };

/**
 * A consumer's rate limit (option `rateLimit`): claimed messages are admitted in one script call
 * per batch (lua/delay-queue/admit.lua), which charges each key's counter or gives the message
 * back to the queue. Counters are keyed `dqr.<algorithm>.<windowMs>:<rate key>:{<queue>}` (and
 * their pace, `dqp.…`): the queue is the hash tag, so they share its slot on a cluster; without a
 * key function the queue has one counter, `dqr.<algorithm>.<windowMs>:{<queue>}`.
 */
export class RateAdmission {
  private readonly kind: string;
  private readonly paceKind: string;

  constructor(
    private readonly redis: ScriptAccess,
    private readonly keys: RedisKeys,
    private readonly queue: string,
    private readonly queueKeys: QueueKeys,
    private readonly rateLimit: ConsumerRateLimit,
  ) {
    this.kind = `dqr.${counterKind(rateLimit.spec)}`;
    this.paceKind = `dqp.${counterKind(rateLimit.spec)}`;
  }

  /**
   * Admits `messages`, each claimed with the lease token at the same index. A call that fails
   * leaves them pending: their leases run out and the claim that hands them on counts no attempt
   * (lua/delay-queue/claim.lua). A call that timed out but ran after all passes its verdicts to
   * `late`, so admitted messages still start.
   */
  async admit(messages: DelayedMessage[], tokens: number[], late: (verdicts: Admission[]) => void): Promise<Admission[]> {
    const verdicts: (Admission | undefined)[] = messages.map(() => undefined);
    const rates: DelayQueueAdmitRateKeys[] = [];
    const leases: DelayQueueAdmitLease[] = [];
    messages.forEach((message, i) => {
      const rate = this.rate(message);
      if (rate instanceof Error) {
        verdicts[i] = { kind: 'broken', error: rate };
        return;
      }
      rates.push({ counter: rate.counter, pace: rate.pace });
      leases.push({ id: message.id, token: tokens[i]! });
    });
    if (rates.length === 0) return verdicts as Admission[];
    const { algorithm, limit, windowMs } = this.rateLimit.spec;
    const adaptive = this.rateLimit.adaptive ? '1' : '0';
    const sent = this.redis.scripts.send('queueAdmit', { keys: { ...this.queueKeys, rates }, args: { algorithm, limit, windowMs, adaptive, leases } });
    const decide = (reply: ScriptReply<'queueAdmit'>) => {
      let next = 0;
      return verdicts.map((verdict): Admission => {
        if (verdict !== undefined) return verdict;
        const code = reply.verdicts[next++]!;
        if (code === QueueReply.ADMITTED) return { kind: 'start' };
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

  /** The pace key of a message's rate key (what a RetryLater with pauseKey pauses), or why it has
   * none; `name`: the rate key as its key function gave it ('' for the queue's one counter). */
  paceKey(message: DelayedMessage): { pace: string; name: string } | Error {
    const rate = this.rate(message);
    return rate instanceof Error ? rate : { pace: rate.pace, name: rate.name };
  }

  /** What RetryLater with pauseKey tells retry-later.lua: the limit and window to halve, if adaptive. */
  get adaptive(): { limit: number; windowMs: number } | undefined {
    return this.rateLimit.adaptive ? { limit: this.rateLimit.spec.limit, windowMs: this.rateLimit.spec.windowMs } : undefined;
  }

  /** The counter and pace keys of a message's rate key (and the key's name), or why it has none. */
  private rate(message: DelayedMessage): (DelayQueueAdmitRateKeys & { name: string }) | Error {
    const { key } = this.rateLimit;
    if (key === undefined) return { counter: this.keys.build(this.kind, this.queue), pace: this.keys.build(this.paceKind, this.queue), name: '' };
    let name: unknown;
    try {
      name = key(message);
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
    if (typeof name !== 'string' || name.length === 0) {
      return new TypeError(`rateLimit.key must return a non-empty string, got ${typeof name === 'string' ? '""' : typeof name}`);
    }
    return { counter: this.keys.build(this.kind, this.queue, name), pace: this.keys.build(this.paceKind, this.queue, name), name };
  }
}
