import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type * as OtelApiModule from '@opentelemetry/api';
import type { BatchObservableCallback, Context, Meter, Observable, Span, Tracer } from '@opentelemetry/api';
import type { DecisionEvent } from './events.js';
import { metricFamilies } from './prometheus.js';
import { RedisLimitEvents } from './redis-limit-events.js';
import { TELEMETRY_OPTIONS, type TelemetrySettings } from './telemetry.options.js';

type OtelApi = typeof OtelApiModule;

/** The instrumentation scope of every span and metric, and the metrics' name prefix. */
export const TELEMETRY_SCOPE = 'nest-redis-limit';
const METRIC_PREFIX = 'nest_redis_limit';

/** The API where the app installed it; undefined where it is not found. A dynamic import (a
 * require() in the CommonJS build) with a literal specifier, as peer-class.ts explains. */
async function loadApi(): Promise<OtelApi | undefined> {
  try {
    return await import('@opentelemetry/api');
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

/** Records an error on a span: its exception event and an error status. */
function failed(api: OtelApi, span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/** Ends `span` when `work` settles, with an error status if it fails; resolves as `work`. */
function endWhenSettled<T>(api: OtelApi, span: Span, work: Promise<T>): Promise<T> {
  return work.then(
    (result) => {
      span.end();
      return result;
    },
    (error: unknown) => {
      failed(api, span, error);
      span.end();
      throw error;
    },
  );
}

/** A rate-limit decision's span: told the verdict, ended when the decision settles. The spans are
 * interfaces here and classes below, unexported, so no type of the optional peer reaches the
 * library's declarations. */
export interface DecisionSpan {
  around<T>(decision: Promise<T>): Promise<T>;
  decided(event: DecisionEvent): void;
}

/** A DelayQueue enqueue's span (a producer's): its trace context travels with the messages. */
export interface EnqueueSpan {
  around<T>(sending: Promise<T>): Promise<T>;
  /** The W3C trace context for the message to carry, '' for none. */
  readonly carried: string;
  sent(id: string): void;
}

/** A DelayQueue handler's span (a consumer's), in the trace its message was enqueued in. */
export interface HandlingSpan {
  run<T>(handler: () => T): T;
  end(error?: unknown, expected?: string): void;
}

/** A span that ends when the work it covers settles, with an error status if that fails. */
class SettledSpan {
  constructor(
    protected readonly api: OtelApi,
    protected readonly span: Span,
  ) {}

  around<T>(work: Promise<T>): Promise<T> {
    return endWhenSettled(this.api, this.span, work);
  }
}

class OtelDecisionSpan extends SettledSpan implements DecisionSpan {
  /** The verdict, as the decision event tells it. A refusal is a span event, not an error: the
   * limiter did its job. Keys are left out (they are often personal data: IPs, user ids). */
  decided(event: DecisionEvent): void {
    const outcome = event.shadowRefused ? 'shadow-refused' : event.allowed ? 'allowed' : 'refused';
    const names = event.limits.flatMap(({ scope }) => (scope === undefined ? [] : [scope]));
    this.span.setAttributes({
      'redis_limit.outcome': outcome,
      'redis_limit.remaining': Math.min(...event.limits.map(({ remaining }) => remaining)),
      'redis_limit.limits': event.limits.length,
      ...(names.length > 0 ? { 'redis_limit.names': names } : {}),
      ...(event.route === undefined ? {} : { 'redis_limit.route': event.route }),
      ...(event.cached ? { 'redis_limit.cached': true } : {}),
    });
    if (outcome === 'refused') {
      const refusing = event.limits.filter(({ allowed }) => !allowed);
      this.span.addEvent('redis_limit.refused', {
        'redis_limit.retry_after_ms': event.retryAfterMs,
        'redis_limit.refused_kinds': refusing.map(({ kind }) => kind),
        ...(refusing.some(({ scope }) => scope !== undefined) ? { 'redis_limit.refused_names': refusing.flatMap(({ scope }) => scope ?? []) } : {}),
      });
    }
  }
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

class OtelEnqueueSpan extends SettledSpan implements EnqueueSpan {
  /** The span's W3C trace context, `traceparent` then `tracestate` after a newline, for the
   * message to carry; '' when it has no valid context (no SDK: nothing to continue). */
  get carried(): string {
    const context = this.span.spanContext();
    if (!this.api.isSpanContextValid(context)) return '';
    const parent = `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
    const state = context.traceState?.serialize();
    return state ? `${parent}\n${state}` : parent;
  }

  /** The id of the message it sent (an enqueue of one). */
  sent(id: string): void {
    this.span.setAttribute('messaging.message.id', id);
  }
}

class OtelHandlingSpan implements HandlingSpan {
  constructor(
    private readonly api: OtelApi,
    private readonly span: Span,
    private readonly parent: Context,
  ) {}

  /** Runs the handler with the span active, so what it traces is the span's children. */
  run<T>(handler: () => T): T {
    return this.api.context.with(this.api.trace.setSpan(this.parent, this.span), handler);
  }

  /** Ends the span: a thrown error is an error status, unless `expected` (RetryLater: the
   * handler asked to wait, which is an event). */
  end(error?: unknown, expected?: string): void {
    if (expected !== undefined) this.span.addEvent(expected);
    else if (error !== undefined) failed(this.api, this.span, error);
    this.span.end();
  }
}

/**
 * OpenTelemetry, through `@opentelemetry/api` where the app installed it (the `telemetry`
 * option): a span per rate-limit decision, per DelayQueue enqueue and per handling (in the trace
 * the message was enqueued in), and the Prometheus metrics as observable instruments read from
 * the same counters when the app's SDK collects. Off, it costs a caller one property read: each
 * `start…()` returns undefined.
 */
@Injectable()
export class Telemetry implements OnModuleInit, OnApplicationShutdown {
  private api: OtelApi | undefined;
  private tracer: Tracer | undefined;
  private observed: { meter: Meter; callback: BatchObservableCallback; instruments: Observable[] } | undefined;

  constructor(
    @Inject(TELEMETRY_OPTIONS) private readonly settings: TelemetrySettings,
    @Inject(RedisLimitEvents) private readonly events: RedisLimitEvents,
  ) {}

  async onModuleInit(): Promise<void> {
    if (this.settings.telemetry === false) return;
    const api = await loadApi();
    if (api === undefined) {
      if (this.settings.telemetry) {
        throw new TypeError('RedisLimitModule: telemetry is true, but @opentelemetry/api cannot be found: install it (npm install @opentelemetry/api)');
      }
      return;
    }
    this.api = api;
    // proxies: they follow whatever tracer and meter providers the app registers, before or after
    this.tracer = api.trace.getTracer(TELEMETRY_SCOPE);
    this.observe(api.metrics.getMeter(TELEMETRY_SCOPE));
  }

  onApplicationShutdown(): void {
    if (this.observed === undefined) return;
    const { meter, callback, instruments } = this.observed;
    meter.removeBatchObservableCallback(callback, instruments);
    this.observed = undefined;
  }

  /** Whether spans and metrics are on (the API is loaded and the option allows it). */
  get enabled(): boolean {
    return this.api !== undefined;
  }

  /** A span for one decision, a child of the active context (the request's span, where the app
   * traces requests); undefined while telemetry is off or the span is not recorded. */
  startDecision(): DecisionSpan | undefined {
    if (this.tracer === undefined) return undefined;
    const span = this.tracer.startSpan('redis-limit decide');
    // not recorded (no SDK, or sampled out): nothing to tell it, and nothing to carry on
    return span.isRecording() ? new OtelDecisionSpan(this.api!, span) : undefined;
  }

  /** A span for an enqueue of `count` messages to `queue`, a child of the active context;
   * undefined while telemetry is off. */
  startEnqueue(queue: string, count: number): EnqueueSpan | undefined {
    if (this.tracer === undefined) return undefined;
    const api = this.api!;
    const attributes = {
      'messaging.system': TELEMETRY_SCOPE,
      'messaging.destination.name': queue,
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'enqueue',
      ...(count === 1 ? {} : { 'messaging.batch.message_count': count }),
    };
    return new OtelEnqueueSpan(api, this.tracer.startSpan(`enqueue ${queue}`, { kind: api.SpanKind.PRODUCER, attributes }));
  }

  /** A span for one handling of a message, the child of the span it was enqueued in (`carried`,
   * as EnqueueSpan.carried made it), else a trace of its own; undefined while telemetry is off. */
  startHandling(queue: string, id: string, attempt: number, carried: string): HandlingSpan | undefined {
    if (this.tracer === undefined) return undefined;
    const api = this.api!;
    const [parentText = '', state] = carried.split('\n');
    const parsed = TRACEPARENT.exec(parentText);
    // never the context the consumer happens to run in: a message's trace is its enqueuer's
    const parent = parsed
      ? api.trace.setSpanContext(api.ROOT_CONTEXT, {
          traceId: parsed[1]!,
          spanId: parsed[2]!,
          traceFlags: Number.parseInt(parsed[3]!, 16),
          isRemote: true,
          ...(state ? { traceState: api.createTraceState(state) } : {}),
        })
      : api.ROOT_CONTEXT;
    const attributes = {
      'messaging.system': TELEMETRY_SCOPE,
      'messaging.destination.name': queue,
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.message.id': id,
      'redis_limit.attempt': attempt,
    };
    return new OtelHandlingSpan(api, this.tracer.startSpan(`process ${queue}`, { kind: api.SpanKind.CONSUMER, attributes }, parent), parent);
  }

  /** One observable instrument per metric family, all read by one callback per collection. */
  private observe(meter: Meter): void {
    const families = metricFamilies(this.events.counters());
    const instruments = new Map<string, Observable>();
    for (const { name, type, help } of families) {
      const otelName = `${METRIC_PREFIX}.${name.replace(/_total$/, '')}`;
      const options = { description: help };
      instruments.set(name, type === 'counter' ? meter.createObservableCounter(otelName, options) : meter.createObservableGauge(otelName, options));
    }
    const callback: BatchObservableCallback = (result) => {
      for (const { name, samples } of metricFamilies(this.events.counters())) {
        const instrument = instruments.get(name)!;
        for (const { labels, value } of samples) result.observe(instrument, value, labels);
      }
    };
    meter.addBatchObservableCallback(callback, [...instruments.values()]);
    this.observed = { meter, callback, instruments: [...instruments.values()] };
  }
}
