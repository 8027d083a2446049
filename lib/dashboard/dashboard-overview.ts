import { Inject, Injectable } from '@nestjs/common';
import { DelayQueueService } from '../delay-queue/delay-queue.service.js';
import type { QueueSize } from '../delay-queue/delay-queue.types.js';
import type { RedisLimitCounters } from '../observability/events.js';
import { RedisLimitEvents } from '../observability/redis-limit-events.js';
import type { NamedLimit } from '../rate-limit/overrides-declared.js';
import type { AppliedOverride } from '../rate-limit/overrides-policy.js';
import { RateLimiterService } from '../rate-limit/rate-limiter.service.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { DASHBOARD_OPTIONS, type ResolvedDashboardOptions } from './dashboard.options.js';
import { redisHealth, type RedisHealth } from './redis-health.js';

export interface NamedLimitView {
  name: string;
  /** Where each limit of the name is declared, and its policy there. */
  declared: NamedLimit[];
  /** In force in every instance, or null. */
  override: AppliedOverride | null;
  /** Per-key overrides of the name, each beating `override` for its key. */
  keyed: (AppliedOverride & { key: string })[];
}

/** What the dashboard page shows besides dead messages and the chart: one JSON answer, whole
 * even while Redis is down (what could not be read is empty and named in `unread`). */
export interface DashboardOverview {
  readOnly: boolean;
  redis: RedisHealth;
  queues: (QueueSize & { queue: string })[];
  /** This app instance's counters since it started (every instance keeps its own). */
  counters: Pick<
    RedisLimitCounters,
    'decisions' | 'refusalCacheHits' | 'failMode' | 'localDecisions' | 'outages' | 'redisUp' | 'maxPendingRefused' | 'concurrencySlots' | 'adaptiveLimits'
  > & {
    /** Summed over this instance's queues: RetryLater thrown, messages dead by Unrecoverable, and
     * messages that waited for a slot of concurrencyPerKey. */
    queueOutcomes: { retriedLater: number; unrecoverable: number; waited: number };
  };
  /** Declared in this app; overrides as stored in Redis. */
  limits: NamedLimitView[];
  /** Why a part read from Redis is missing: the queues, or the overrides (limits then show their
   * declarations only). */
  unread: { queues?: string; overrides?: string };
}

@Injectable()
export class DashboardOverviewReader {
  constructor(
    @Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions,
    @Inject(RedisConnection) private readonly redis: RedisConnection,
    @Inject(RedisLimitEvents) private readonly events: RedisLimitEvents,
    @Inject(DelayQueueService) private readonly queue: DelayQueueService,
    @Inject(RateLimiterService) private readonly limiter: RateLimiterService,
  ) {}

  async read(): Promise<DashboardOverview> {
    // each part on its own: an operator opens this in an incident, when Redis may be the incident
    const [redis, queues, overrides] = await Promise.all([redisHealth(this.redis), captured(this.queues()), captured(this.limiter.overrides())]);
    const {
      decisions,
      refusalCacheHits,
      failMode,
      localDecisions,
      outages,
      redisUp,
      maxPendingRefused,
      concurrencySlots,
      adaptiveLimits,
      queues: counted,
    } = this.events.counters();
    const queueOutcomes = { retriedLater: 0, unrecoverable: 0, waited: 0 };
    for (const counts of Object.values(counted)) {
      queueOutcomes.retriedLater += counts.retriedLater;
      queueOutcomes.unrecoverable += counts.unrecoverable;
      queueOutcomes.waited += counts.waited;
    }
    const declared = this.limiter.namedLimits();
    const stored = new Map<string, AppliedOverride>();
    const keyed = new Map<string, (AppliedOverride & { key: string })[]>();
    for (const [entry, override] of Object.entries(overrides.value ?? {})) {
      if (override.key === undefined) stored.set(entry, override);
      else {
        const { name, ...rest } = override;
        keyed.set(name!, [...(keyed.get(name!) ?? []), rest as AppliedOverride & { key: string }]);
      }
    }
    // an override stored by another app on this Redis is shown too: it is in Redis, if not in force here
    const names = [...new Set([...Object.keys(declared), ...stored.keys(), ...keyed.keys()])];
    return {
      readOnly: this.options.readOnly,
      redis,
      queues: queues.value ?? [],
      counters: { decisions, refusalCacheHits, failMode, localDecisions, outages, redisUp, maxPendingRefused, concurrencySlots, queueOutcomes, adaptiveLimits },
      limits: names.map((name) => ({ name, declared: declared[name] ?? [], override: stored.get(name) ?? null, keyed: keyed.get(name) ?? [] })),
      unread: { ...(queues.error === undefined ? {} : { queues: queues.error }), ...(overrides.error === undefined ? {} : { overrides: overrides.error }) },
    };
  }

  private async queues(): Promise<DashboardOverview['queues']> {
    const names = (await this.queue.queues()).sort();
    return Promise.all(names.map(async (queue) => ({ queue, ...(await this.queue.size(queue)) })));
  }
}

/** A read's value, or why it failed. */
async function captured<T>(read: Promise<T>): Promise<{ value?: T; error?: string }> {
  try {
    return { value: await read };
  } catch (error) {
    return { error: (error as Error).message };
  }
}
