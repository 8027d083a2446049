import type { RedisLimitCounters } from './events.js';
import { describeValue } from '../validation.js';

/** The metric names' prefix when none is given. */
export const PROMETHEUS_PREFIX = 'nest_redis_limit';

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

/** Throws a TypeError naming `prefix` unless it is a Prometheus metric name. */
export function assertMetricPrefix(prefix: unknown): asserts prefix is string {
  // a string first: the test would take null for 'null'
  if (typeof prefix !== 'string' || !METRIC_NAME.test(prefix)) {
    throw new TypeError(`prefix must be a Prometheus metric name (${METRIC_NAME.source.slice(1, -1)}), got ${describeValue(prefix)}`);
  }
}

/** One metric: its name (without prefix), type, help and samples, each a set of bounded labels
 * (no key, owner or id: outcomes, queue names, states) and a value. Prometheus and OpenTelemetry
 * (telemetry.ts) export the same families. */
export interface MetricFamily {
  name: string;
  type: 'counter' | 'gauge';
  help: string;
  samples: { labels: Record<string, string>; value: number }[];
}

/** The counters as metric families, in exposition order. */
export function metricFamilies(c: RedisLimitCounters): MetricFamily[] {
  const families: MetricFamily[] = [];
  const family = (name: string, type: 'counter' | 'gauge', help: string, samples: [Record<string, string>, number][]) =>
    families.push({ name, type, help, samples: samples.map(([labels, value]) => ({ labels, value })) });
  family('decisions_total', 'counter', 'Rate-limit decisions (one per stack), by outcome.', [
    [{ outcome: 'allowed' }, c.decisions.allowed],
    [{ outcome: 'refused' }, c.decisions.refused],
    [{ outcome: 'shadow-refused' }, c.decisions.shadowRefused],
  ]);
  family('refunded_permits_total', 'counter', 'Permits given back by refund.', [[{}, c.outcomes.refundedPermits]]);
  family('penalized_permits_total', 'counter', 'Permits charged by penalize.', [[{}, c.outcomes.penalizedPermits]]);
  family('blocks_total', 'counter', 'Keys blocked by block.', [[{}, c.outcomes.blocks]]);
  family('refusal_cache_hits_total', 'counter', 'Stacks refused from the refusal cache, without a Redis call.', [[{}, c.refusalCacheHits]]);
  family('fail_mode_total', 'counter', 'Requests a guard decided without Redis, by failMode.', [
    [{ fail_mode: 'open' }, c.failMode.open],
    [{ fail_mode: 'closed' }, c.failMode.closed],
    [{ fail_mode: 'local' }, c.failMode.local],
  ]);
  family('local_decisions_total', 'counter', "Stacks decided in process memory under failMode 'local', by outcome.", [
    [{ outcome: 'allowed' }, c.localDecisions.allowed],
    [{ outcome: 'refused' }, c.localDecisions.refused],
  ]);
  family('redis_outages_total', 'counter', 'Redis outages begun.', [[{}, c.outages]]);
  family('redis_up', 'gauge', '1 while Redis answers, 0 during an outage.', [[{}, c.redisUp]]);
  family('max_pending_refused_total', 'counter', 'Requests refused because their owner was at its @MaxPending cap.', [[{}, c.maxPendingRefused]]);
  family('concurrency_slots_total', 'counter', 'Concurrency slots (@MaxConcurrent, acquireSlot) taken, and refused because all were held.', [
    [{ outcome: 'taken' }, c.concurrencySlots.taken],
    [{ outcome: 'refused' }, c.concurrencySlots.refused],
  ]);
  family('shadow_refused_total', 'counter', 'Requests shadow limits would have refused, let through.', [[{}, c.shadowRefused]]);
  family(
    'queue_messages_total',
    'counter',
    'DelayQueue messages, by queue and event.',
    Object.entries(c.queues).flatMap(([queue, counts]) => Object.entries(counts).map(([event, n]): [Record<string, string>, number] => [{ queue, event }, n])),
  );
  family(
    'queue_size',
    'gauge',
    'DelayQueue messages by queue and state, as last read (DelayQueueService.prometheus() reads them first).',
    Object.entries(c.queueSizes).flatMap(([queue, size]) =>
      (['scheduled', 'inFlight', 'dead'] as const).map((state): [Record<string, string>, number] => [
        { queue, state: state === 'inFlight' ? 'inflight' : state },
        size[state],
      ]),
    ),
  );
  family(
    'queue_adaptive_limit',
    'gauge',
    'DelayQueue rate keys whose adaptive limit is below the configured one, as this process saw it halved (at most 100 keys a queue; key="" is the queue\'s one counter).',
    Object.entries(c.adaptiveLimits).flatMap(([queue, keys]) =>
      Object.entries(keys).map(([key, limit]): [Record<string, string>, number] => [{ queue, key }, limit]),
    ),
  );
  return families;
}

/** Label values in the text format escape backslash, double quote and newline. */
const escaped = (value: string) => value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const labelText = (labels: Record<string, string>) => {
  const pairs = Object.entries(labels).map(([name, value]) => `${name}="${escaped(value)}"`);
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
};

/** The counters as Prometheus text exposition (version 0.0.4), one family per metric. */
export function prometheusText(c: RedisLimitCounters, prefix: string): string {
  const lines: string[] = [];
  for (const { name, type, help, samples } of metricFamilies(c)) {
    lines.push(`# HELP ${prefix}_${name} ${help}`, `# TYPE ${prefix}_${name} ${type}`);
    for (const { labels, value } of samples) lines.push(`${prefix}_${name}${labelText(labels)} ${value}`);
  }
  return `${lines.join('\n')}\n`;
}
