import { Logger } from '@nestjs/common';
import { RedisTimeoutError, RedisUnavailableError } from '../../errors.js';
import type { ClientAccess, ScriptAccess } from '../../redis/redis-connection.js';
import { counterKind } from '../policy.js';
import type { OwedCharge, OwedGrants } from './local-owed.js';

/** Charges sent at once: a hand-over of many counters never floods the connection. */
const HAND_OVER_BATCH = 64;
/** The waits before retrying a hand-over that did not reach Redis: doubled from the first to the last. */
const RETRY_FIRST_MS = 1000;
const RETRY_LAST_MS = 8000;

/**
 * failMode 'local' handing back to Redis: once Redis answers again, each counter this process
 * granted on while it could not is charged with what is still inside its window (penalize.lua:
 * charged even past the limit), so the window that spans the outage's end holds those grants in
 * Redis too. Runs beside the requests, never in their way: once per recovery (its first charges
 * go out before anything sent after the recovery was noticed), and once more for what was granted
 * locally while it ran. Charges that did not reach Redis are owed again and retried (1 s, then
 * doubling up to 8 s, for as long as their windows are open); a charge Redis answers with an error
 * is dropped with a warning.
 */
export class LocalHandOver {
  private readonly logger = new Logger('RedisLimit');
  private running = false;
  private again = false;
  /** The wait before the next retry; 0 while the last hand-over reached Redis. */
  private retryMs = 0;
  private retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly redis: ClientAccess & ScriptAccess,
    private readonly owed: OwedGrants,
  ) {}

  /** Hands over everything owed now; its first charges are sent before this returns. */
  start(): void {
    clearTimeout(this.retry);
    this.retry = undefined;
    if (this.running) {
      this.again = true;
      return;
    }
    // an app shut down has ended its client: what it owed goes with it
    if (this.owed.size === 0 || this.redis.client.status === 'end') return;
    this.running = true;
    this.run()
      .catch((error: unknown) => this.logger.error(`Handing local grants over to Redis failed: ${String(error)}`))
      .finally(() => (this.running = false));
  }

  private async run(): Promise<void> {
    do {
      this.again = false;
      const failure = await this.send(this.owed.take(Date.now()));
      if (failure !== undefined) return this.retryLater(failure);
    } while (this.again && this.owed.size > 0);
    this.retryMs = 0;
  }

  private retryLater(failure: Error): void {
    if (this.owed.size === 0 || this.redis.client.status === 'end') return;
    if (this.retryMs === 0) this.logger.warn(`Could not charge Redis with the permits granted locally, retrying: ${failure.message}`);
    this.retryMs = Math.min(RETRY_LAST_MS, Math.max(RETRY_FIRST_MS, this.retryMs * 2));
    this.retry = setTimeout(() => this.start(), this.retryMs).unref();
  }

  /**
   * Sends `charges` a batch at a time; returns the failure that stopped it, when a charge did not
   * reach Redis (then it and every charge not sent yet are owed again).
   */
  private async send(charges: OwedCharge[]): Promise<Error | undefined> {
    let charged = 0;
    let dropped = 0;
    let reason = '';
    for (let i = 0; i < charges.length; i += HAND_OVER_BATCH) {
      const batch = charges.slice(i, i + HAND_OVER_BATCH);
      const settled = await Promise.allSettled(batch.map((charge) => this.charge(charge)));
      let failure: Error | undefined;
      settled.forEach((outcome, j) => {
        const { counter, permits } = batch[j]!;
        if (outcome.status === 'fulfilled') charged += permits;
        else if (outcome.reason instanceof RedisUnavailableError || outcome.reason instanceof RedisTimeoutError) {
          // a charge that timed out may still have been made: charged twice then, towards refusing
          failure ??= outcome.reason;
          this.owed.restore(counter, Date.now());
        } else {
          dropped += permits;
          reason = String(outcome.reason);
        }
      });
      if (failure !== undefined) {
        for (const { counter } of charges.slice(i + HAND_OVER_BATCH)) this.owed.restore(counter, Date.now());
        return failure;
      }
    }
    if (charged > 0) this.logger.log(`Charged Redis with ${charged} permits granted locally (failMode 'local') in windows still open`);
    if (dropped > 0) this.logger.warn(`Could not charge Redis with ${dropped} permits granted locally, dropped: ${reason}`);
    return undefined;
  }

  private async charge({ counter: { target, spec }, permits }: OwedCharge): Promise<unknown> {
    const redisKey = this.redis.keys.build(counterKind(spec), target.key, target.scope);
    return this.redis.scripts.call('rateLimitPenalize', { keys: { state: redisKey }, args: { ...spec, permits } });
  }
}
