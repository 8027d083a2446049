import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { CountedOutcome } from './counted-requests.js';
import type { RedisLimitCounters, RedisLimitEvent, RedisLimitListener, ShadowVerdict } from './events.js';
import { assertMetricPrefix, PROMETHEUS_PREFIX, prometheusText } from './prometheus.js';
import { describeValue } from '../validation.js';

interface Emitter {
  emit(event: string, payload: unknown): unknown;
}

type QueueCounts = RedisLimitCounters['queues'][string];

/**
 * Where the module reports what it does: counters, always (cheap enough for every request), and
 * events for listeners registered with `on()` and for `@nestjs/event-emitter`'s EventEmitter2 when
 * the app has one. Payloads are built only when someone listens. A listener that throws is
 * logged once and never breaks the request or the consumer that emitted. Inject it; see
 * docs/events-and-metrics.md.
 * @example
 * ```ts
 * @Controller('metrics')
 * export class MetricsController {
 *   constructor(private readonly events: RedisLimitEvents) {}
 *
 *   @Get()
 *   @Header('Content-Type', 'text/plain; version=0.0.4')
 *   metrics(): string {
 *     return this.events.prometheus();
 *   }
 * }
 * ```
 */
@Injectable()
export class RedisLimitEvents implements OnApplicationBootstrap {
  private readonly listeners = new Set<RedisLimitListener>();
  private readonly failed = new WeakSet<RedisLimitListener>();
  private emitter: Emitter | undefined;
  private readonly logger = new Logger('RedisLimitEvents');
  /** queue → rate key → its latest halving seen here (adaptiveLimit). */
  private readonly adaptive = new Map<string, Map<string, AdaptiveHalving>>();
  private readonly counts: RedisLimitCounters = {
    decisions: { allowed: 0, refused: 0, shadowRefused: 0 },
    outcomes: { refundedPermits: 0, penalizedPermits: 0, blocks: 0 },
    failMode: { open: 0, closed: 0, local: 0 },
    localDecisions: { allowed: 0, refused: 0 },
    outages: 0,
    redisUp: 1,
    maxPendingRefused: 0,
    concurrencySlots: { taken: 0, refused: 0 },
    shadowRefused: 0,
    refusalCacheHits: 0,
    queues: {},
    queueSizes: {},
    adaptiveLimits: {},
  };

  constructor(@Inject(DiscoveryService) private readonly discovery: DiscoveryService) {}

  /** `@nestjs/event-emitter`, if the app imported EventEmitterModule (found, not imported by us). */
  onApplicationBootstrap(): void {
    for (const wrapper of this.discovery.getProviders()) {
      // duck-typed: its class is not ours to import, and its name differs between versions
      const instance = wrapper.instance as { emit?: unknown; emitAsync?: unknown; onAny?: unknown } | undefined;
      if (typeof instance?.emit === 'function' && typeof instance.emitAsync === 'function' && typeof instance.onAny === 'function') {
        this.emitter = instance as Emitter;
        return;
      }
    }
  }

  /**
   * Calls `listener` with every event, synchronously where it happens (keep it quick).
   * @returns the function that stops it
   * @throws TypeError when `listener` is not a function.
   * @example
   * ```ts
   * const off = events.on((event) => {
   *   if (event.type === 'redis-limit.decision' && !event.allowed) logger.warn(`refused ${event.route ?? ''}`);
   * });
   * ```
   */
  on(listener: RedisLimitListener): () => void {
    if (typeof listener !== 'function') throw new TypeError(`listener must be a function (event) => void, got ${describeValue(listener)}`);
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  /** A copy of the counters since start-up (monotonic, but `redisUp` and `queueSizes` gauges). */
  counters(): RedisLimitCounters {
    return structuredClone(this.withAdaptiveLimits());
  }

  /**
   * The counters in Prometheus' text format, for an app's `/metrics` route.
   * @param prefix - the metric names' prefix (default 'nest_redis_limit')
   * @throws TypeError when `prefix` is not a Prometheus metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
   */
  prometheus(prefix = PROMETHEUS_PREFIX): string {
    assertMetricPrefix(prefix);
    return prometheusText(this.withAdaptiveLimits(), prefix);
  }

  /** True when an event would reach anyone: emitters build payloads only then. */
  get listened(): boolean {
    return this.listeners.size > 0 || this.emitter !== undefined;
  }

  decision(outcome: 'allowed' | 'refused' | 'shadow-refused', build: () => RedisLimitEvent): void {
    this.counts.decisions[outcome === 'shadow-refused' ? 'shadowRefused' : outcome] += 1;
    if (this.listened) this.emit(build());
  }

  refund(permits: number, build: () => RedisLimitEvent): void {
    this.counts.outcomes.refundedPermits += permits;
    if (this.listened) this.emit(build());
  }

  penalize(permits: number, build: () => RedisLimitEvent): void {
    this.counts.outcomes.penalizedPermits += permits;
    if (this.listened) this.emit(build());
  }

  block(build: () => RedisLimitEvent): void {
    this.counts.outcomes.blocks += 1;
    if (this.listened) this.emit(build());
  }

  failMode(route: string, failMode: 'open' | 'closed' | 'local', error: Error): void {
    this.counts.failMode[failMode] += 1;
    if (this.listened) this.emit({ type: 'redis-limit.fail-mode', route, failMode, error });
  }

  localDecision(allowed: boolean, build: () => RedisLimitEvent): void {
    this.counts.localDecisions[allowed ? 'allowed' : 'refused'] += 1;
    if (this.listened) this.emit(build());
  }

  redisDown(error: Error): void {
    this.counts.outages += 1;
    this.counts.redisUp = 0;
    this.emit({ type: 'redis-limit.redis-down', error });
  }

  redisUp(): void {
    this.counts.redisUp = 1;
    this.emit({ type: 'redis-limit.redis-up' });
  }

  /** A concurrency slot taken (`refused` undefined), or refused (and then announced). */
  concurrencySlot(refused?: { route: string | undefined; name: string | undefined; key: string; limit: number; retryAfterMs: number }): void {
    if (refused === undefined) {
      this.counts.concurrencySlots.taken += 1;
      return;
    }
    this.counts.concurrencySlots.refused += 1;
    const { route, name, key, limit, retryAfterMs } = refused;
    if (this.listened) {
      this.emit({
        type: 'redis-limit.concurrency.refused',
        ...(route === undefined ? {} : { route }),
        ...(name === undefined ? {} : { name }),
        key,
        limit,
        retryAfterMs,
      });
    }
  }

  maxPendingRefused(route: string, owner: string, max: number, counted: CountedOutcome | undefined): void {
    this.counts.maxPendingRefused += 1;
    if (this.listened) this.emit({ type: 'redis-limit.max-pending.refused', route, owner, max, ...(counted === undefined ? {} : { counted }) });
  }

  override(name: string, override: { limit: number; windowMs: number; expiresAt?: number } | null, key: string | undefined): void {
    this.emit({ type: 'redis-limit.override', name, override, ...(key === undefined ? {} : { key }) });
  }

  refusalCacheHit(): void {
    this.counts.refusalCacheHits += 1;
  }

  shadowRefused(route: string, retryAfterMs: number, limits: () => ShadowVerdict[]): void {
    this.counts.shadowRefused += 1;
    if (this.listened) this.emit({ type: 'redis-limit.shadow-refused', route, retryAfterMs, limits: limits() });
  }

  /** Queue events: counted per queue under the event's last word. */
  queue(event: Extract<RedisLimitEvent, { queue: string }>): void {
    const counts = (this.counts.queues[event.queue] ??= {
      enqueued: 0,
      delivered: 0,
      handled: 0,
      retried: 0,
      retriedLater: 0,
      waited: 0,
      unacknowledged: 0,
      ticksMissed: 0,
      dead: 0,
      unrecoverable: 0,
      deadRetried: 0,
      deadPurged: 0,
    });
    counts[QUEUE_COUNTER[event.type]] += 'count' in event ? event.count : 1;
    if (event.type === 'redis-limit.queue.dead' && event.unrecoverable) counts.unrecoverable += 1;
    if (this.listened) this.emit(event);
  }

  /** A key's adaptive limit was halved to `halved` (retry-later.lua): the gauge follows it back up,
   * a window at a time, as adaptive.lua counts it, until it is `limit` again. */
  adaptiveLimit(queue: string, key: string, { halved, limit, windowMs }: { halved: number; limit: number; windowMs: number }): void {
    let keys = this.adaptive.get(queue);
    if (keys === undefined) this.adaptive.set(queue, (keys = new Map<string, AdaptiveHalving>()));
    keys.delete(key);
    keys.set(key, { halved, limit, windowMs, at: Date.now() });
    // bounded in cardinality: a key not halved for longest goes first
    if (keys.size > ADAPTIVE_GAUGE_KEYS) keys.delete(keys.keys().next().value!);
  }

  /** The counters with the adaptive limits as they stand now; keys whole again are dropped. */
  private withAdaptiveLimits(): RedisLimitCounters {
    const now = Date.now();
    const limits: RedisLimitCounters['adaptiveLimits'] = {};
    for (const [queue, keys] of this.adaptive) {
      for (const [key, { halved, limit, windowMs, at }] of keys) {
        const current = Math.min(limit, halved + Math.floor((now - at) / windowMs));
        if (current >= limit) keys.delete(key);
        else (limits[queue] ??= {})[key] = current;
      }
      if (keys.size === 0) this.adaptive.delete(queue);
    }
    this.counts.adaptiveLimits = limits;
    return this.counts;
  }

  /** A queue's sizes as just read: the gauge `prometheus()` reports. */
  queueSize(queue: string, size: RedisLimitCounters['queueSizes'][string]): void {
    this.counts.queueSizes[queue] = { ...size };
  }

  private emit(event: RedisLimitEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (error) {
        if (this.failed.has(listener)) continue;
        this.failed.add(listener);
        this.logger.error(`a listener threw on ${event.type} (logged once per listener): ${(error as Error).message}`);
      }
    }
    try {
      this.emitter?.emit(event.type, event);
    } catch (error) {
      this.logger.error(`EventEmitter2 threw on ${event.type}: ${(error as Error).message}`);
    }
  }
}

/** A rate key's latest halving seen here: the adaptive limit it set, when, and the configured policy. */
interface AdaptiveHalving {
  halved: number;
  limit: number;
  windowMs: number;
  at: number;
}

/** Rate keys a queue's adaptive-limit gauge holds at most (per process). */
export const ADAPTIVE_GAUGE_KEYS = 100;

const QUEUE_COUNTER: Record<Extract<RedisLimitEvent, { queue: string }>['type'], keyof QueueCounts> = {
  'redis-limit.queue.enqueued': 'enqueued',
  'redis-limit.queue.delivered': 'delivered',
  'redis-limit.queue.handled': 'handled',
  'redis-limit.queue.retry': 'retried',
  'redis-limit.queue.retry-later': 'retriedLater',
  'redis-limit.queue.waiting': 'waited',
  'redis-limit.queue.unacknowledged': 'unacknowledged',
  'redis-limit.queue.ticks-missed': 'ticksMissed',
  'redis-limit.queue.dead': 'dead',
  'redis-limit.queue.dead-retried': 'deadRetried',
  'redis-limit.queue.dead-purged': 'deadPurged',
};
