import type { RateLimitDecision } from './policy.js';

/** Stacks remembered at most, by default: a few hundred bytes each. */
export const DEFAULT_REFUSAL_CACHE_ENTRIES = 10_000;

/** One limit of a stack as the cache tells them apart: its counter and the numbers it decided by. */
export interface CachedLimit {
  /** The counter's Redis key: what an invalidation names. */
  counter: string;
  /** The limit's numbers (algorithm, limit, window): a tier that resolves higher is another stack. */
  policy: string;
  permits: number;
}

export interface CachedRefusal {
  /** ms until the stack could be granted, from now. */
  retryAfterMs: number;
  /** Each limit's decision as Redis gave it, its waits shortened by the time since. */
  decisions: RateLimitDecision[];
}

interface Entry {
  counters: string[];
  permits: number[];
  /** Local clock (ms) before which Redis would refuse the same stack again. */
  until: number;
  at: number;
  decisions: RateLimitDecision[];
}

/**
 * Refusals remembered in the process, so a flood from one key costs Redis nothing.
 *
 * Exact by construction: Redis says when a refused stack could be granted (`retryAfterMs`, on its
 * own clock, and a refusal charges nothing), so until then the same stack at the same or a higher
 * cost is refused again — unless a counter of it was given permits back, which `invalidate` (heard
 * from every process over pub/sub) deals with. The wait is counted from when the request was
 * sent, before Redis decided, so the cache lets go no later than Redis would.
 *
 * An invalidation can arrive while a refused request is in flight (its reply queued behind a
 * large one): the refusal may predate the reset it names, so it must not be remembered. Each
 * invalidation takes the next number of a sequence; a request notes the sequence when sent
 * (`mark`), and its refusal is remembered only if no counter of it was invalidated since.
 *
 * Bounded: an LRU of at most `maxEntries` stacks; expired entries leave when met. The last
 * `maxEntries` invalidations are remembered by counter; a request older than the oldest of them
 * is not remembered (which only costs it a Redis call next time).
 */
export class RefusalCache {
  private readonly entries = new Map<string, Entry>();
  /** counter -> the stacks that hold it */
  private readonly byCounter = new Map<string, Set<string>>();
  /** counter -> the sequence number of its latest invalidation, oldest first */
  private readonly invalidated = new Map<string, number>();
  private sequence = 0;
  /** Requests sent before this may have missed an invalidation no longer in `invalidated`. */
  private floor = 0;

  constructor(
    readonly maxEntries = DEFAULT_REFUSAL_CACHE_ENTRIES,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  get size(): number {
    return this.entries.size;
  }

  /** Noted when a request is sent, handed back to `remember`. */
  get mark(): number {
    return this.sequence;
  }

  /** A remembered refusal that still holds for this stack at these costs, or undefined. */
  lookup(limits: readonly CachedLimit[]): CachedRefusal | undefined {
    const id = stackId(limits);
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    const now = this.clock();
    if (now >= entry.until) {
      this.delete(id, entry);
      return undefined;
    }
    // a cheaper request might fit where this one did not: Redis decides it
    if (limits.some((limit, i) => limit.permits < entry.permits[i]!)) return undefined;
    this.entries.delete(id);
    this.entries.set(id, entry); // most recently used last
    const elapsed = now - entry.at;
    return {
      retryAfterMs: Math.ceil(entry.until - now),
      decisions: entry.decisions.map((d) => ({
        ...d,
        retryAfterMs: d.allowed ? 0 : Math.max(1, Math.ceil(d.retryAfterMs - elapsed)),
        resetMs: Math.max(0, Math.ceil(d.resetMs - elapsed)),
      })),
    };
  }

  /**
   * Remembers a refusal Redis gave for a stack sent at `sentAt` (this cache's clock) when the
   * cache's `mark` was `mark`, unless a counter of it was invalidated since. Cheaper requests are
   * not covered by it; a later refusal of the same stack replaces it.
   */
  remember(limits: readonly CachedLimit[], retryAfterMs: number, decisions: readonly RateLimitDecision[], sentAt: number, mark = this.sequence): void {
    if (!(retryAfterMs > 1) || this.maxEntries === 0 || mark < this.floor) return;
    if (limits.some((limit) => (this.invalidated.get(limit.counter) ?? -1) > mark)) return;
    const id = stackId(limits);
    const old = this.entries.get(id);
    if (old !== undefined) this.delete(id, old);
    const entry: Entry = {
      counters: limits.map((limit) => limit.counter),
      permits: limits.map((limit) => limit.permits),
      // Redis counts whole ms on its clock floored to one: the true wait may be up to 1 ms shorter
      until: sentAt - 1 + retryAfterMs,
      at: sentAt - 1,
      decisions: decisions.map((d) => ({ ...d })),
    };
    this.entries.set(id, entry);
    for (const counter of entry.counters) {
      let stacks = this.byCounter.get(counter);
      if (stacks === undefined) this.byCounter.set(counter, (stacks = new Set()));
      stacks.add(id);
    }
    if (this.entries.size > this.maxEntries) {
      const [oldest, evicted] = this.entries.entries().next().value as [string, Entry];
      this.delete(oldest, evicted);
    }
  }

  /** Whether a remembered refusal involves `counter`. */
  holds(counter: string): boolean {
    return this.byCounter.has(counter);
  }

  /** ms the longest remembered refusal involving `counter` still holds; undefined when none does. */
  refusingFor(counter: string): number | undefined {
    const now = this.clock();
    let until = now;
    for (const id of this.byCounter.get(counter) ?? []) until = Math.max(until, this.entries.get(id)!.until);
    return until > now ? Math.ceil(until - now) : undefined;
  }

  /** Forgets every refusal that involved `counter` (it was reset, or given permits back), and
   * keeps any refusal of it now in flight from being remembered. */
  invalidate(counter: string): void {
    this.sequence += 1;
    this.invalidated.delete(counter);
    this.invalidated.set(counter, this.sequence);
    if (this.invalidated.size > this.maxEntries) {
      const [oldest, at] = this.invalidated.entries().next().value as [string, number];
      this.invalidated.delete(oldest);
      this.floor = at;
    }
    const stacks = this.byCounter.get(counter);
    if (stacks === undefined) return;
    for (const id of [...stacks]) this.delete(id, this.entries.get(id)!);
  }

  /** Forgets every refusal, and keeps those now in flight from being remembered. */
  clear(): void {
    this.entries.clear();
    this.byCounter.clear();
    this.invalidated.clear();
    this.sequence += 1;
    this.floor = this.sequence;
  }

  private delete(id: string, entry: Entry): void {
    this.entries.delete(id);
    for (const counter of entry.counters) {
      const stacks = this.byCounter.get(counter)!;
      stacks.delete(id);
      if (stacks.size === 0) this.byCounter.delete(counter);
    }
  }
}

// Injective: each counter (any text) is preceded by its length, and a policy (letters and
// numbers) never holds the '|' that ends it.
function stackId(limits: readonly CachedLimit[]): string {
  let id = '';
  for (const limit of limits) id += `${limit.counter.length}:${limit.counter}${limit.policy}|`;
  return id;
}
