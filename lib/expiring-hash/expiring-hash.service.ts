import { Inject, Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { DelayQueueService } from '../delay-queue/delay-queue.service.js';
import { RedisLimitError } from '../errors.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { HashReply } from '../redis/replies.js';
import type { ScriptCall, ScriptReply, ScriptRunner } from '../redis/scripts.js';
import { assertField, assertHashKey, assertSetOptions, assertTtl, assertValue, ttlOutOfRange } from './expiring-hash.input.js';
import { ExpiringHashKeys } from './expiring-hash.keys.js';
import { EXPIRING_HASH_OPTIONS, type ExpiringHashOptions } from './expiring-hash.options.js';
import type { ExpiringEntry, ExpiringSetOptions, ExpiryMode, SetIfBelowResult, SlotReservation } from './expiring-hash.types.js';
import { LegacyTimers } from './legacy-timers.js';
import { ExpiryNotifier } from './notifier.js';
import { ExpiringHashSweeper } from './sweeper.js';
import { WritePaths, type WritePath } from './write-path.js';
import { assertPositiveInteger } from '../validation.js';

/** A registration ahead of a write lists the hash this much after the field's expiry as the
 * registry's clock reads it: the write's own clock reads a little later, and a sweep that came
 * before the expiry would only have to come again. (None on a clock that stands still: a test
 * that moves it by a ttl expects the notification.) */
const AHEAD_SLACK_MS = 20;

/**
 * A hash whose every field has its own ttl. Each method is one atomic script on the hash's slot;
 * a field is never returned once expired, and a background sweep (shared by every instance)
 * removes expired fields nobody reads. Its keys and layout: docs/how-it-works.md.
 * Keys, fields and values may be any user input (well-formed Unicode). Methods reject only on bad
 * input (TypeError / RangeError naming the argument, before Redis is asked) or when Redis fails
 * (RedisLimitError). See docs/expiring-hash.md.
 * @example
 * ```ts
 * @Injectable()
 * export class Carts {
 *   constructor(private readonly hash: ExpiringHashService) {}
 *
 *   async add(cartId: string, sku: string, qty: number): Promise<void> {
 *     await this.hash.set(`cart:${cartId}`, sku, JSON.stringify({ qty }), 3_600_000); // an hour
 *   }
 *
 *   async items(cartId: string): Promise<Record<string, string>> {
 *     return this.hash.getAll(`cart:${cartId}`); // live fields only
 *   }
 * }
 * ```
 */
@Injectable()
export class ExpiringHashService implements BeforeApplicationShutdown {
  private readonly keys: ExpiringHashKeys;
  private readonly sweeper: ExpiringHashSweeper;
  private readonly legacyTimers: LegacyTimers | undefined;
  private readonly paths: WritePaths;

  constructor(
    @Inject(RedisConnection) private readonly redis: RedisConnection,
    @Inject(DelayQueueService) queues: DelayQueueService,
    @Inject(EXPIRING_HASH_OPTIONS) options: Required<ExpiringHashOptions>,
  ) {
    const { sweepShards, sweepIntervalMs, mode } = options;
    this.keys = new ExpiringHashKeys(redis.keys, sweepShards);
    this.paths = new WritePaths(redis, mode, this.keys.hash('hsetex-probe').hash);
    const notifier = new ExpiryNotifier(redis, this.keys, queues);
    this.sweeper = new ExpiringHashSweeper(redis, this.keys, notifier, sweepIntervalMs);
    // a process that does not sweep delivers no notification, 0.1's included
    if (sweepIntervalMs > 0) this.legacyTimers = new LegacyTimers(queues, redis, sweepShards, (key, at) => this.registry(key, { at, hold: '0' }));
  }

  /**
   * Sets `field` to `value`, expiring after `ttlMs` (Redis server clock); without `ttlMs` it never
   * expires. Re-setting a live field replaces its value, its ttl and its notification (none unless
   * this call gives `notify`).
   * @param key - the hash: any non-empty, well-formed string
   * @param field - a non-empty, well-formed string of at most 65,535 bytes (UTF-8)
   * @param value - a string, stored byte for byte (serialize anything else yourself); '' is a value
   * @param ttlMs - ms the field lives: a positive integer (default: never expires)
   * @param opts - `notify`: a DelayQueue queue that receives `{ key, field, value }` when the field
   * expires, neither deleted nor re-set first (needs `ttlMs`)
   * @throws TypeError `key` when not a non-empty string or with a lone surrogate; TypeError `field` when not a non-empty string or with a lone surrogate, RangeError over
   * 65,535 bytes (UTF-8);
   * TypeError `value` when not a string or with a lone surrogate.
   * @throws TypeError / RangeError `ttlMs` when not a positive integer; RangeError when now + ttlMs
   * passes 2^46 − 1 ms since the epoch (about the year 4199, the latest expiry Redis keeps).
   * @throws TypeError `opts` when not an object; TypeError `opts.notify` when not a non-empty
   * well-formed string or given without `ttlMs`, RangeError over 1,024 bytes.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * await hash.set('cart:42', 'sku-1', '{"qty":2}', 60_000); // lives 60 s
   * await hash.set('session:42', 'token', token, 1_800_000, { notify: 'session-expired' });
   * ```
   */
  async set(key: string, field: string, value: string, ttlMs?: number, opts?: ExpiringSetOptions): Promise<void> {
    assertHashKey(key);
    assertField(field);
    assertValue(value);
    if (ttlMs !== undefined) assertTtl(ttlMs);
    assertSetOptions(opts, ttlMs);
    await this.write(key, field, value, ttlMs ?? HashReply.NO_TTL, 0, opts?.notify);
  }

  /**
   * The value of a live field; null when absent or expired (an expired field is never returned,
   * swept or not).
   * @throws TypeError `key` when not a non-empty string or with a lone surrogate; TypeError `field` when not a non-empty string or with a lone surrogate, RangeError over
   * 65,535 bytes (UTF-8).
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async get(key: string, field: string): Promise<string | null> {
    const [value] = await this.read(key, field);
    return value;
  }

  /**
   * ms left before `field` expires.
   * @returns ms left; -1 when the field never expires; -2 when it is absent or expired
   * @throws TypeError `key` when not a non-empty string or with a lone surrogate; TypeError `field` when not a non-empty string or with a lone surrogate, RangeError over
   * 65,535 bytes (UTF-8).
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async ttl(key: string, field: string): Promise<number> {
    const [, ttlMs] = await this.read(key, field);
    return ttlMs;
  }

  /**
   * Every live field with its value (an object without a prototype: a field named `__proto__` is
   * a field like any other).
   * @throws TypeError `key` when not a non-empty string or with a lone surrogate.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async getAll(key: string): Promise<Record<string, string>> {
    const all = Object.create(null) as Record<string, string>;
    for (const { field, value } of await this.entries(key)) all[field] = value;
    return all;
  }

  /**
   * Every live field with its value and ms left (-1: no ttl).
   * @throws TypeError `key` when not a non-empty string or with a lone surrogate.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async entries(key: string): Promise<ExpiringEntry[]> {
    assertHashKey(key);
    const { entries } = await this.runner().call('hashEntries', { keys: this.keys.hash(key), args: {} });
    return [...entries];
  }

  /**
   * Deletes fields (and any notification armed for them); no field: nothing is asked.
   * @returns how many of them were live
   * @throws TypeError `key` when not a non-empty string or with a lone surrogate; TypeError / RangeError `fields[i]` as a `field`.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * const paid = (await hash.delete(`unpaid-orders:${userId}`, orderId)) === 1;
   * ```
   */
  async delete(key: string, ...fields: string[]): Promise<number> {
    assertHashKey(key);
    fields.forEach((field, i) => assertField(field, `fields[${i}]`));
    if (fields.length === 0) return 0;
    return this.runner().call('hashDelete', { keys: this.keys.hash(key), args: { fields } });
  }

  /**
   * How many fields are live: expired ones are never counted, whatever the sweeper has done.
   * @throws TypeError `key` when not a non-empty string or with a lone surrogate.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async count(key: string): Promise<number> {
    assertHashKey(key);
    return this.runner().call('hashCount', { keys: this.keys.hash(key), args: {} });
  }

  /**
   * Gives a live field a new ttl from now (its value stays; a notification moves with it).
   * @param ttlMs - ms the field lives from now: a positive integer (required)
   * @returns true when the field was live; false when it is absent or expired
   * @throws TypeError `key` when not a non-empty string or with a lone surrogate; TypeError `field` when not a non-empty string or with a lone surrogate, RangeError over
   * 65,535 bytes (UTF-8);
   * TypeError / RangeError `ttlMs` as `set` (a missing one included).
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   */
  async expire(key: string, field: string, ttlMs: number): Promise<boolean> {
    assertHashKey(key);
    assertField(field);
    assertTtl(ttlMs);
    const { verdict, registerAt, notifyAt } = await this.runner().call('hashExpire', { keys: this.keys.hash(key), args: { field, ttlMs } });
    if (verdict === HashReply.OUT_OF_RANGE) throw ttlOutOfRange(ttlMs);
    this.register(key, registerAt);
    // a notification moved earlier: a lost registration only delays it to its old time
    this.register(key, notifyAt);
    return verdict === HashReply.CHANGED;
  }

  /**
   * Replaces a live field's value and keeps its ttl (and any notification, which then carries the
   * new value).
   * @returns true when the field was live; false when it is absent or expired (nothing written)
   * @throws TypeError `key` when not a non-empty string or with a lone surrogate; TypeError `field` when not a non-empty string or with a lone surrogate, RangeError over
   * 65,535 bytes (UTF-8);
   * TypeError `value` when not a string or with a lone surrogate.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * await hash.update(`unpaid-orders:${userId}`, orderId, JSON.stringify(order)); // keeps the slot's ttl
   * ```
   */
  async update(key: string, field: string, value: string): Promise<boolean> {
    assertHashKey(key);
    assertField(field);
    assertValue(value);
    const update = ({ hsetex }: WritePath) => this.runner().call('hashUpdate', { keys: this.keys.hash(key), args: { field, value, hsetex } });
    return (await this.paths.write('hashUpdate', update, (verdict) => verdict)) === HashReply.CHANGED;
  }

  /**
   * Removes expired fields, then sets `field` only if fewer than `max` live fields remain (a
   * live `field` is always re-set, replacing its value and ttl). Atomic: concurrent callers can
   * never exceed `max`. A refusal writes nothing.
   * @param ttlMs - ms the field lives: a positive integer (required)
   * @param max - live fields the hash may hold: a positive integer
   * @param opts - `notify`, as `set`
   * @returns `accepted` and `count`, the live fields after the call
   * @throws as `set` (`ttlMs` required); TypeError / RangeError `max` when not a positive integer.
   * @throws RedisUnavailableError, RedisTimeoutError (no answer within `commandTimeoutMs`) or
   * RedisScriptError when Redis fails; all are RedisLimitErrors with a `code`.
   * @example
   * ```ts
   * // at most 3 unpaid orders per user, each for 30 minutes
   * const { accepted, count } = await hash.setIfBelow(`unpaid:${userId}`, orderId, JSON.stringify(order), 1_800_000, 3);
   * if (!accepted) console.log(`${count} unpaid orders already`);
   * ```
   */
  async setIfBelow(...args: Parameters<ExpiringHashService['reserve']>): Promise<SetIfBelowResult> {
    const { accepted, count } = await this.reserve(...args);
    return { accepted, count };
  }

  /** setIfBelow, plus when capacity frees up: what a guard's 429 and headers need.
   * @throws as `setIfBelow`. */
  async reserve(key: string, field: string, value: string, ttlMs: number, max: number, opts?: ExpiringSetOptions): Promise<SlotReservation> {
    assertHashKey(key);
    assertField(field);
    assertValue(value);
    assertTtl(ttlMs);
    assertPositiveInteger(max, 'max');
    assertSetOptions(opts, ttlMs);
    const { verdict, count, oldestMs, newestMs } = await this.write(key, field, value, ttlMs, max, opts?.notify);
    const written = verdict === HashReply.ACCEPTED;
    return { accepted: written, count, retryAfterMs: written ? 0 : oldestMs, resetMs: newestMs };
  }

  /** The mode this process gives new hashes (existing hashes keep the one they were made with):
   * the module option `expiringHash.mode`, with 'auto' resolved by asking the server once, and again
   * when a write finds the server has lost native field expiry (a failover, a downgrade).
   * @throws RedisUnavailableError or RedisTimeoutError (a RedisLimitError) while the server cannot
   * be asked; asked again on the next call. */
  mode(): Promise<ExpiryMode> {
    return this.paths.mode();
  }

  /** Before the connection closes: a sweep pass in flight finishes first. */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([this.legacyTimers?.stop(), this.sweeper.stop()]);
  }

  private async write(key: string, field: string, value: string, ttlMs: number, cap: number, notify = ''): Promise<ScriptReply<'hashSet'>> {
    // the notification is armed by the write script itself, in the hash's slot; the sweep registry
    // (another slot) learns of the hash first, so a write that succeeded is always swept and
    // notified, whatever process dies when
    if (notify !== '') await this.registerAhead(key, ttlMs);
    const set = ({ mode, hsetex }: WritePath) =>
      this.runner().call('hashSet', { keys: this.keys.hash(key), args: { mode, field, value, ttlMs, cap, notify, hsetex } });
    const reply = await this.paths.write('hashSet', set, ({ verdict }) => verdict);
    if (reply.verdict === HashReply.OUT_OF_RANGE) throw ttlOutOfRange(ttlMs);
    this.register(key, reply.registerAt);
    return reply;
  }

  private async read(key: string, field: string): Promise<[string | null, number]> {
    assertHashKey(key);
    assertField(field);
    const { value, ttlMs } = await this.runner().call('hashGet', { keys: this.keys.hash(key), args: { field } });
    return [value, ttlMs];
  }

  /**
   * Tells the sweep registry (another slot, hence another call) when this hash next has work.
   * Sent without waiting: the write has happened, the caller need not pay a second round trip,
   * and a lost registration only delays memory the hash's own key expiry still bounds.
   */
  private register(key: string, at: number): void {
    if (at === HashReply.NOTHING_DUE) return;
    this.registry(key, { at, hold: '0' }).catch((error: unknown) => {
      if (error instanceof RedisLimitError) this.redis.reportFailure(error);
    });
  }

  /** Lists the hash as due when a field written now with `ttlMs` expires (server clock), before the
   * write: a sweep in between looks once more (registry.lua), so none can forget it. */
  private async registerAhead(key: string, ttlMs: number): Promise<void> {
    await this.registry(key, { aheadMs: ttlMs + (this.redis.clock.standsStill ? 0 : AHEAD_SLACK_MS), hold: '1' });
  }

  /** Registers `key` with its shard of the sweep registry, due as `when` says. */
  private async registry(key: string, when: Pick<ScriptCall<'registryAdd'>['args'], 'at' | 'aheadMs' | 'hold'>): Promise<void> {
    const shard = this.keys.shardOf(key);
    const publish = await this.sweeper.publishCommand();
    const args = { member: key, ...when, wakeChannel: this.keys.wakeChannel(shard), publish, buckets: this.keys.registryBuckets(shard) };
    await this.redis.scripts.call('registryAdd', { keys: { index: this.keys.registry(shard) }, args });
  }

  /** The script runner, once what every hash call starts (the sweeper, 0.1's timers) runs. */
  private runner(): ScriptRunner {
    this.sweeper.start();
    this.legacyTimers?.start();
    return this.redis.scripts;
  }
}
