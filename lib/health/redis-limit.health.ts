import { Inject, Injectable } from '@nestjs/common';
import { DelayQueueService } from '../delay-queue/delay-queue.service.js';
import { assertName } from '../delay-queue/delay-queue.input.js';
import type { QueueSize } from '../delay-queue/delay-queue.types.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { settleWithin } from '../redis/scripts.js';
import { assertKnownOptions, assertTimerMs, describeValue, numberError } from '../validation.js';

/** When one queue counts as unhealthy. */
export interface QueueHealthThresholds {
  /** Down when its dead set holds more messages than this. */
  maxDead?: number;
  /** Down when more messages than this are overdue (see `overdueAfterMs`). */
  maxOverdue?: number;
  /** How long past its due time a message no consumer has claimed is overdue, in ms.
   * @default 60000 */
  overdueAfterMs?: number;
}

export interface RedisLimitHealthOptions {
  /** How long Redis has to answer, in ms, for the PING and the queues' sizes together.
   * @default 1000 */
  timeoutMs?: number;
  /** Queues to check, by name, each with its thresholds. */
  queues?: Record<string, QueueHealthThresholds>;
}

/** One check's figures, under the key it was asked with (terminus's HealthIndicatorResult). */
export interface RedisLimitHealthDetail {
  status: 'up' | 'down';
  /** The PING's round trip, in ms, when Redis answered. */
  pingMs?: number;
  /** Each queue asked about: its sizes (with `overdue`), and why it is down, if it is. */
  queues?: Record<string, QueueSize & { down?: string }>;
  /** Why the check is down. */
  message?: string;
}

export type RedisLimitHealthResult = Record<string, RedisLimitHealthDetail>;

const DEFAULT_TIMEOUT_MS = 1000;
const DEFAULT_OVERDUE_AFTER_MS = 60_000;

/**
 * A health indicator for `@nestjs/terminus`: Redis answers within a deadline, and each queue named
 * holds no more dead or overdue messages than its thresholds. It imports nothing of terminus: its
 * result has the shape terminus reads (`{ [key]: { status: 'up' | 'down', … } }`), and a failing
 * Redis is a `down` result, never a rejection. Bad options throw (a TypeError / RangeError).
 *
 * @example
 * ```ts
 * @Get('health')
 * @HealthCheck()
 * check() {
 *   return this.health.check([() => this.redisLimit.isHealthy('redis-limit', { queues: { emails: { maxDead: 100, maxOverdue: 1000 } } })]);
 * }
 * ```
 */
@Injectable()
export class RedisLimitHealthIndicator {
  constructor(
    @Inject(RedisConnection) private readonly redis: RedisConnection,
    @Inject(DelayQueueService) private readonly queues: DelayQueueService,
  ) {}

  /**
   * @param key - the name the result goes under in terminus's report (default 'redis-limit')
   * @throws TypeError `key` when not a non-empty string; TypeError `options` when not an object or
   * with another option; TypeError / RangeError `options.timeoutMs` when not a positive integer (ms)
   * or `options.queues.<name>.…` when not an integer >= 0; TypeError / RangeError for a bad queue
   * name, as `enqueue`.
   */
  async isHealthy(key = 'redis-limit', options: RedisLimitHealthOptions = {}): Promise<RedisLimitHealthResult> {
    const { timeoutMs, queues } = checkOptions(key, options);
    const deadline = performance.now() + timeoutMs;
    const within = <T>(pending: Promise<T>, what: string) =>
      settleWithin(
        pending,
        Math.max(0, deadline - performance.now()),
        () => new Error(`Redis did not answer ${what} within ${timeoutMs} ms`),
        (error) => (error instanceof Error ? error : new Error(String(error))),
      );
    const started = performance.now();
    try {
      await within(this.redis.client.ping(), 'PING');
    } catch (error) {
      // an error reply (an ACL without `ping`) is a server that answers
      if (!(error instanceof Error && error.name === 'ReplyError')) return { [key]: { status: 'down', message: (error as Error).message } };
    }
    const pingMs = Math.round((performance.now() - started) * 100) / 100;
    if (queues.length === 0) return { [key]: { status: 'up', pingMs } };
    let sizes: QueueSize[];
    try {
      sizes = await Promise.all(queues.map(([name, t]) => within(this.queues.size(name, { overdueAfterMs: t.overdueAfterMs }), `the size of queue ${name}`)));
    } catch (error) {
      return { [key]: { status: 'down', pingMs, message: (error as Error).message } };
    }
    const report: NonNullable<RedisLimitHealthDetail['queues']> = {};
    const down: string[] = [];
    queues.forEach(([name, t], i) => {
      const size = sizes[i]!;
      const why = [
        t.maxDead !== undefined && size.dead > t.maxDead ? `${size.dead} dead (more than ${t.maxDead})` : undefined,
        t.maxOverdue !== undefined && size.overdue! > t.maxOverdue
          ? `${size.overdue} overdue by ${t.overdueAfterMs} ms (more than ${t.maxOverdue})`
          : undefined,
      ].filter((reason): reason is string => reason !== undefined);
      report[name] = why.length === 0 ? size : { ...size, down: why.join(', ') };
      if (why.length > 0) down.push(`queue ${name}: ${why.join(', ')}`);
    });
    return down.length === 0
      ? { [key]: { status: 'up', pingMs, queues: report } }
      : { [key]: { status: 'down', pingMs, queues: report, message: down.join('; ') } };
  }
}

type CheckedQueue = [name: string, thresholds: QueueHealthThresholds & { overdueAfterMs: number }];

function checkOptions(key: unknown, options: unknown): { timeoutMs: number; queues: CheckedQueue[] } {
  if (typeof key !== 'string' || key.length === 0) throw new TypeError(`key must be a non-empty string, got ${describeValue(key)}`);
  if (typeof options !== 'object' || options === null) throw new TypeError(`options must be an object { timeoutMs?, queues? }, got ${describeValue(options)}`);
  assertKnownOptions(options, ['timeoutMs', 'queues'], 'options');
  const { timeoutMs = DEFAULT_TIMEOUT_MS, queues = {} } = options as RedisLimitHealthOptions;
  assertTimerMs(timeoutMs, 'a positive integer', 'options.timeoutMs');
  if (typeof queues !== 'object' || queues === null)
    throw new TypeError(`options.queues must be an object { [queue]: thresholds }, got ${describeValue(queues)}`);
  const checked = Object.entries(queues).map(([name, thresholds]): CheckedQueue => {
    assertName(name, 'options.queues: a queue name');
    const at = `options.queues.${name}`;
    if (typeof thresholds !== 'object' || thresholds === null)
      throw new TypeError(`${at} must be an object { maxDead?, maxOverdue?, overdueAfterMs? }, got ${describeValue(thresholds)}`);
    assertKnownOptions(thresholds, ['maxDead', 'maxOverdue', 'overdueAfterMs'], at);
    const { maxDead, maxOverdue, overdueAfterMs = DEFAULT_OVERDUE_AFTER_MS } = thresholds;
    for (const [field, value] of [
      ['maxDead', maxDead],
      ['maxOverdue', maxOverdue],
      ['overdueAfterMs', overdueAfterMs],
    ] as const) {
      if (value !== undefined && (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)) {
        throw new (numberError(value))(`${at}.${field} must be an integer >= 0, got ${describeValue(value)}`);
      }
    }
    return [name, { maxDead, maxOverdue, overdueAfterMs }];
  });
  return { timeoutMs, queues: checked };
}
