import type { DelayQueueAckLease } from '../redis/script-bindings.generated.js';
import type { Lease } from './lease-renewer.js';

export interface AckBatcherDeps {
  /** Runs ack.lua on these messages, each named with the lease token of the claim that handled it. */
  send: (leases: readonly DelayQueueAckLease[]) => Promise<unknown>;
  /** The consumer's leases: an acknowledged one is released, one claimed again is acked again. */
  leases: { get(id: string): Lease | undefined; release(lease: Lease): void };
  logger: { warn(message: string): void };
  /** Handled messages whose acknowledgement is given up (their lease ran out, or the consumer
   * stopped): they will be delivered again. */
  unacknowledged: (leases: readonly Lease[]) => void;
  /** After a failed call, try again after this long (while the leases last). */
  retryMs: number;
}

/**
 * Acknowledges a consumer's handled messages: in one call per turn of the event loop, retried
 * while their leases last when a call fails, each recorded as the claim it is at reply time.
 */
export class AckBatcher {
  private acks: Lease[] = [];
  private retry: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;

  constructor(private readonly deps: AckBatcherDeps) {}

  /** Messages handled but not yet acknowledged. */
  get pending(): number {
    return this.acks.length;
  }

  ack(lease: Lease): void {
    this.acks.push(lease);
    if (this.acks.length === 1 && this.retry === undefined) setImmediate(() => void this.flush());
  }

  /** Sends what is pending, after the call under way (if any); resolves once it is settled. */
  async flush(): Promise<void> {
    await this.flushing;
    clearTimeout(this.retry);
    this.retry = undefined;
    if (this.acks.length === 0) return;
    const batch = this.acks;
    this.acks = [];
    // the claims as sent: a lease claimed again meanwhile has another token by the reply
    const sent = batch.map(({ id, token }) => ({ id, token }));
    this.flushing = this.deps.send(sent).then(
      () => this.acked(batch, sent),
      (error: unknown) => this.failed(batch, error as Error),
    );
    await this.flushing;
  }

  /** Retries no more (the connection is about to close); what is pending is delivered again. */
  stop(): void {
    clearTimeout(this.retry);
    if (this.acks.length === 0) return;
    this.deps.logger.warn(`stopped with ${this.acks.length} message(s) unacknowledged; they will be delivered again`);
    this.deps.unacknowledged(this.acks);
  }

  /** Acknowledged, or refused to a stale claim; one claimed again by this consumer meanwhile
   * (our claim ran before the ack) is acknowledged again, as the claim it now is. */
  private acked(batch: Lease[], sent: DelayQueueAckLease[]): void {
    const { leases } = this.deps;
    const again = batch.filter((lease, i) => lease.token !== sent[i]!.token && leases.get(lease.id) === lease);
    for (const lease of batch) if (!again.includes(lease)) leases.release(lease);
    again.forEach((lease) => this.ack(lease));
  }

  /**
   * A message handled but not acknowledged would be delivered again when its lease runs out, so
   * a failed ack (Redis paused, restarting, the connection killed) is retried while the lease
   * lasts. Past it, another consumer may hold the message, or a new one may have taken its id.
   */
  private failed(batch: Lease[], error: Error): void {
    const { leases, logger, retryMs } = this.deps;
    const now = Date.now();
    const live = batch.filter((a) => a.leasedUntil > now + retryMs);
    const given = batch.filter((a) => !live.includes(a));
    given.forEach((a) => leases.release(a));
    if (given.length > 0) {
      logger.warn(`could not acknowledge ${given.length} message(s) before their lease ran out (${error.message}); they will be delivered again`);
      this.deps.unacknowledged(given);
    }
    if (live.length === 0) return;
    this.acks.unshift(...live);
    this.retry ??= setTimeout(() => void this.flush(), retryMs).unref();
  }
}
