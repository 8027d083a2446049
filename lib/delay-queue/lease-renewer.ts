import type { Logger } from '@nestjs/common';
import { RedisLimitError } from '../errors.js';
import type { OutageReports, ScriptAccess } from '../redis/redis-connection.js';
import { MAX_TIMER_MS } from '../validation.js';
import type { QueueKeys } from './queue-keys.js';

/** A message a consumer holds, from its claim until its outcome is recorded. */
export interface Lease {
  readonly id: string;
  /** The claim that holds it (the message's claim count then): acks, failures and renewals name
   * it, and Redis refuses them once a later claim has counted another. */
  token: number;
  /** The attempt handlers see: claims less those that were no attempt (a rate limit deferred
   * the message, or its admission never came). */
  attempt: number;
  /** Local ms by which the lease surely runs out (from the last claim or renewal that set it). */
  leasedUntil: number;
  /** Set once its failure (or RetryLater) is being recorded: a claim of the message from then on
   * is a delivery of its own, not this lease's to record. */
  failing?: boolean;
}

export interface LeaseRenewerDeps {
  redis: ScriptAccess & OutageReports;
  keys: QueueKeys;
  visibilityTimeoutMs: number;
  logger: Logger;
  /** A lease Redis said this claim no longer holds, dropped. */
  lost: (lease: Lease) => void;
}

/**
 * Keeps the leases of one consumer's messages alive while it lives: every third of the visibility
 * timeout, one script call renews all it holds, so a handler slower than the timeout is never
 * handed to another consumer. Sleeps while it holds nothing. A lease Redis says this claim no
 * longer holds (a renewal came too late: the event loop was blocked, or Redis unreachable) is
 * dropped; its handler's outcome will be refused.
 */
export class LeaseRenewer {
  private readonly held = new Map<string, Lease>();
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly deps: LeaseRenewerDeps) {
    // a timer longer than MAX_TIMER_MS would fire at once, and renew in a loop
    this.intervalMs = Math.min(MAX_TIMER_MS, Math.max(1, Math.floor(deps.visibilityTimeoutMs / 3)));
  }

  /** The lease this consumer holds on `id`, if any. */
  get(id: string): Lease | undefined {
    return this.held.get(id);
  }

  /** This consumer holds `lease` now: it is renewed until released. */
  hold(lease: Lease): void {
    this.held.set(lease.id, lease);
    this.arm();
  }

  /** Stops renewing `lease` (its outcome is recorded, or given up). */
  release(lease: Lease): void {
    if (this.held.get(lease.id) === lease) this.held.delete(lease.id);
  }

  /** Renews nothing more: what is still held runs out and is delivered again. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** The next renewal, unless one is planned or under way (the timer is cleared after it). */
  private arm(): void {
    if (this.timer === undefined && !this.stopped && this.held.size > 0) this.timer = setTimeout(() => void this.renew(), this.intervalMs).unref();
  }

  private async renew(): Promise<void> {
    const { redis, keys, visibilityTimeoutMs, logger } = this.deps;
    const leases = [...this.held.values()];
    if (leases.length === 0) {
      this.timer = undefined;
      return;
    }
    // the claims as sent: one claimed again meanwhile has another token by the reply
    const sent = leases.map(({ id, token }) => ({ id, token }));
    const sentAt = Date.now();
    try {
      const { lost } = await redis.scripts.call('queueRenew', { keys, args: { visibilityMs: visibilityTimeoutMs, leases: sent } });
      const gone = new Set(lost);
      let dropped = 0;
      leases.forEach((lease, i) => {
        // released meanwhile (its outcome came first), or claimed again, which set its lease
        if (this.held.get(lease.id) !== lease || lease.token !== sent[i]!.token) return;
        if (gone.has(lease.id)) {
          this.held.delete(lease.id);
          dropped += 1;
          this.deps.lost(lease);
        } else {
          lease.leasedUntil = Math.max(lease.leasedUntil, sentAt + visibilityTimeoutMs);
        }
      });
      if (dropped > 0) logger.warn(`${dropped} message(s) were handed on before their lease could be renewed; their handlers' outcomes will be ignored`);
      redis.reportSuccess();
    } catch (error) {
      if (error instanceof RedisLimitError) redis.reportFailure(error);
      else logger.error(`lease renewal failed: ${(error as Error).message}`);
    } finally {
      this.timer = undefined;
      this.arm();
    }
  }
}
