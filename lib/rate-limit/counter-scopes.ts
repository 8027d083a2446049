import type { ClientAccess, ScriptAccess } from '../redis/redis-connection.js';

/** Scopes remembered per process at most (only declared names are noted, which are finite). */
const MAX_SCOPES = 10_000;

/**
 * Which counter kinds (algorithm and window, e.g. `sw5.60000`) each limit name has used, kept in Redis
 * so `resetLimit(name, key)` finds every counter of a name for a key without scanning: a tier's
 * window is known per request only, an override's window may be another's, and another instance
 * (or an admin process that declares nothing) may be the one asking.
 *
 * A name's kinds are one small set (`<prefix>counter-kinds:{<name>}`, no expiry: names are declared
 * in code, so these are few), added to the first time this process decides a counter of that name
 * and kind: a command per new pair, never per request. It is sent before the decision on the same connection, so a counter is listed before
 * it exists; a failed write is tried again by the next decision.
 */
export class CounterScopes {
  private readonly seen = new Map<string, Set<string>>();

  constructor(private readonly redis: ClientAccess & ScriptAccess) {}

  /** Notes that `scope` decides counters of `kind` (counterKind). */
  note(scope: string, kind: string): void {
    let kinds = this.seen.get(scope);
    if (kinds?.has(kind)) return;
    if (kinds === undefined) {
      if (this.seen.size >= MAX_SCOPES) this.seen.clear();
      this.seen.set(scope, (kinds = new Set()));
    }
    kinds.add(kind);
    this.redis.scripts.bounded(this.redis.client.sadd(this.key(scope), kind), 'SADD').catch(() => kinds.delete(kind));
  }

  /** Every kind `scope` has used, in any process. */
  async kinds(scope: string): Promise<string[]> {
    const stored = await this.redis.scripts.bounded(this.redis.client.smembers(this.key(scope)), 'SMEMBERS');
    return [...new Set([...stored, ...(this.seen.get(scope) ?? [])])];
  }

  private key(scope: string): string {
    return this.redis.keys.build('counter-kinds', scope);
  }
}
