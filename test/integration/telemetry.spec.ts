import { Controller, Get } from '@nestjs/common';
import { context, metrics, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { AggregationTemporality, MeterProvider, MetricReader, type DataPoint } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { DelayQueueService, RateLimit, RateLimiterService, RedisLimitError, RedisLimitEvents, RetryLater, type DelayedMessage } from '../../lib/index.js';
import { controllerApp } from '../harness/controller-app.js';
import { limiterModule, uniquePrefix } from '../harness/limiter-app.js';
import { until } from '../harness/until.js';
import { RedisNode, type TestRedis } from '../harness/redis-server.js';

// OpenTelemetry through the app's SDK: the SDK's in-memory span exporter and a metric reader the
// test collects on demand, registered as the global providers the API hands the library.

/** Collects on demand (an app's exporter would do it on a timer). */
class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

const spans = new InMemorySpanExporter();
const reader = new TestReader();
const contextManager = new AsyncLocalStorageContextManager().enable();
beforeAll(() => {
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
});
afterAll(() => {
  trace.disable();
  metrics.disable();
  context.disable();
});
beforeEach(() => spans.reset());

const decisionSpans = (): ReadableSpan[] => spans.getFinishedSpans().filter((span) => span.name === 'redis-limit decide');

/** The points of metric `name` as attributes → value. */
async function points(name: string): Promise<Map<string, number>> {
  const { resourceMetrics } = await reader.collect();
  const metric = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).find((m) => m.descriptor.name === name);
  const found = new Map<string, number>();
  for (const point of (metric?.dataPoints ?? []) as DataPoint<number>[]) found.set(JSON.stringify(point.attributes), point.value);
  return found;
}

@Controller('t')
class TracedController {
  @Get('limited')
  @RateLimit({ name: 'search', limit: 1, windowMs: 3_600_000 })
  limited() {
    return 'ok';
  }
}

describe('OpenTelemetry', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await RedisNode.start();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('a decision is a span in the caller’s trace: its outcome and remaining, a refusal as a span event', async () => {
    const app = await limiterModule(redis);
    try {
      const limiter = app.moduleRef.get(RateLimiterService);
      const policy = { limit: 1, windowMs: 3_600_000 };
      const request = trace.getTracer('test').startSpan('request');
      await context.with(trace.setSpan(context.active(), request), async () => {
        await limiter.consume('k', policy);
        await limiter.consume('k', policy);
      });
      request.end();
      const [allowed, refused] = decisionSpans();
      for (const span of [allowed!, refused!]) {
        expect(span.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
        expect(span.spanContext().traceId).toBe(request.spanContext().traceId);
        // a refusal is the limiter doing its job, not an error
        expect(span.status.code).toBe(SpanStatusCode.UNSET);
        expect(span.attributes['redis_limit.limits']).toBe(1);
      }
      expect(allowed!.attributes).toMatchObject({ 'redis_limit.outcome': 'allowed', 'redis_limit.remaining': 0 });
      expect(allowed!.events).toEqual([]);
      expect(refused!.attributes).toMatchObject({ 'redis_limit.outcome': 'refused', 'redis_limit.remaining': 0 });
      expect(refused!.events.map((event) => event.name)).toEqual(['redis_limit.refused']);
      expect(refused!.events[0]!.attributes!['redis_limit.retry_after_ms']).toBeGreaterThan(3_500_000);
      // keys are often personal data: never on a span
      expect(JSON.stringify([allowed!.attributes, refused!.attributes, refused!.events])).not.toContain('"k"');
      // a peek decides nothing: no span
      await limiter.peek('k', policy);
      expect(decisionSpans()).toHaveLength(2);
    } finally {
      await app.close();
    }
  });

  it('a guarded route’s decision names its route and limit', async () => {
    const { http, close } = await controllerApp(redis, { controllers: [TracedController] });
    try {
      await http.get('/t/limited').expect(200);
      await http.get('/t/limited').expect(429);
      const [allowed, refused] = decisionSpans();
      for (const span of [allowed!, refused!]) {
        expect(span.attributes).toMatchObject({ 'redis_limit.route': 'TracedController.limited', 'redis_limit.names': ['search'] });
      }
      expect(refused!.events[0]!.attributes).toMatchObject({ 'redis_limit.refused_names': ['search'], 'redis_limit.refused_kinds': ['sliding-window'] });
    } finally {
      await close();
    }
  });

  it('a decision Redis could not make is an error span', async () => {
    const own = await RedisNode.start({ own: true });
    const app = await limiterModule(own, { commandTimeoutMs: 2_000 });
    try {
      await own.stop();
      await expect(app.moduleRef.get(RateLimiterService).consume('k', { limit: 5, windowMs: 60_000 })).rejects.toBeInstanceOf(RedisLimitError);
      const [span] = decisionSpans();
      expect(span!.status.code).toBe(SpanStatusCode.ERROR);
      expect(span!.events.map((event) => event.name)).toEqual(['exception']);
    } finally {
      await app.close();
    }
  });

  it('metrics mirror the Prometheus counters, with the same labels', async () => {
    const app = await limiterModule(redis);
    try {
      const limiter = app.moduleRef.get(RateLimiterService);
      const policy = { limit: 2, windowMs: 3_600_000 };
      for (let i = 0; i < 5; i++) await limiter.consume('m', policy);
      const counters = app.moduleRef.get(RedisLimitEvents).counters();
      expect(counters.decisions).toMatchObject({ allowed: 2, refused: 3 });
      const decisions = await points('nest_redis_limit.decisions');
      expect(decisions.get(JSON.stringify({ outcome: 'allowed' }))).toBe(2);
      expect(decisions.get(JSON.stringify({ outcome: 'refused' }))).toBe(3);
      expect(decisions.get(JSON.stringify({ outcome: 'shadow-refused' }))).toBe(0);
      expect(await points('nest_redis_limit.redis_up')).toEqual(new Map([['{}', 1]]));
      // every Prometheus family with a sample has its instrument (the SDK reports none without a point)
      const text = app.moduleRef.get(RedisLimitEvents).prometheus();
      const families = [...new Set([...text.matchAll(/^nest_redis_limit_(\w+?)(?:_total)?[{ ]/gm)].map(([, name]) => `nest_redis_limit.${name}`))];
      expect(families).toContain('nest_redis_limit.fail_mode');
      const { resourceMetrics } = await reader.collect();
      const names = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics.map((m) => m.descriptor.name));
      expect(names).toEqual(expect.arrayContaining(families));
    } finally {
      await app.close();
    }
  });

  describe('the delay queue', () => {
    const processSpans = (queue: string) => spans.getFinishedSpans().filter((span) => span.name === `process ${queue}`);
    const enqueueSpans = (queue: string) => spans.getFinishedSpans().filter((span) => span.name === `enqueue ${queue}`);

    it('a handler’s span continues the trace its message was enqueued in, and its own spans are its children', async () => {
      const app = await limiterModule(redis);
      const queue = app.moduleRef.get(DelayQueueService);
      const inner: string[] = [];
      const consumer = queue.consume('traced', async (message: DelayedMessage) => {
        // what the handler traces is the process span's child
        trace.getTracer('test').startActiveSpan(`inner ${message.id}`, (span) => {
          inner.push(span.spanContext().spanId);
          span.end();
        });
      });
      try {
        const request = trace.getTracer('test').startSpan('request');
        await context.with(trace.setSpan(context.active(), request), async () => {
          await queue.enqueue('traced', { n: 1 }, { id: 'one' });
          await queue.enqueueMany('traced', [
            { payload: { n: 2 }, id: 'two' },
            { payload: { n: 3 }, id: 'three' },
          ]);
        });
        request.end();
        await until(
          () => processSpans('traced').length === 3,
          20_000,
          () => 'three handler spans',
        );
        const [single, batch] = enqueueSpans('traced');
        expect(single!.attributes).toMatchObject({ 'messaging.destination.name': 'traced', 'messaging.operation.type': 'send', 'messaging.message.id': 'one' });
        expect(batch!.attributes).toMatchObject({ 'messaging.batch.message_count': 2 });
        for (const span of [single!, batch!]) expect(span.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
        const parentOf = new Map([
          ['one', single!.spanContext().spanId],
          ['two', batch!.spanContext().spanId],
          ['three', batch!.spanContext().spanId],
        ]);
        for (const span of processSpans('traced')) {
          const id = String(span.attributes['messaging.message.id']);
          expect(span.spanContext().traceId).toBe(request.spanContext().traceId);
          expect(span.parentSpanContext?.spanId).toBe(parentOf.get(id));
          expect(span.attributes['redis_limit.attempt']).toBe(1);
          expect(span.status.code).toBe(SpanStatusCode.UNSET);
          const child = spans.getFinishedSpans().find((s) => s.name === `inner ${id}`);
          expect(child?.parentSpanContext?.spanId).toBe(span.spanContext().spanId);
        }
        expect(inner).toHaveLength(3);
      } finally {
        await consumer.stop();
        await app.close();
      }
    });

    it('a failed attempt is an error span; RetryLater an event; each attempt a span of the same trace', async () => {
      const app = await limiterModule(redis);
      const queue = app.moduleRef.get(DelayQueueService);
      let runs = 0;
      const consumer = queue.consume(
        'flaky',
        async () => {
          runs += 1;
          if (runs === 1) throw new Error('boom');
          if (runs === 2) throw new RetryLater(0);
        },
        { maxAttempts: 5, backoffMs: 0 },
      );
      try {
        await queue.enqueue('flaky', 'x', { id: 'f' });
        // attempt 1 fails, RetryLater is no attempt, attempt 2 (its third run) is handled
        await until(
          () => processSpans('flaky').length === 3,
          20_000,
          () => 'three handler spans',
        );
        const [failedRun, later, handled] = processSpans('flaky');
        expect(failedRun!.status.code).toBe(SpanStatusCode.ERROR);
        expect(failedRun!.events.map((event) => event.name)).toEqual(['exception']);
        expect(later!.status.code).toBe(SpanStatusCode.UNSET);
        expect(later!.events.map((event) => event.name)).toEqual(['redis_limit.retry_later']);
        expect(handled!.status.code).toBe(SpanStatusCode.UNSET);
        const [enqueued] = enqueueSpans('flaky');
        for (const span of [failedRun!, later!, handled!]) expect(span.parentSpanContext?.spanId).toBe(enqueued!.spanContext().spanId);
      } finally {
        await consumer.stop();
        await app.close();
      }
    });

    it('a message enqueued untraced starts a trace of its own when handled', async () => {
      const keyPrefix = uniquePrefix('otel');
      const [untraced, traced] = [await limiterModule(redis, { keyPrefix, telemetry: false }), await limiterModule(redis, { keyPrefix })];
      const consumer = traced.moduleRef.get(DelayQueueService).consume('plain', () => undefined);
      try {
        const request = trace.getTracer('test').startSpan('request');
        await context.with(trace.setSpan(context.active(), request), () => untraced.moduleRef.get(DelayQueueService).enqueue('plain', 'x', { id: 'p' }));
        request.end();
        await until(
          () => processSpans('plain').length === 1,
          20_000,
          () => 'a handler span',
        );
        const [span] = processSpans('plain');
        expect(span!.parentSpanContext).toBeUndefined();
        expect(span!.spanContext().traceId).not.toBe(request.spanContext().traceId);
        expect(enqueueSpans('plain')).toEqual([]);
      } finally {
        await consumer.stop();
        await untraced.close();
        await traced.close();
      }
    });
  });

  it('telemetry: false records no span and no metric', async () => {
    // what the modules above reported stays (cumulative); this one must add nothing to it
    const before = await points('nest_redis_limit.decisions');
    const app = await limiterModule(redis, { telemetry: false });
    try {
      await app.moduleRef.get(RateLimiterService).consume('off', { limit: 2, windowMs: 60_000 });
      expect(app.moduleRef.get(RedisLimitEvents).counters().decisions.allowed).toBe(1);
      expect(decisionSpans()).toEqual([]);
      expect(await points('nest_redis_limit.decisions')).toEqual(before);
    } finally {
      await app.close();
    }
  });
});
