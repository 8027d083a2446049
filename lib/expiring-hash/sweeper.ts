import { Logger } from '@nestjs/common';
import { RedisLimitError } from '../errors.js';
import type { RedisConnection } from '../redis/redis-connection.js';
import type { ExpiringHashKeys } from './expiring-hash.keys.js';

/** Hashes one claim leases from a registry shard. */
const CLAIM_BATCH = 100;
/** Fields one sweep call may look at: about 5 µs each, so a call stays near a millisecond. */
export const SWEEP_BUDGET = 250;
/** Sweep calls one shard has in flight: a pass must not queue thousands of calls ahead of the
 * application's own commands. */
const SWEEPS_IN_FLIGHT = 8;
/** A sweeper that dies (or times out) holding a lease delays those hashes by this much, no more. */
export const LEASE_MS = 10_000;

/**
 * Removes expired fields nobody reads. Every instance runs one; they share the work through the
 * registry (sharded sorted sets of "user key -> next due time"): a claim leases due hashes
 * atomically, so no two sweepers work on one hash at once and none is special. Each hash is
 * swept by one bounded script call; a hash with more due fields than the budget is re-listed as
 * due at once.
 */
export class ExpiringHashSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private started = false;
  private stopped = false;
  private readonly logger = new Logger('ExpiringHashSweeper');

  constructor(
    private readonly redis: RedisConnection,
    private readonly keys: ExpiringHashKeys,
    private readonly intervalMs: number,
  ) {}

  /** Starts sweeping (idempotent); a no-op when the interval is 0 or after stop(). */
  start(): void {
    if (this.started || this.stopped || this.intervalMs === 0) return;
    this.started = true;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One pass over every shard; resolves whether work was left over. */
  async sweepOnce(): Promise<boolean> {
    const shards = Array.from({ length: this.keys.shards }, (_, shard) => this.sweepShard(shard));
    return (await Promise.all(shards)).some(Boolean);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.sweepOnce().then(
        (more) => {
          this.redis.reportSuccess();
          this.schedule(more ? 0 : this.intervalMs);
        },
        (error: unknown) => {
          if (this.stopped) return; // the connection closes under a pass at shutdown
          if (error instanceof RedisLimitError) this.redis.reportFailure(error);
          else this.logger.error(`sweep failed: ${(error as Error).message}`);
          this.schedule(this.intervalMs);
        },
      );
    }, delayMs);
    // the sweeper never keeps a process alive on its own
    this.timer.unref();
  }

  private async sweepShard(shard: number): Promise<boolean> {
    const registry = this.keys.registry(shard);
    const scripts = this.redis.scripts;
    const [lease, ...claimed] = (await scripts.run('registryClaim', [registry], ['', CLAIM_BATCH, LEASE_MS])) as string[];
    if (claimed.length === 0) return false;
    const results: number[][] = [];
    for (let i = 0; i < claimed.length; i += SWEEPS_IN_FLIGHT) {
      const batch = claimed.slice(i, i + SWEEPS_IN_FLIGHT);
      results.push(...(await Promise.all(batch.map((key) => scripts.run('hashSweep', this.keys.hash(key), ['', SWEEP_BUDGET]) as Promise<number[]>))));
    }
    const pairs = claimed.flatMap((key, i) => [key, results[i]![0]!]);
    await scripts.run('registryRelease', [registry], [lease!, ...pairs]);
    return claimed.length === CLAIM_BATCH || results.some(([, more]) => more === 1);
  }
}
