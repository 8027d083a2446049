import { Logger } from '@nestjs/common';
import { ChannelSubscription } from '../redis/channel-subscription.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import { DeclaredNames, overrideRefusal } from './overrides-declared.js';
import { decodeOverride, encodeOverride, overriddenSpec, type AppliedOverride, type LimitOverride } from './overrides-policy.js';
import type { LimitSpec } from './policy.js';

/** While pub/sub is down, how often the overrides are read again (ms). */
export const OVERRIDE_POLL_MS = 1000;

/**
 * Runtime limit overrides: one Redis hash (name → override) under the key prefix, which every
 * process reads at start-up and keeps in `table`, and reads again when a change is announced on
 * the overrides channel, or every OVERRIDE_POLL_MS while it is not subscribed (a change announced
 * then would be missed; on a Redis Cluster always, see `listen`). The subscription is opened only
 * by an app whose limits carry names.
 *
 * Whoever wrote a value (another app or version on the prefix, a hand edit), it is put in force
 * here only if setOverride here would take it (DeclaredNames.refusal): a value that is not an
 * override, or that some limit of its name here could not take, is ignored with one warning per
 * change, and those limits keep their declared policy.
 */
export class Overrides {
  /** name → the override in force here. Read by every request of a named limit; replaced in place. */
  readonly table = new Map<string, LimitOverride>();
  /** What the latest applied read found: name → the stored text, and the override it holds. */
  private stored = new Map<string, Stored>();
  readonly declared = new DeclaredNames();
  private readonly key: string;
  private readonly channel: string;
  private subscription: ChannelSubscription | undefined;
  private timer: NodeJS.Timeout | undefined;
  private started = false;
  private closed = false;
  /** Reads sent, and the latest whose answer was applied: an older answer arriving late is dropped. */
  private reads = 0;
  private lastApplied = 0;
  private readonly logger = new Logger('RateLimitOverrides');
  /** name → the stored text last warned about: one warning per change, not per read. */
  private warned = new Map<string, string>();

  constructor(
    private readonly redis: RedisConnection,
    /** Called when the overrides in force here change. */
    private readonly changed: () => void,
  ) {
    this.key = redis.keys.build('ov', 'overrides');
    this.channel = redis.keys.build('ov', 'changed');
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

  /** Stores `override` (null: removes it), announces it, and applies it here before resolving. */
  async set(name: string, override: LimitOverride | null): Promise<void> {
    const { client, scripts } = this.redis;
    // an admin app, a worker or a CLI sets overrides for the instances that declare the name: a
    // typo is said here, and those instances check the value against their own limits
    if (override !== null && !this.declared.has(name)) {
      this.logger.warn(
        `override of '${name}': no @RateLimit, @Funnel or defaultLimits entry of this app is named '${name}'; stored for the app instances that declare it`,
      );
    }
    if (override === null) await scripts.bounded(client.hdel(this.key, name), 'HDEL');
    else await scripts.bounded(client.hset(this.key, name, encodeOverride(override)), 'HSET');
    // a change whose announcement failed would reach subscribed processes only on a reconnect:
    // rejecting says so, and setting it again announces it
    await Promise.all([scripts.bounded(client.publish(this.channel, name), 'PUBLISH'), this.read()]);
    const applied = override === null ? null : this.report(name, override);
    this.logger.log(applied === null ? `override of '${name}' removed` : `override of '${name}': limit ${applied.limit}, windowMs ${applied.windowMs}`);
    this.redis.events.override(name, applied);
  }

  /** Every stored override as it applies here (read from Redis, and applied here too). */
  async list(): Promise<Record<string, AppliedOverride>> {
    const stored = await this.read();
    return Object.fromEntries([...stored].map(([name, override]) => [name, this.report(name, override)]));
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.subscription?.close();
  }

  private report(name: string, override: LimitOverride): AppliedOverride {
    return { limit: override.limit, windowMs: override.windowMs ?? this.declared.windowOf(name) };
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

  /** Reads the stored overrides (well-formed ones, whether they apply here or not) and puts in
   * force here those that do. */
  private async read(): Promise<Map<string, LimitOverride>> {
    const read = ++this.reads;
    const raw = await this.redis.scripts.bounded(this.redis.client.hgetall(this.key), 'HGETALL');
    const stored = new Map(Object.entries(raw).map(([name, text]): [string, Stored] => [name, { text, override: decodeOverride(text) }]));
    if (read > this.lastApplied) {
      this.lastApplied = read;
      this.stored = stored;
      this.apply();
    }
    return new Map([...stored].flatMap(([name, { override }]) => (override === undefined ? [] : [[name, override]])));
  }

  /** Puts in force what the latest read found, as far as this app's limits can take it. */
  private apply(): void {
    const next = new Map<string, LimitOverride>();
    const warned = new Map<string, string>();
    for (const [name, { text, override }] of this.stored) {
      const problem = override === undefined ? 'is not { limit, windowMs? }' : this.declared.refusal(name, override)?.message;
      if (problem === undefined) {
        next.set(name, override!);
        continue;
      }
      if (this.warned.get(name) !== text) {
        this.logger.warn(
          override === undefined
            ? `override of '${name}' is not { limit, windowMs? } (${text.slice(0, 80)}): ignored`
            : `override of '${name}' (${text.slice(0, 80)}) ignored, as setOverride here would refuse it: ${problem}; the declared limits of '${name}' apply`,
        );
      }
      warned.set(name, text);
    }
    this.warned = warned;
    this.replace(next);
  }

  private replace(next: Map<string, LimitOverride>): void {
    const same = next.size === this.table.size && [...next].every(([name, o]) => sameOverride(this.table.get(name), o));
    if (same) return;
    this.table.clear();
    for (const [name, override] of next) this.table.set(name, override);
    this.changed();
  }
}

/** A stored override as read: its text, and the override it holds (undefined: it holds none). */
interface Stored {
  text: string;
  override: LimitOverride | undefined;
}

const sameOverride = (a: LimitOverride | undefined, b: LimitOverride): boolean => a !== undefined && a.limit === b.limit && a.windowMs === b.windowMs;

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
      `override of '${name}' (${encodeOverride(override)}) ignored for the requests it cannot apply to: ${refusal.message}; those keep the declared policy`,
    );
  }
  return undefined;
}
