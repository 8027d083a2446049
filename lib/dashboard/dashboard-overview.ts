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
}

/** What the dashboard page shows besides dead messages and the chart: one JSON answer. */
export interface DashboardOverview {
  readOnly: boolean;
  redis: RedisHealth;
  queues: (QueueSize & { queue: string })[];
  /** This app instance's counters since it started (every instance keeps its own). */
  counters: Pick<RedisLimitCounters, 'decisions' | 'refusalCacheHits' | 'failMode' | 'localDecisions' | 'outages' | 'redisUp'>;
  limits: NamedLimitView[];
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
    const [redis, queues, overrides] = await Promise.all([redisHealth(this.redis), this.queues(), this.limiter.overrides()]);
    const { decisions, refusalCacheHits, failMode, localDecisions, outages, redisUp } = this.events.counters();
    const declared = this.limiter.namedLimits();
    // an override stored by another app on this Redis is shown too: it is in Redis, if not in force here
    const names = [...new Set([...Object.keys(declared), ...Object.keys(overrides)])];
    return {
      readOnly: this.options.readOnly,
      redis,
      queues,
      counters: { decisions, refusalCacheHits, failMode, localDecisions, outages, redisUp },
      limits: names.map((name) => ({ name, declared: declared[name] ?? [], override: overrides[name] ?? null })),
    };
  }

  private async queues(): Promise<DashboardOverview['queues']> {
    const names = (await this.queue.queues()).sort();
    return Promise.all(names.map(async (queue) => ({ queue, ...(await this.queue.size(queue)) })));
  }
}
