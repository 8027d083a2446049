import { Inject, Injectable, Logger, type BeforeApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { LimitVerdict, RedisLimitEvent } from '../observability/events.js';
import { RedisLimitEvents } from '../observability/redis-limit-events.js';
import { RedisConnection } from '../redis/redis-connection.js';

const MINUTE_MS = 60_000;
/** The chart's span: the last hour, minute by minute. */
export const SERIES_MINUTES = 60;
const FLUSH_MS = 5_000;
// a few minutes past the hour, so the oldest minute shown is whole whatever the clock skew
const KEY_TTL_MS = (SERIES_MINUTES + 5) * MINUTE_MS;
// what one flush may add to a minute's hash: routes are finite, but scopes of direct service calls need not be
const MAX_LABELS = 200;
const OTHER = '(other)';

export interface RouteSeries {
  route: string;
  /** One count per minute, oldest first, aligned with `DecisionSeriesPage.minutes`. */
  allowed: number[];
  refused: number[];
  /** Requests shadow limits alone refused (they went on): not refusals, not plain grants. */
  shadowRefused: number[];
}

export interface DecisionSeriesPage {
  /** The start (ms since the epoch) of each minute of the last hour, oldest first. */
  minutes: number[];
  routes: RouteSeries[];
  /** Why the hour could not be read from Redis (`routes` is then empty). */
  unread?: string;
}

interface Count {
  allowed: number;
  refused: number;
  shadowRefused: number;
}
type Counts = Map<string, Count>;
/** Each count's field prefix in a minute's hash. */
const FIELDS = { allowed: 'a:', refused: 'r:', shadowRefused: 's:' } as const;
const SERIES = Object.fromEntries(Object.entries(FIELDS).map(([series, prefix]) => [prefix, series])) as Record<string, keyof typeof FIELDS>;

/**
 * Rate-limit decisions per route (the guard's `Class.method`) and minute, kept in Redis so every app instance adds to one
 * picture. Decisions are counted in process memory as they are made and written every few
 * seconds in one pipelined call: one HINCRBY per route and minute seen, never a command per
 * request. Each minute is a hash that expires a little after the hour it is shown for; all of
 * them share one hash tag, so the pipeline and the hour's read go to one cluster node.
 */
@Injectable()
export class DecisionSeries implements OnModuleInit, BeforeApplicationShutdown {
  private pending = new Map<number, Counts>();
  private stopListening: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private failedOnce = false;
  private readonly logger = new Logger('RedisLimitDashboard');

  constructor(
    @Inject(RedisConnection) private readonly redis: RedisConnection,
    @Inject(RedisLimitEvents) private readonly events: RedisLimitEvents,
  ) {}

  onModuleInit(): void {
    this.stopListening = this.events.on((event) => this.record(event));
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  /** The last counts go out before any module's shutdown hook: the connection is still open. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopListening?.();
    clearInterval(this.timer);
    await this.flush();
  }

  /** Counts a rate-limit decision, or a `@MaxPending` refusal: a refusal of its route, and no
   * longer the grant its rate limits counted, so each request is counted once. */
  record(event: RedisLimitEvent, now = Date.now()): void {
    if (event.type === 'redis-limit.decision') {
      this.count(now, event.route ?? scopeLabel(event.limits), event.shadowRefused ? 'shadowRefused' : event.allowed ? 'allowed' : 'refused');
    } else if (event.type === 'redis-limit.max-pending.refused') {
      const count = this.count(now, event.route, 'refused');
      // below 0 when the grant was counted the minute before: lastHour shows no minute below 0
      if (event.counted !== undefined) count[event.counted === 'shadow-refused' ? 'shadowRefused' : 'allowed'] -= 1;
    }
  }

  private count(now: number, route: string, series: keyof typeof FIELDS): Count {
    const minute = now - (now % MINUTE_MS);
    let counts = this.pending.get(minute);
    if (counts === undefined) this.pending.set(minute, (counts = new Map() as Counts));
    const label = !counts.has(route) && counts.size >= MAX_LABELS ? OTHER : route;
    let count = counts.get(label);
    if (count === undefined) counts.set(label, (count = { allowed: 0, refused: 0, shadowRefused: 0 }));
    count[series] += 1;
    return count;
  }

  /** Writes what was counted since the last flush (a failed write is dropped, logged once: the
   * chart is a picture, not an audit). Flushes run one at a time. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    if (this.pending.size === 0) return;
    const pending = this.pending;
    this.pending = new Map();
    const pipeline = this.redis.client.pipeline();
    for (const [minute, counts] of pending) {
      const key = this.key(minute);
      for (const [label, count] of counts) {
        for (const series of ['allowed', 'refused', 'shadowRefused'] as const) {
          if (count[series] !== 0) pipeline.hincrby(key, `${FIELDS[series]}${label}`, count[series]);
        }
      }
      pipeline.pexpire(key, KEY_TTL_MS);
    }
    try {
      const results = (await pipeline.exec()) ?? [];
      const failed = results.find(([error]) => error !== null)?.[0];
      if (failed) throw failed;
    } catch (error) {
      if (this.failedOnce) return;
      this.failedOnce = true;
      this.logger.warn(`could not write the decisions chart to Redis (logged once): ${(error as Error).message}`);
    }
  }

  /** The last hour, every instance's decisions together, routes by most decisions first; no
   * routes and `unread` when Redis cannot be read. */
  async lastHour(now = Date.now()): Promise<DecisionSeriesPage> {
    const current = now - (now % MINUTE_MS);
    const minutes = Array.from({ length: SERIES_MINUTES }, (_, i) => current - (SERIES_MINUTES - 1 - i) * MINUTE_MS);
    const pipeline = this.redis.client.pipeline();
    for (const minute of minutes) pipeline.hgetall(this.key(minute));
    let hashes: Record<string, string>[];
    try {
      hashes = ((await pipeline.exec()) ?? []).map(([error, hash]) => {
        if (error) throw error;
        return hash as Record<string, string>;
      });
    } catch (error) {
      return { minutes, routes: [], unread: (error as Error).message };
    }
    const routes = new Map<string, RouteSeries>();
    hashes.forEach((hash, i) => {
      for (const [field, value] of Object.entries(hash)) {
        const route = field.slice(2);
        let series = routes.get(route);
        const minutes = () => new Array<number>(SERIES_MINUTES).fill(0);
        if (series === undefined) routes.set(route, (series = { route, allowed: minutes(), refused: minutes(), shadowRefused: minutes() }));
        series[SERIES[field.slice(0, 2)] ?? 'allowed'][i]! += Number(value);
      }
    });
    // a @MaxPending refusal takes its grant back in its own minute, which need not be the grant's
    for (const series of routes.values()) [series.allowed, series.shadowRefused].forEach(noneBelowZero);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const total = (s: RouteSeries) => sum(s.allowed) + sum(s.refused) + sum(s.shadowRefused);
    return { minutes, routes: [...routes.values()].sort((a, b) => total(b) - total(a) || a.route.localeCompare(b.route)) };
  }

  private key(minute: number): string {
    return this.redis.keys.build('dashboard-decisions', 'dashboard', String(minute));
  }
}

function noneBelowZero(counts: number[]): void {
  counts.forEach((n, i) => (counts[i] = Math.max(0, n)));
}

/**
 * Where a decision the guard did not make belongs (a direct RateLimiterService call, a queue's
 * rate limit): under the first limit's scope, a shared name or a route, else '(direct calls)'.
 */
export function scopeLabel(limits: readonly LimitVerdict[]): string {
  const scope = limits.find((limit) => limit.scope !== undefined)?.scope;
  return scope === undefined ? '(direct calls)' : `scope: ${scope}`;
}
