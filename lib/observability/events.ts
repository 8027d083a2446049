import type { LimitKind } from '../rate-limit/policy.js';

/** One limit's verdict inside a `redis-limit.decision` event. */
export interface LimitVerdict {
  key: string;
  scope?: string;
  /** The limit's algorithm, or `'funnel'`. */
  kind: LimitKind;
  limit: number;
  allowed: boolean;
  remaining: number;
}

/** A shadow limit that would have refused, in a `redis-limit.shadow-refused` event. */
export interface ShadowVerdict {
  key: string;
  scope?: string;
  limit: number;
  remaining: number;
  retryAfterMs: number;
}

/**
 * What the module tells the app, by `type`. Listeners get them through
 * `RedisLimitEvents.on(listener)` and, when `@nestjs/event-emitter` is installed, as
 * `eventEmitter.emit(type, event)` too.
 */
export type RedisLimitEvent =
  /** A rate-limit stack was decided (RateLimiterService and the guards). */
  | {
      type: 'redis-limit.decision';
      allowed: boolean;
      retryAfterMs: number;
      limits: LimitVerdict[];
      /** refused from the refusal cache, without asking Redis */ cached?: true;
      /** shadow limits alone refused it: it went on (`allowed` is true), and is no refusal */ shadowRefused?: true;
      /** the guard's route (`Class.method`); absent for direct service calls */ route?: string;
    }
  /** `refund` gave `permits` of a grant back (0: nothing left to give). */
  | { type: 'redis-limit.refund'; key: string; scope?: string; kind: LimitKind; limit: number; permits: number }
  /** `penalize` charged `permits`; `remaining` is what the key has left after it. */
  | { type: 'redis-limit.penalize'; key: string; scope?: string; kind: LimitKind; limit: number; permits: number; remaining: number }
  /** `block` refused the key for `durationMs`. */
  | { type: 'redis-limit.block'; key: string; scope?: string; kind: LimitKind; limit: number; durationMs: number }
  /** A route's shadow limits refused and the request went on (shadow mode: `limits` are the
   * refusing ones, `retryAfterMs` what the refusal would have said). */
  | { type: 'redis-limit.shadow-refused'; route: string; retryAfterMs: number; limits: ShadowVerdict[] }
  /** A guard could not reach Redis and let the request through ('open'), answered 503 ('closed')
   * or decided it in process memory ('local', followed by a `redis-limit.local-decision`). */
  | { type: 'redis-limit.fail-mode'; route: string; failMode: 'open' | 'closed' | 'local'; error: Error }
  /** failMode 'local': a guard decided a stack in process memory while Redis could not answer
   * (each `limit` as divided by localDivisor). */
  | { type: 'redis-limit.local-decision'; route: string; allowed: boolean; retryAfterMs: number; limits: LimitVerdict[] }
  /** Redis became unreachable: once per outage, however many requests meet it. */
  | { type: 'redis-limit.redis-down'; error: Error }
  | { type: 'redis-limit.redis-up' }
  /** A `@MaxPending` owner was at its cap: the request got a 429. */
  | {
      type: 'redis-limit.max-pending.refused';
      route: string;
      owner: string;
      max: number;
      /** how the route's rate limits, deciding before @MaxPending, counted this request in
       * `decisions` (it is a refusal now); absent when no rate limit decided it */
      counted?: 'allowed' | 'shadow-refused';
    }
  /** A concurrency slot of `key` was refused: all `limit` were held. `route`: the `@MaxConcurrent`
   * handler (absent for `acquireSlot`); `name`: the slots' name, if any. */
  | { type: 'redis-limit.concurrency.refused'; route?: string; name?: string; key: string; limit: number; retryAfterMs: number }
  /** setOverride changed the limits named `name` in every instance (from this one); `override`
   * is what now applies, null when removed; `key`: only that key's (a per-key override). */
  | { type: 'redis-limit.override'; name: string; key?: string; override: { limit: number; windowMs: number; expiresAt?: number } | null }
  | { type: 'redis-limit.queue.enqueued'; queue: string; id: string; runAt: number; scheduled: boolean }
  | { type: 'redis-limit.queue.delivered'; queue: string; id: string; attempt: number; runAt: number }
  | { type: 'redis-limit.queue.handled'; queue: string; id: string; attempt: number }
  | { type: 'redis-limit.queue.retry'; queue: string; id: string; attempt: number; dueAt: number; error: unknown }
  /** A handler threw RetryLater: due again at `dueAt`, not an attempt; `pausedKey`: its rate key
   * waits as long; `adaptiveLimit`: that key's adaptive limit now (rateLimit.adaptive). */
  | { type: 'redis-limit.queue.retry-later'; queue: string; id: string; attempt: number; dueAt: number; pausedKey: boolean; adaptiveLimit?: number }
  /** Every slot of its `concurrencyPerKey` key was taken: it waits for one, not an attempt. */
  | { type: 'redis-limit.queue.waiting'; queue: string; id: string; attempt: number }
  /** Handled, but its acknowledgement could not reach Redis before its lease ran out (an outage
   * longer than the lease), or before the consumer stopped: it will be delivered again. */
  | { type: 'redis-limit.queue.unacknowledged'; queue: string; id: string; attempt: number }
  /** The recurring schedule `schedule` had ticks due while no consumer ran: they were missed, from
   * `from` up to `to` (ms), and the tick at `to` runs in their place, once. */
  | { type: 'redis-limit.queue.ticks-missed'; queue: string; schedule: string; from: number; to: number }
  /** Out of attempts, or at once: `unrecoverable` when its handler threw Unrecoverable. */
  | { type: 'redis-limit.queue.dead'; queue: string; id: string; attempt: number; error: unknown; unrecoverable?: true }
  /** `retryDead` moved `count` dead messages back to scheduled; `purgeDead` deleted `count`. */
  | { type: 'redis-limit.queue.dead-retried'; queue: string; count: number }
  | { type: 'redis-limit.queue.dead-purged'; queue: string; count: number };

export type RedisLimitEventType = RedisLimitEvent['type'];
/** A `redis-limit.decision` event. */
export type DecisionEvent = Extract<RedisLimitEvent, { type: 'redis-limit.decision' }>;
export type RedisLimitListener = (event: RedisLimitEvent) => void;

/** Monotonic counts since start-up (and one gauge), for an app to export. */
export interface RedisLimitCounters {
  /** Stacks decided, by outcome: `shadowRefused` counts requests shadow limits alone refused
   * (they went on), never as refusals. */
  decisions: { allowed: number; refused: number; shadowRefused: number };
  /** Permits given back by `refund`, charged by `penalize`, and `block` calls. */
  outcomes: { refundedPermits: number; penalizedPermits: number; blocks: number };
  failMode: { open: number; closed: number; local: number };
  /** Stacks decided in process memory under failMode 'local', by outcome. */
  localDecisions: { allowed: number; refused: number };
  /** Outages begun since start-up. */
  outages: number;
  /** 1 while Redis answers, 0 during an outage. */
  redisUp: 0 | 1;
  maxPendingRefused: number;
  /** Concurrency slots (`@MaxConcurrent`, `acquireSlot`) taken, and refused because all were held. */
  concurrencySlots: { taken: number; refused: number };
  /** Requests that shadow limits would have refused, let through. */
  shadowRefused: number;
  /** Stacks refused from the refusal cache, without a Redis call (also counted in `decisions`). */
  refusalCacheHits: number;
  /** Per queue name. `retriedLater`: RetryLater thrown; `unrecoverable`: of the `dead`, those
   * whose handler threw Unrecoverable. */
  queues: Record<
    string,
    {
      enqueued: number;
      delivered: number;
      handled: number;
      retried: number;
      retriedLater: number;
      /** Messages that waited for a slot of `concurrencyPerKey` (each time one did). */
      waited: number;
      /** Handled messages whose acknowledgement never reached Redis: delivered again. */
      unacknowledged: number;
      /** Times a recurring schedule skipped ticks missed while no consumer ran. */
      ticksMissed: number;
      dead: number;
      unrecoverable: number;
      deadRetried: number;
      deadPurged: number;
    }
  >;
  /** Per queue, its sizes when last read (a gauge: `DelayQueueService.size()`, `queues()` and
   * `prometheus()` read them; nothing reads them in the background). */
  queueSizes: Record<string, { scheduled: number; inFlight: number; dead: number }>;
  /** Per queue, per rate key ('' for the queue's one counter): the adaptive limit of a key whose
   * limit this process saw halved and that is not whole again yet (a gauge; at most
   * ADAPTIVE_GAUGE_KEYS keys a queue, the latest halved). */
  adaptiveLimits: Record<string, Record<string, number>>;
}
