import { Logger } from '@nestjs/common';
import { ChannelSubscription } from '../redis/channel-subscription.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import { DeclaredNames, overrideRefusal } from './overrides-declared.js';
import {
  decodeOverride,
  describeOverride,
  keyedField,
  overriddenSpec,
  parseKeyedField,
  type AppliedOverride,
  type CheckedOverride,
  type LimitOverride,
  type StoredOverride,
} from './overrides-policy.js';
import type { LimitSpec } from './policy.js';

/** While pub/sub is down, how often the overrides are read again (ms). */
export const OVERRIDE_POLL_MS = 1000;
/** setTimeout's longest delay: a lapse further off is looked at again then. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** name → key → the per-key override in force here. */
export type KeyedOverrides = ReadonlyMap<string, ReadonlyMap<string, LimitOverride>>;

/**
 * Runtime limit overrides: two Redis hashes under the key prefix, one slot: name → override, and
 * [name, key] → a per-key override, which beats its name's. Every process reads them at start-up
 * and keeps them in `table` and `keyed`, and reads them again when a change is announced on the
 * overrides channel, or every OVERRIDE_POLL_MS while it is not subscribed (a change announced
 * then would be missed; on a Redis Cluster always, see `listen`). The subscription is opened only
 * by an app whose limits carry names. An override given a ttl lapses here by a timer set from the
 * time it had left on the server's clock when read; the next read deletes it from Redis.
 *
 * Whoever wrote a value (another app or version on the prefix, a hand edit), it is put in force
 * here only if setOverride here would take it (DeclaredNames.refusal): a value that is not an
 * override, or that some limit of its name here could not take, is ignored with one warning per
 * change, and those limits keep their declared policy.
 */
export class Overrides {
  /** name → the override in force here. Read by every request of a named limit; replaced in place. */
  readonly table = new Map<string, LimitOverride>();
  /** name → key → the per-key override in force here; replaced in place. */
  readonly keyed = new Map<string, Map<string, LimitOverride>>();
  /** What the latest applied read found, by stored field (a per-key one's is `k` + its field). */
  private stored = new Map<string, Stored>();
  readonly declared = new DeclaredNames();
  private readonly byName: string;
  private readonly byKey: string;
  private readonly channel: string;
  private subscription: ChannelSubscription | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lapse: NodeJS.Timeout | undefined;
  /** Stops the re-check on each jump of a test clock. */
  private readonly stopClock: () => void;
  private started = false;
  private closed = false;
  /** Reads sent, and the latest whose answer was applied: an older answer arriving late is dropped. */
  private reads = 0;
  private lastApplied = 0;
  private readonly logger = new Logger('RateLimitOverrides');
  /** stored field → the stored text last warned about: one warning per change, not per read. */
  private warned = new Map<string, string>();

  constructor(
    private readonly redis: RedisConnection,
    /** Called when the overrides in force here change. */
    private readonly changed: () => void,
  ) {
    this.byName = redis.keys.build('ov', 'overrides');
    this.byKey = redis.keys.build('ov', 'overrides', 'keyed');
    this.channel = redis.keys.build('ov', 'changed');
    // a test clock that jumps past an override's lapse lapses it at once, as time would
    this.stopClock = redis.clock.onAdvance(() => {
      if (this.started && !this.closed) this.apply();
    });
  }

  /** At start-up: reads the overrides before the first request, if any limit has a name. */
  async start(): Promise<void> {
    this.started = true;
    await this.listen();
  }

  /** A named limit compiled: after start-up (a route met late) that may be the first, or one an
   * override in force cannot apply to. */
  declare(...args: Parameters<DeclaredNames['add']>): void {
    this.declared.add(...args);
    if (!this.started) return;
    this.apply();
    void this.listen();
  }

  /** Stores the override (null: removes it), announces it, and applies it here before resolving. */
  async set(name: string, { override, key, ttlMs }: CheckedOverride): Promise<void> {
    const { client, scripts } = this.redis;
    // an admin app, a worker or a CLI sets overrides for the instances that declare the name: a
    // typo is said here, and those instances check the value against their own limits
    if (override !== null && !this.declared.has(name)) {
      this.logger.warn(
        `override of '${name}': no @RateLimit, @Funnel or defaultLimits entry of this app is named '${name}'; stored for the app instances that declare it`,
      );
    }
    const hash = key === undefined ? this.byName : this.byKey;
    const field = key === undefined ? name : keyedField(name, key);
    let expiresAt = -1;
    if (override === null) await scripts.bounded(client.hdel(hash, field), 'HDEL');
    else {
      const args = { field, limit: override.limit, windowMs: override.windowMs, ttlMs };
      expiresAt = await scripts.call('rateLimitOverrideSet', { keys: { overrides: hash }, args });
    }
    // a change whose announcement failed would reach subscribed processes only on a reconnect:
    // rejecting says so, and setting it again announces it
    await Promise.all([scripts.bounded(client.publish(this.channel, name), 'PUBLISH'), this.read()]);
    const applied = override === null ? null : this.report(name, override, expiresAt < 0 ? undefined : expiresAt);
    const whose = key === undefined ? `'${name}'` : `'${name}' for key '${key}'`;
    const lapses = expiresAt < 0 ? '' : `, lapsing at ${new Date(expiresAt).toISOString()}`;
    this.logger.log(applied === null ? `override of ${whose} removed` : `override of ${whose}: limit ${applied.limit}, windowMs ${applied.windowMs}${lapses}`);
    this.redis.events.override(name, applied, key);
  }

  /** Every stored override as it applies here (read from Redis, and applied here too): per-name
   * ones by name, per-key ones as `<name>:<key>`, carrying their name and key. */
  async list(): Promise<Record<string, AppliedOverride>> {
    await this.read();
    const listed: Record<string, AppliedOverride> = {};
    for (const entry of this.stored.values()) {
      if (entry.decoded === undefined || entry.lapsed(this.redis.clock.now())) continue;
      const { override, expiresAt } = entry.decoded;
      if (entry.key === undefined) listed[entry.name] = this.report(entry.name, override, expiresAt);
      else listed[`${entry.name}:${entry.key}`] = { ...this.report(entry.name, override, expiresAt), name: entry.name, key: entry.key };
    }
    return listed;
  }

  close(): void {
    this.closed = true;
    this.stopClock();
    clearInterval(this.timer);
    clearTimeout(this.lapse);
    this.subscription?.close();
  }

  private report(name: string, override: LimitOverride, expiresAt: number | undefined): AppliedOverride {
    const applied: AppliedOverride = { limit: override.limit, windowMs: override.windowMs ?? this.declared.windowOf(name) };
    if (expiresAt !== undefined) applied.expiresAt = expiresAt;
    return applied;
  }

  private async listen(): Promise<void> {
    if (this.subscription !== undefined || this.declared.size === 0 || this.closed) return;
    this.subscription = new ChannelSubscription(this.redis, this.channel, {
      message: () => void this.readQuietly(),
      // read again: a change may have come while not subscribed. A cluster client says nothing
      // when its subscriber connection drops (ioredis picks another node quietly), so there the
      // re-reads go on
      live: () => {
        this.poll(this.redis.cluster);
        void this.readQuietly();
      },
      lost: () => this.poll(true),
    });
    this.poll(true);
    await this.readQuietly();
  }

  private poll(on: boolean): void {
    clearInterval(this.timer);
    this.timer = on && !this.closed ? setInterval(() => void this.readQuietly(), OVERRIDE_POLL_MS).unref() : undefined;
  }

  /** Redis unreachable: what is in force stays, and the next read (poll or reconnect) catches up. */
  private readQuietly(): Promise<unknown> {
    return this.read().catch(() => undefined);
  }

  /** Reads the stored overrides (override-read.lua drops lapsed ones) and puts in force here those
   * that apply. */
  private async read(): Promise<void> {
    const read = ++this.reads;
    const { entries } = await this.redis.scripts.call('rateLimitOverrideRead', { keys: { byName: this.byName, byKey: this.byKey }, args: {} });
    if (read <= this.lastApplied) return;
    const at = this.redis.clock.now();
    const stored = new Map<string, Stored>();
    for (const { keyed, field, value, ttlMs } of entries) {
      const target = keyed === 1 ? parseKeyedField(field) : { name: field, key: undefined };
      stored.set(keyed === 1 ? `k${field}` : field, new Stored(field, target, value, ttlMs < 0 ? undefined : at + ttlMs));
    }
    this.lastApplied = read;
    this.stored = stored;
    this.apply();
  }

  /** Puts in force what the latest read found, as far as this app's limits can take it. */
  private apply(): void {
    clearTimeout(this.lapse);
    const byName = new Map<string, LimitOverride>();
    const byKey = new Map<string, Map<string, LimitOverride>>();
    const warned = new Map<string, string>();
    let nextLapse = Infinity;
    for (const [stored, entry] of this.stored) {
      if (entry.lapsed(this.redis.clock.now())) continue;
      const override = entry.decoded?.override;
      const problem = override === undefined ? 'is not an override' : this.declared.refusal(entry.name, override)?.message;
      if (problem === undefined) {
        if (entry.key === undefined) byName.set(entry.name, override!);
        else (byKey.get(entry.name) ?? byKey.set(entry.name, new Map()).get(entry.name)!).set(entry.key, override!);
        if (entry.lapsesAt !== undefined) nextLapse = Math.min(nextLapse, entry.lapsesAt);
        continue;
      }
      if (this.warned.get(stored) !== entry.text) {
        const whose = entry.key === undefined ? `'${entry.name}'` : `'${entry.name}' for key '${entry.key}'`;
        this.logger.warn(
          override === undefined
            ? `override ${entry.name === '' ? `field ${JSON.stringify(entry.field.slice(0, 80))}` : `of ${whose}`} is not { limit, windowMs? } (${entry.text.slice(0, 80)}): ignored`
            : `override of ${whose} (${entry.text.slice(0, 80)}) ignored, as setOverride here would refuse it: ${problem}; the declared limits of '${entry.name}' apply`,
        );
      }
      warned.set(stored, entry.text);
    }
    this.warned = warned;
    if (nextLapse !== Infinity && !this.closed) {
      // applies again once it has lapsed here, and reads, which deletes it from Redis
      this.lapse = setTimeout(
        () => {
          this.apply();
          void this.readQuietly();
        },
        Math.min(MAX_TIMER_MS, Math.max(0, nextLapse - this.redis.clock.now()) + 1),
      ).unref();
    }
    this.replace(byName, byKey);
  }

  private replace(byName: Map<string, LimitOverride>, byKey: Map<string, Map<string, LimitOverride>>): void {
    const same = sameTable(this.table, byName) && byKey.size === this.keyed.size && [...byKey].every(([name, keys]) => sameTable(this.keyed.get(name), keys));
    if (same) return;
    this.table.clear();
    for (const [name, override] of byName) this.table.set(name, override);
    this.keyed.clear();
    for (const [name, keys] of byKey) this.keyed.set(name, keys);
    this.changed();
  }
}

/** A stored override as read. */
class Stored {
  readonly name: string;
  /** A per-key override's key; undefined for a per-name one. */
  readonly key: string | undefined;
  /** undefined: the value holds no override (or the field names none). */
  readonly decoded: StoredOverride | undefined;

  constructor(
    /** As stored in Redis. */
    readonly field: string,
    target: { name: string; key: string | undefined } | undefined,
    readonly text: string,
    /** When it lapses here (the connection's clock, ms), from the time it had left when read. */
    readonly lapsesAt: number | undefined,
  ) {
    this.name = target?.name ?? '';
    this.key = target?.key;
    this.decoded = target === undefined ? undefined : decodeOverride(text);
  }

  lapsed(now: number): boolean {
    return this.lapsesAt !== undefined && this.lapsesAt <= now;
  }
}

const sameOverride = (a: LimitOverride | undefined, b: LimitOverride): boolean => a !== undefined && a.limit === b.limit && a.windowMs === b.windowMs;

const sameTable = (a: ReadonlyMap<string, LimitOverride> | undefined, b: ReadonlyMap<string, LimitOverride>): boolean =>
  a !== undefined && a.size === b.size && [...b].every(([name, o]) => sameOverride(a.get(name), o));

const requestLogger = new Logger('RateLimitOverrides');
/** override in force → the limits (`at`) a request found could not take it: each said once. */
const refusedByRequests = new WeakMap<LimitOverride, Set<string>>();

/**
 * A request's spec of a limit named `name` under `override` (`spec`: the declared one, tiers
 * resolved), or undefined where what only a request knows refuses it (overrideRefusal: a cost
 * function's `permits` above the override's limit, a tier's window making a bucket inexact), and
 * the declared spec applies. Such a refusal is logged once per override in force and limit, not
 * per request: no override can make a route answer 500.
 */
export function overrideForRequest(
  name: string,
  limit: { at: string; keepWindow: boolean },
  spec: LimitSpec,
  override: LimitOverride,
  permits: unknown,
): LimitSpec | undefined {
  const cost = typeof permits === 'number' ? permits : undefined;
  const refusal = overrideRefusal(name, { at: limit.at, kind: spec.kind, windowMs: spec.windowMs, cost, keepWindow: limit.keepWindow }, override);
  if (refusal === undefined) return overriddenSpec(spec, override, limit.keepWindow);
  let said = refusedByRequests.get(override);
  if (said === undefined) refusedByRequests.set(override, (said = new Set<string>()));
  if (!said.has(limit.at)) {
    said.add(limit.at);
    requestLogger.warn(
      `override of '${name}' (${describeOverride(override)}) ignored for the requests it cannot apply to: ${refusal.message}; those keep the declared policy`,
    );
  }
  return undefined;
}
