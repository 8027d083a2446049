import type { RedisConnection } from '../redis/redis-connection.js';
import type { LimitSpec, RateLimitDecision } from './policy.js';
import { RefusalCache, type CachedLimit } from './refusal-cache.js';
import { RefusalChannel } from './refusal-channel.js';

/** A stack's limit as the cache tells them apart (with its counter key): its spec and permits. */
export interface CacheableLimit {
  spec: LimitSpec;
  permits: number;
}

/** What a refused stack needs to be remembered: the channel's epoch, the cache's invalidation
 * mark and the clock when it was sent. */
export interface SentStack {
  limits: CachedLimit[];
  epoch: number;
  mark: number;
  sentAt: number;
}

/**
 * The module's refusal cache and the channel that keeps every process's cache honest (see
 * RefusalCache and RefusalChannel). `refusalCache: false` makes every method a no-op.
 */
export class Refusals {
  /** Undefined with `refusalCache: false`. Read by tests. */
  readonly cache: RefusalCache | undefined;
  readonly channel: RefusalChannel | undefined;

  constructor(private readonly redis: RedisConnection) {
    const { refusalCache } = redis.options;
    if (refusalCache === false) return;
    this.cache = new RefusalCache(refusalCache.maxEntries, () => redis.clock.now());
    this.channel = new RefusalChannel(redis, this.cache);
  }

  /** A remembered refusal for the stack of `stack`'s limits on `counters` (their keys), or the note
   * `remember` needs if Redis refuses it. */
  lookup(
    counters: readonly string[],
    stack: readonly CacheableLimit[],
  ): { hit: { retryAfterMs: number; decisions: RateLimitDecision[] } } | { sent: SentStack } | undefined {
    if (this.cache === undefined) return undefined;
    const limits = counters.map((counter, i) => ({ counter, policy: policyOf(stack[i]!.spec), permits: stack[i]!.permits }));
    const hit = this.cache.lookup(limits);
    if (hit !== undefined) {
      this.redis.events.refusalCacheHit();
      return { hit };
    }
    return { sent: { limits, epoch: this.channel!.epoch, mark: this.cache.mark, sentAt: this.redis.clock.now() } };
  }

  /** Redis refused a stack: remembered if the channel was live throughout and no counter of it
   * was invalidated meanwhile (else opened for next time). */
  remember(sent: SentStack, retryAfterMs: number, decisions: readonly RateLimitDecision[]): void {
    this.channel!.open();
    if (sent.epoch !== -1 && sent.epoch === this.channel!.epoch) this.cache!.remember(sent.limits, retryAfterMs, decisions, sent.sentAt, sent.mark);
  }

  /** `counters` may grant again (reset): forgotten here at once, elsewhere over pub/sub. */
  invalidate(counters: readonly string[]): Promise<void> {
    return this.channel?.publish(counters) ?? Promise.resolve();
  }

  /** The channel a script publishes its counters on (refund.lua, block.lua), so other processes
   * hear of it in the same call; undefined with the cache off. */
  get publishChannel(): string | undefined {
    return this.channel?.name;
  }

  /** What a script published for every other process: this one forgets at once. */
  forget(counters: readonly string[]): void {
    for (const counter of counters) this.cache?.invalidate(counter);
  }

  /** ms this process still refuses `counter` from its cache without asking Redis; undefined: not. */
  refusingFor(counter: string): number | undefined {
    return this.cache?.refusingFor(counter);
  }

  /** Forgets every remembered refusal here (the limits they were decided by changed). */
  clear(): void {
    this.cache?.clear();
  }

  close(): void {
    this.channel?.close();
  }
}

// the counter key holds the kind and window; the limit tells tiers apart
const policyOf = (spec: LimitSpec): string => `${spec.kind}${spec.limit}`;
