import { prometheusText } from '../../lib/observability/prometheus.js';
import type { RedisLimitCounters } from '../../lib/observability/events.js';

describe('prometheusText', () => {
  const counters: RedisLimitCounters = {
    decisions: { allowed: 7, refused: 2, shadowRefused: 4 },
    outcomes: { refundedPermits: 5, penalizedPermits: 6, blocks: 2 },
    failMode: { open: 1, closed: 0, local: 4 },
    localDecisions: { allowed: 3, refused: 1 },
    outages: 1,
    redisUp: 1,
    maxPendingRefused: 3,
    concurrencySlots: { taken: 9, refused: 2 },
    shadowRefused: 4,
    refusalCacheHits: 8,
    queues: {
      'a"b\\c': {
        enqueued: 1,
        delivered: 2,
        handled: 1,
        retried: 1,
        retriedLater: 0,
        waited: 0,
        unacknowledged: 2,
        ticksMissed: 0,
        dead: 0,
        unrecoverable: 0,
        deadRetried: 3,
        deadPurged: 0,
      },
    },
    queueSizes: { orders: { scheduled: 4, inFlight: 1, dead: 2 } },
    adaptiveLimits: { webhooks: { 'tenant "1"': 12, '': 3 } },
  };

  it('writes one HELP and TYPE per family, then its samples', () => {
    const text = prometheusText(counters, 'x');
    expect(text).toContain('# HELP x_decisions_total ');
    expect(text).toContain(
      '# TYPE x_decisions_total counter\nx_decisions_total{outcome="allowed"} 7\nx_decisions_total{outcome="refused"} 2\nx_decisions_total{outcome="shadow-refused"} 4\n',
    );
    expect(text).toContain('# TYPE x_redis_up gauge\nx_redis_up 1\n');
    expect(text).toContain('x_max_pending_refused_total 3\n');
    expect(text).toContain('x_refunded_permits_total 5\n');
    expect(text).toContain('x_penalized_permits_total 6\n');
    expect(text).toContain('x_refusal_cache_hits_total 8\n');
    expect(text).toContain('x_blocks_total 2\n');
    expect(text).toContain('x_fail_mode_total{fail_mode="local"} 4\n');
    expect(text).toContain('x_local_decisions_total{outcome="allowed"} 3\nx_local_decisions_total{outcome="refused"} 1\n');
    expect(text).toContain('x_shadow_refused_total 4\n');
    expect(text).toContain('x_concurrency_slots_total{outcome="taken"} 9\nx_concurrency_slots_total{outcome="refused"} 2\n');
    expect(text).toContain(
      '# TYPE x_queue_adaptive_limit gauge\nx_queue_adaptive_limit{queue="webhooks",key="tenant \\"1\\""} 12\nx_queue_adaptive_limit{queue="webhooks",key=""} 3\n',
    );
    expect(text.endsWith('\n')).toBe(true);
    // every line is a comment or `name{labels} value`
    for (const line of text.trimEnd().split('\n')) expect(line).toMatch(/^(# (HELP|TYPE) x_\w+ .+|x_\w+(\{[^}]*\})? \d+)$/);
  });

  it('escapes quotes and backslashes in label values (queue names)', () => {
    expect(prometheusText(counters, 'x')).toContain('x_queue_messages_total{queue="a\\"b\\\\c",event="delivered"} 2\n');
  });

  it("writes each queue's sizes as last read, one gauge sample per state", () => {
    const text = prometheusText(counters, 'x');
    expect(text).toContain('# TYPE x_queue_size gauge\n');
    expect(text).toContain(
      'x_queue_size{queue="orders",state="scheduled"} 4\nx_queue_size{queue="orders",state="inflight"} 1\nx_queue_size{queue="orders",state="dead"} 2\n',
    );
    expect(text).toContain('x_queue_messages_total{queue="a\\"b\\\\c",event="deadRetried"} 3\n');
    expect(text).toContain('x_queue_messages_total{queue="a\\"b\\\\c",event="unacknowledged"} 2\n');
  });
});
