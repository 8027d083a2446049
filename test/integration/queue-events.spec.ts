import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueService, RedisLimitEvents, type RedisLimitEvent } from '../../lib/index.js';
import { withLimiterApp } from '../harness/limiter-app.js';

// A message's life, as the app sees it through RedisLimitEvents: events in order and counters.
describe('DelayQueue events and counters', () => {
  const ctx = withLimiterApp();
  const queue = () => ctx.app.moduleRef.get(DelayQueueService);
  const events = () => ctx.app.moduleRef.get(RedisLimitEvents);

  async function until(check: () => boolean, ms = 10_000): Promise<void> {
    for (const deadline = Date.now() + ms; !check(); await sleep(20)) {
      if (Date.now() > deadline) throw new Error('timed out');
    }
  }

  it('enqueued, delivered, retry, delivered again, handled; then a message that dies', async () => {
    const seen: RedisLimitEvent[] = [];
    const stop = events().on((event) => 'queue' in event && event.queue === 'ev' && seen.push(event));
    let calls = 0;
    // both enqueues before any consumer: the second meets m1 still scheduled, whatever the load
    const id = await queue().enqueue('ev', 'flaky', { id: 'm1' });
    expect(id).toBe('m1');
    await queue().enqueue('ev', 'again', { id: 'm1', delayMs: 60_000 });
    const consumer = queue().consume(
      'ev',
      (message) => {
        calls += 1;
        if (message.payload === 'flaky' && message.attempt === 1) throw new Error('first try fails');
        if (message.payload === 'doomed') throw new Error('always fails');
      },
      { maxAttempts: 2, backoffMs: 20 },
    );
    try {
      await until(() => seen.some((e) => e.type === 'redis-limit.queue.handled'));
      await queue().enqueue('ev', 'doomed', { id: 'm2' });
      await until(() => seen.some((e) => e.type === 'redis-limit.queue.dead'));
    } finally {
      await consumer.stop();
      stop();
    }
    const of = (id: string) =>
      seen.filter((e) => 'id' in e && e.id === id).map((e) => [e.type.replace('redis-limit.queue.', ''), 'attempt' in e ? e.attempt : '-']);
    expect(of('m1')).toEqual([
      ['enqueued', '-'],
      ['enqueued', '-'],
      ['delivered', 1],
      ['retry', 1],
      ['delivered', 2],
      ['handled', 2],
    ]);
    expect(seen.filter((e) => e.type === 'redis-limit.queue.enqueued').map((e) => e.type === 'redis-limit.queue.enqueued' && e.scheduled)).toEqual([
      true,
      false,
      true,
    ]);
    // m2 is enqueued while the consumer is awake: the wake-up published inside the enqueue script
    // can reach the consumer (another connection) before the enqueue's own reply, so its
    // 'enqueued' event may come before or after the first delivery; the rest is ordered
    const m2 = of('m2');
    expect(m2.filter(([type]) => type === 'enqueued')).toEqual([['enqueued', '-']]);
    expect(m2.filter(([type]) => type !== 'enqueued')).toEqual([
      ['delivered', 1],
      ['retry', 1],
      ['delivered', 2],
      ['dead', 2],
    ]);
    const retry = seen.find((e) => e.type === 'redis-limit.queue.retry')!;
    expect(retry).toMatchObject({ error: expect.objectContaining({ message: 'first try fails' }), dueAt: expect.any(Number) });
    expect(calls).toBe(4);
    expect(events().counters().queues['ev']).toEqual({
      enqueued: 3,
      delivered: 4,
      handled: 1,
      retried: 2,
      retriedLater: 0,
      waited: 0,
      unacknowledged: 0,
      ticksMissed: 0,
      dead: 1,
      unrecoverable: 0,
      deadRetried: 0,
      deadPurged: 0,
    });
    expect(events().prometheus()).toContain('nest_redis_limit_queue_messages_total{queue="ev",event="dead"} 1\n');
  });
});
