import { Logger } from '@nestjs/common';
import { WakeUps, type WakeUpListener } from '../delay-queue/wake-ups.js';
import { RedisLimitError } from '../errors.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import { HashReply } from '../redis/replies.js';
import type { ExpiringHashRegistryReleaseHash } from '../redis/script-bindings.generated.js';
import type { ExpiringHashKeys } from './expiring-hash.keys.js';
import { HANDOVER_LEASE_MS, type ExpiryNotifier } from './notifier.js';

/** Hashes one claim leases from a registry shard. */
const CLAIM_BATCH = 100;
/** Fields one sweep call may look at: about 5 µs each, so a call stays near a millisecond. */
export const SWEEP_BUDGET = 250;
/** Sweep calls one shard has in flight: a pass must not queue thousands of calls ahead of the
 * application's own commands. */
const SWEEPS_IN_FLIGHT = 8;
/** A sweeper that dies (or times out) holding a lease delays those hashes by this much, no more. */
export const LEASE_MS = 10_000;
/** A hash registered by a write that may still land after a sweep found nothing there is looked
 * at once more this much later (far above any command's time in flight). */
export const RECHECK_MS = 10_000;
/** With nothing due, each shard is looked at again after 60 to 90 s anyway (spread, so the shards
 * do not come due together): a wake-up lost without a reconnect costs at most that delay. It is
 * the whole idle cost: 16 shards, one call per 4.5 s on average. */
const IDLE_CHECK_MS = 60_000;
/** After a Redis failure, try the shard again after this long. */
const RETRY_MS = 1000;

/** Registry wake-ups: the DelayQueue's channel machinery, one channel per registry shard. */
class RegistryWakeUps extends WakeUps {
  constructor(
    redis: RedisConnection,
    listener: WakeUpListener,
    private readonly hashKeys: ExpiringHashKeys,
  ) {
    super(redis, listener);
  }

  override channel(shard: string): string {
    return this.hashKeys.wakeChannel(Number(shard));
  }
}

/**
 * Removes expired fields nobody reads and delivers expiry notifications. Every instance runs one
 * loop; they share the work through the registry (per shard, small sorted sets of "user key ->
 * next due time", a few per ten seconds of due times, and an index of when each needs a look): a
 * claim leases due hashes atomically, so no two sweepers work on one hash at once and none is
 * special. The loop sleeps until the earliest due time the registry reported for each
 * shard, and a registration earlier than a shard's earliest wakes it (pub/sub), so an idle
 * process costs Redis next to nothing. Each hash is swept by one bounded script call; a hash with
 * more due work than the budget is re-listed as due at once.
 */
export class ExpiringHashSweeper implements WakeUpListener {
  private readonly wakeUps: RegistryWakeUps;
  /** Per shard: the server time (ms) it next has work; 0: look at once. */
  private readonly dueAt: number[];
  /** Per shard: the local time of its last look (passes of one shard are `gapMs` apart). */
  private readonly lookedAt: number[];
  private readonly busy = new Set<number>();
  private readonly passes = new Set<Promise<void>>();
  /** server clock − local clock, in ms, from the last claim. */
  private offsetMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private started = false;
  /** Subscribed to every shard's wake-ups: looks before that could miss a registration. */
  private listening = false;
  private stopped = false;
  private readonly logger = new Logger('ExpiringHashSweeper');

  private readonly stopClock: () => void;

  constructor(
    private readonly redis: RedisConnection,
    private readonly keys: ExpiringHashKeys,
    private readonly notifier: ExpiryNotifier,
    private readonly gapMs: number,
  ) {
    this.wakeUps = new RegistryWakeUps(redis, this, keys);
    this.dueAt = new Array<number>(keys.shards).fill(0);
    this.lookedAt = new Array<number>(keys.shards).fill(-Infinity);
    // a test clock's jump may have made fields expire: look at once
    this.stopClock = redis.clock.onAdvance(() => {
      clearTimeout(this.timer);
      this.timerAt = Infinity;
      if (this.listening && !this.stopped) this.wake();
    });
  }

  /** The channel command registrations publish with. */
  publishCommand(): ReturnType<WakeUps['publishCommand']> {
    return this.wakeUps.publishCommand();
  }

  /** Starts sweeping (idempotent); a no-op when the gap is 0 or after stop(). Every shard is
   * looked at once its wake-ups are heard. */
  start(): void {
    if (this.started || this.stopped || this.gapMs === 0) return;
    this.started = true;
    const shards = Array.from({ length: this.keys.shards }, (_, shard) => this.wakeUps.listen(String(shard)));
    void Promise.all(shards).then(() => {
      this.listening = true;
      this.plan();
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopClock();
    clearTimeout(this.timer);
    this.wakeUps.close();
    await Promise.all(this.passes);
  }

  hint(shard: string, at: number): void {
    const k = Number(shard);
    if (at < this.dueAt[k]!) {
      this.dueAt[k] = at;
      this.plan();
    }
  }

  resync(): void {
    this.dueAt.fill(0);
    this.plan();
  }

  /** Sets the timer for the first shard that comes due (in local time). */
  private plan(): void {
    if (this.stopped || !this.listening) return;
    let wakeAt = Infinity;
    for (let k = 0; k < this.dueAt.length; k++) {
      if (!this.busy.has(k)) wakeAt = Math.min(wakeAt, this.localDue(k));
    }
    // on a clock that stands still, a later time comes only with a move, which wakes us
    if (this.redis.clock.standsStill && wakeAt > this.redis.clock.now()) wakeAt = Infinity;
    if (wakeAt >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = wakeAt;
    if (wakeAt === Infinity) return;
    this.timer = setTimeout(() => this.wake(), Math.max(0, wakeAt - this.redis.clock.now()));
    // the sweeper never keeps a process alive on its own
    this.timer.unref();
  }

  private localDue(shard: number): number {
    // the gap batches what comes due while time passes; on a clock that stands still (a test
    // moves it) nothing comes due between two moves, and a move past a field's expiry must reach it
    const gap = this.redis.clock.standsStill ? 0 : this.gapMs;
    return Math.max(this.dueAt[shard]! - this.offsetMs, this.lookedAt[shard]! + gap);
  }

  private wake(): void {
    this.timerAt = Infinity;
    const now = this.redis.clock.now();
    for (let k = 0; k < this.dueAt.length; k++) {
      if (!this.busy.has(k) && this.localDue(k) <= now) this.look(k);
    }
    this.plan();
  }

  private look(shard: number): void {
    this.busy.add(shard);
    this.dueAt[shard] = Infinity; // wake-ups heard meanwhile lower it
    this.lookedAt[shard] = this.redis.clock.now();
    const pass = this.sweepShard(shard).then(
      (next) => {
        this.redis.reportSuccess();
        const now = this.redis.clock.now() + this.offsetMs;
        const idle = now + IDLE_CHECK_MS * (1 + Math.random() / 2);
        this.dueAt[shard] = Math.min(this.dueAt[shard]!, next === HashReply.NOTHING_DUE ? idle : Math.min(next, idle));
        // work left over (a backlog) goes on at once; the gap only batches what comes due later
        if (next !== HashReply.NOTHING_DUE && next <= now) this.lookedAt[shard] = -Infinity;
      },
      (error: unknown) => {
        if (this.stopped) return; // the connection closes under a pass at shutdown
        if (error instanceof RedisLimitError) this.redis.reportFailure(error);
        else this.logger.error(`sweep failed: ${(error as Error).message}`);
        this.dueAt[shard] = Math.min(this.dueAt[shard]!, this.redis.clock.now() + this.offsetMs + RETRY_MS);
      },
    );
    const tracked = pass.finally(() => {
      this.passes.delete(tracked);
      this.busy.delete(shard);
      this.plan();
    });
    this.passes.add(tracked);
  }

  /** Claims a shard's due hashes, sweeps them, releases them; resolves when the shard next has work
   * (server ms, -1: nothing listed). */
  private async sweepShard(shard: number): Promise<number> {
    const keys = { index: this.keys.registry(shard), legacy: this.keys.legacyRegistry(shard) };
    const buckets = this.keys.registryBuckets(shard);
    const scripts = this.redis.scripts;
    const { lease, now, next: rest, hashes } = await scripts.call('registryClaim', { keys, args: { count: CLAIM_BATCH, leaseMs: LEASE_MS, buckets } });
    this.offsetMs = now - this.redis.clock.now();
    if (hashes.length === 0) return rest;
    const swept: ExpiringHashRegistryReleaseHash[] = [];
    let more = hashes.length === CLAIM_BATCH;
    for (let i = 0; i < hashes.length; i += SWEEPS_IN_FLIGHT) {
      await Promise.all(
        hashes.slice(i, i + SWEEPS_IN_FLIGHT).map(({ key, bucket, held }) =>
          this.sweepHash(key).then(([next, left]) => {
            if (left) more = true;
            swept.push({ key, bucket, next, held });
          }),
        ),
      );
    }
    const next = await scripts.call('registryRelease', { keys, args: { lease, recheckMs: RECHECK_MS, buckets, hashes: swept } });
    return more ? now : next;
  }

  /** Sweeps one hash and delivers its due notifications; resolves when it next has work, and
   * whether work was left over. */
  private async sweepHash(key: string): Promise<[number, boolean]> {
    const args = { budget: SWEEP_BUDGET, handoverMs: HANDOVER_LEASE_MS };
    const { next, left, notices } = await this.redis.scripts.call('hashSweep', { keys: this.keys.hash(key), args });
    if (notices.length === 0) return [next, left === HashReply.BUDGET_SPENT];
    try {
      await this.notifier.deliver(key, notices);
    } catch (error) {
      // still armed: try again soon (the registry must not forget the hash); the handover's
      // lease makes that sweep come back once more, when the lease is over
      if (error instanceof RedisLimitError) this.redis.reportFailure(error);
      else this.logger.error(`expiry notification failed: ${(error as Error).message}`);
      return [this.redis.clock.now() + this.offsetMs + RETRY_MS, false];
    }
    return [next, left === HashReply.BUDGET_SPENT];
  }
}
