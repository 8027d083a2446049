import { RedisLimitEvents, type RedisLimitEvent } from '../../lib/index.js';
import type { LimiterApp } from './limiter-app.js';

type EventOf<T extends RedisLimitEvent['type']> = Extract<RedisLimitEvent, { type: T }>;

/**
 * For a describe block on withLimiterApp: every event the app emits from beforeAll on, and the
 * ones of one type and queue (tests use a queue each, so they do not see each other's).
 */
export function recordQueueEvents(ctx: { app: LimiterApp }) {
  const seen: RedisLimitEvent[] = [];
  let unlisten: () => void;
  beforeAll(() => {
    unlisten = ctx.app.moduleRef.get(RedisLimitEvents).on((event) => void seen.push(event));
  });
  afterAll(() => unlisten());
  return <T extends RedisLimitEvent['type']>(type: T, queue: string): EventOf<T>[] =>
    seen.filter((event): event is EventOf<T> => event.type === type && (event as { queue?: string }).queue === queue);
}
