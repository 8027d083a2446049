import { Logger } from '@nestjs/common';
import { ChannelSubscription } from '../redis/channel-subscription.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import { DeclaredNames } from './overrides-declared.js';
import { decodeOverride, encodeOverride, type AppliedOverride, type LimitOverride } from './overrides-policy.js';

/** While pub/sub is down, how often the overrides are read again (ms). */
export const OVERRIDE_POLL_MS = 1000;

/**
 * Runtime limit overrides: one Redis hash (name → override) under the key prefix, which every
 * process reads at start-up and keeps in `table`, and reads again when a change is announced on
 * the overrides channel, or every OVERRIDE_POLL_MS while it is not subscribed (a change announced
 * then would be missed; on a Redis Cluster always, see `listen`). The subscription is opened only
 * by an app whose limits carry names.
 */
export class Overrides {
  /** name → the override in force here. Read by every request of a named limit; replaced in place. */
  readonly table = new Map<string, LimitOverride>();
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
  private readonly malformed = new Set<string>();

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

  /** A named limit compiled: after start-up (a route met late) that may be the first. */
  declare(...args: Parameters<DeclaredNames['add']>): void {
    this.declared.add(...args);
    if (this.started) void this.listen();
  }

  /** Stores `override` (null: removes it), announces it, and applies it here before resolving. */
  async set(name: string, override: LimitOverride | null): Promise<void> {
    const { client, scripts } = this.redis;
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

  /** Reads the stored overrides and puts them in force here. */
  private async read(): Promise<Map<string, LimitOverride>> {
    const read = ++this.reads;
    const stored = await this.redis.scripts.bounded(this.redis.client.hgetall(this.key), 'HGETALL');
    const next = new Map<string, LimitOverride>();
    for (const [name, text] of Object.entries(stored)) {
      const override = decodeOverride(text);
      if (override !== undefined) next.set(name, override);
      else this.warnMalformed(name, text);
    }
    if (read > this.lastApplied) {
      this.lastApplied = read;
      this.replace(next);
    }
    return next;
  }

  private replace(next: Map<string, LimitOverride>): void {
    const same = next.size === this.table.size && [...next].every(([name, o]) => sameOverride(this.table.get(name), o));
    if (same) return;
    this.table.clear();
    for (const [name, override] of next) this.table.set(name, override);
    this.changed();
  }

  private warnMalformed(name: string, text: string): void {
    const id = `${name}\n${text}`;
    if (this.malformed.has(id)) return;
    this.malformed.add(id);
    this.logger.warn(`override of '${name}' is not { limit, windowMs? } (${text.slice(0, 80)}): ignored`);
  }
}

const sameOverride = (a: LimitOverride | undefined, b: LimitOverride): boolean => a !== undefined && a.limit === b.limit && a.windowMs === b.windowMs;
