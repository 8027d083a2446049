import { Inject, Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { DelayQueueService } from '../delay-queue/delay-queue.service.js';
import { RedisLimitError } from '../errors.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { HashReply } from '../redis/replies.js';
import type { Reply, ScriptName } from '../redis/scripts.js';
import { assertField, assertHashKey, assertSetOptions, assertTtl, assertValue, ttlOutOfRange } from './expiring-hash.input.js';
import { ExpiringHashKeys } from './expiring-hash.keys.js';
import type { ExpiringEntry, ExpiringSetOptions, ExpiryMode, SetIfBelowResult, SlotReservation } from './expiring-hash.types.js';
import { detectExpiryMode, detectHsetex } from './expiry-mode.js';
import { LegacyTimers } from './legacy-timers.js';
import { ExpiryNotifier } from './notifier.js';
import { ExpiringHashSweeper } from './sweeper.js';
import { assertPositiveInteger } from '../validation.js';

/** A registration ahead of a write lists the hash this much after the field's expiry as the
 * registry's clock reads it: the write's own clock reads a little later, and a sweep that came
 * before the expiry would only have to come again. */
const AHEAD_SLACK_MS = 20;

/** How this process writes, as the write scripts take it (see writePath). */
interface WritePath {
  /** The mode of hashes it creates: 'n' native, 'i' index. */
  mode: 'n' | 'i';
  /** '1': native field expiry is written with the value in one HSETEX; '0': HSET then HPEXPIREAT. */
  hsetex: '1' | '0';
}

/**
 * A hash whose every field has its own ttl. Each method is one atomic script on the hash's slot;
 * a field is never returned once expired, and a background sweep (shared by every instance)
 * removes expired fields nobody reads. Its keys and layout: docs/how-it-works.md.
 */
@Injectable()
export class ExpiringHashService implements BeforeApplicationShutdown {
  private readonly keys: ExpiringHashKeys;
  private readonly sweeper: ExpiringHashSweeper;
  private readonly legacyTimers: LegacyTimers | undefined;
  private knownMode: ExpiryMode | undefined;
  private knownPath: Promise<WritePath> | undefined;

  constructor(
    @Inject(RedisConnection) private readonly redis: RedisConnection,
    @Inject(DelayQueueService) queues: DelayQueueService,
  ) {
    const { sweepShards, sweepIntervalMs } = redis.options.expiringHash;
    this.keys = new ExpiringHashKeys(redis.keys, sweepShards);
    this.sweeper = new ExpiringHashSweeper(redis, this.keys, new ExpiryNotifier(redis, this.keys, queues), sweepIntervalMs);
    // a process that does not sweep delivers no notification, 0.1's included
    if (sweepIntervalMs > 0) this.legacyTimers = new LegacyTimers(queues, redis, sweepShards, (key, at) => this.registry(key, [at, '', '0']));
  }

  /** Sets `field` to `value`, expiring after `ttlMs` (none: never); replaces value and ttl. */
  async set(key: string, field: string, value: string, ttlMs?: number, opts?: ExpiringSetOptions): Promise<void> {
    assertHashKey(key);
    assertField(field);
    assertValue(value);
    if (ttlMs !== undefined) assertTtl(ttlMs);
    assertSetOptions(opts, ttlMs);
    await this.write(key, field, value, ttlMs ?? HashReply.NO_TTL, 0, opts?.notify);
  }

  /** The value of a live field, or null. */
  async get(key: string, field: string): Promise<string | null> {
    const [value] = await this.read(key, field);
    return value;
  }

  /** ms left before `field` expires; -1 when it never does; -2 when absent or expired. */
  async ttl(key: string, field: string): Promise<number> {
    const [, ttlMs] = await this.read(key, field);
    return ttlMs;
  }

  async getAll(key: string): Promise<Record<string, string>> {
    const all = Object.create(null) as Record<string, string>;
    for (const { field, value } of await this.entries(key)) all[field] = value;
    return all;
  }

  /** Every live field with its value and ms left (-1: no ttl). */
  async entries(key: string): Promise<ExpiringEntry[]> {
    assertHashKey(key);
    const flat = (await this.run('hashEntries', key, [])) as (string | number)[];
    const entries: ExpiringEntry[] = [];
    for (let i = 0; i < flat.length; i += 3) {
      entries.push({ field: String(flat[i]), value: String(flat[i + 1]), ttlMs: Number(flat[i + 2]) });
    }
    return entries;
  }

  /** Deletes fields; resolves how many of them were live. */
  async delete(key: string, ...fields: string[]): Promise<number> {
    assertHashKey(key);
    fields.forEach((field, i) => assertField(field, `fields[${i}]`));
    if (fields.length === 0) return 0;
    return Number(await this.run('hashDelete', key, fields));
  }

  /** Live fields only: expired ones are never counted, whatever the sweeper has done. */
  async count(key: string): Promise<number> {
    assertHashKey(key);
    return Number(await this.run('hashCount', key, []));
  }

  /** Gives a live field a new ttl; false when it is absent or expired. */
  async expire(key: string, field: string, ttlMs: number): Promise<boolean> {
    assertHashKey(key);
    assertField(field);
    assertTtl(ttlMs);
    const [done, register, notifyAt] = (await this.run('hashExpire', key, [field, ttlMs])) as number[];
    if (done === HashReply.OUT_OF_RANGE) throw ttlOutOfRange(ttlMs);
    this.register(key, register!);
    // a notification moved earlier: a lost registration only delays it to its old time
    this.register(key, notifyAt!);
    return done === HashReply.CHANGED;
  }

  /** Replaces a live field's value and keeps its ttl; false when it is absent or expired. */
  async update(key: string, field: string, value: string): Promise<boolean> {
    assertHashKey(key);
    assertField(field);
    assertValue(value);
    const { hsetex } = await this.writePath();
    return (await this.run('hashUpdate', key, [field, value, hsetex])) === HashReply.CHANGED;
  }

  /**
   * Removes expired fields, then sets `field` only if fewer than `max` live fields remain (a
   * live `field` is always re-set). Atomic: concurrent callers can never exceed `max`.
   */
  async setIfBelow(...args: Parameters<ExpiringHashService['reserve']>): Promise<SetIfBelowResult> {
    const { accepted, count } = await this.reserve(...args);
    return { accepted, count };
  }

  /** setIfBelow, plus when capacity frees up: what a guard's 429 and headers need. */
  async reserve(key: string, field: string, value: string, ttlMs: number, max: number, opts?: ExpiringSetOptions): Promise<SlotReservation> {
    assertHashKey(key);
    assertField(field);
    assertValue(value);
    assertTtl(ttlMs);
    assertPositiveInteger(max, 'max');
    assertSetOptions(opts, ttlMs);
    const [accepted, count, oldestMs, newestMs] = await this.write(key, field, value, ttlMs, max, opts?.notify);
    const written = accepted === HashReply.ACCEPTED;
    return { accepted: written, count: count!, retryAfterMs: written ? 0 : oldestMs!, resetMs: newestMs! };
  }

  /** The mode this process gives new hashes (existing hashes keep the one they were made with). */
  async mode(): Promise<ExpiryMode> {
    // until known, asked again on each call: hasCommand keeps the answer, not a failure
    this.knownMode ??= await this.redis.scripts.bounded(
      detectExpiryMode((command) => this.redis.hasCommand(command), this.redis.options.expiringHash.mode),
      'COMMAND INFO',
    );
    return this.knownMode;
  }

  /**
   * How this process writes: the mode it gives new hashes, and whether native field expiry goes
   * with the value in one HSETEX. Both asked before the first write (concurrent first writes share
   * the question), so no write script meets a command the server lacks or the ACL refuses.
   */
  private writePath(): Promise<WritePath> {
    return (this.knownPath ??= this.askWritePath());
  }

  /** Forgets its answer when it failed, or when a cluster listed no master yet: asked again then. */
  private async askWritePath(): Promise<WritePath> {
    try {
      const native = (await this.mode()) === 'native';
      const hsetex = native && (await detectHsetex(() => this.redis.askEveryMaster('hashHsetexProbe', [this.keys.hash('hsetex-probe')[0]])));
      if (hsetex === undefined) this.knownPath = undefined;
      return { mode: native ? 'n' : 'i', hsetex: hsetex ? '1' : '0' };
    } catch (error) {
      this.knownPath = undefined;
      throw error;
    }
  }

  /** Before the connection closes: a sweep pass in flight finishes first. */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([this.legacyTimers?.stop(), this.sweeper.stop()]);
  }

  private async write(key: string, field: string, value: string, ttlMs: number, max: number, notify = ''): Promise<number[]> {
    const path = await this.writePath();
    // the notification is armed by the write script itself, in the hash's slot; the sweep registry
    // (another slot) learns of the hash first, so a write that succeeded is always swept and
    // notified, whatever process dies when
    if (notify !== '') await this.registerAhead(key, ttlMs);
    const reply = (await this.run('hashSet', key, [path.mode, field, value, ttlMs, max, notify, path.hsetex])) as number[];
    if (reply[0] === HashReply.OUT_OF_RANGE) throw ttlOutOfRange(ttlMs);
    this.register(key, reply[4]!);
    return reply;
  }

  private async read(key: string, field: string): Promise<[string | null, number]> {
    assertHashKey(key);
    assertField(field);
    const [value, ttlMs] = (await this.run('hashGet', key, [field])) as [string | null, number];
    return [value, ttlMs];
  }

  /**
   * Tells the sweep registry (another slot, hence another call) when this hash next has work.
   * Sent without waiting: the write has happened, the caller need not pay a second round trip,
   * and a lost registration only delays memory the hash's own key expiry still bounds.
   */
  private register(key: string, at: number): void {
    if (at === HashReply.NOTHING_DUE) return;
    this.registry(key, [at, '', '0']).catch((error: unknown) => {
      if (error instanceof RedisLimitError) this.redis.reportFailure(error);
    });
  }

  /** Lists the hash as due when a field written now with `ttlMs` expires (server clock), before the
   * write: a sweep in between looks once more (registry.lua), so none can forget it. */
  private async registerAhead(key: string, ttlMs: number): Promise<void> {
    await this.registry(key, ['', ttlMs + AHEAD_SLACK_MS, '1']);
  }

  private async registry(key: string, args: (string | number)[]): Promise<void> {
    const shard = this.keys.shardOf(key);
    const publish = await this.sweeper.publishCommand();
    await this.redis.scripts.run('registryAdd', [this.keys.registry(shard)], ['', key, ...args, this.keys.wakeChannel(shard), publish]);
  }

  private run(script: ScriptName, key: string, args: (string | number)[]): Promise<Reply> {
    this.sweeper.start();
    this.legacyTimers?.start();
    return this.redis.scripts.run(script, this.keys.hash(key), ['', ...args]);
  }
}
