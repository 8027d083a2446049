import { DelayQueueService, RedisLimitEvents, RetryLater, Unrecoverable, type DelayedMessage } from '../../lib/index.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { recordQueueEvents } from '../harness/queue-events.js';
import { until } from '../harness/until.js';
import { redisNow } from '../harness/server-time.js';

// What a handler can say besides "done" and "failed" (issue 30, item 3): RetryLater (no attempt;
// with pauseKey its rate key waits too, in every process), Unrecoverable (dead now), and how
// long a failure waits (backoff, jitter).
describe('DelayQueue handler outcomes', () => {
  const ctx = withLimiterApp();
  const queues = () => ctx.app.moduleRef.get(DelayQueueService);
  const eventsOf = recordQueueEvents(ctx);
  /** The Redis server's clock, which due times are on. */
  const serverNow = () => redisNow(ctx.app.raw);

  it('RetryLater runs the message again after its delay as the same attempt, never killing it, and records no error', async () => {
    const q = 'later';
    await queues().enqueue(q, { n: 1 }, { id: 'm' });
    const deliveries: { attempt: number; runAt: number; at: number }[] = [];
    const consumer = queues().consume(
      q,
      async (message) => {
        deliveries.push({ attempt: message.attempt, runAt: message.runAt, at: await serverNow() });
        if (deliveries.length <= 4) throw new RetryLater(150);
      },
      { maxAttempts: 1 },
    );
    try {
      await until(
        () => eventsOf('redis-limit.queue.handled', q).length === 1,
        20_000,
        () => `${deliveries.length} deliveries`,
      );
    } finally {
      await consumer.stop();
    }
    // maxAttempts 1, yet four RetryLaters and a fifth delivery: none was an attempt
    expect(deliveries.map((d) => d.attempt)).toEqual([1, 1, 1, 1, 1]);
    const later = eventsOf('redis-limit.queue.retry-later', q);
    expect(later.map((e) => [e.id, e.attempt, e.pausedKey])).toEqual(Array(4).fill(['m', 1, false]));
    later.forEach((event, i) => {
      // due at least the delay after the handler asked, and delivered as due then
      expect(event.dueAt - deliveries[i]!.at).toBeGreaterThanOrEqual(150);
      expect(deliveries[i + 1]!.runAt).toBe(event.dueAt);
      expect(deliveries[i + 1]!.at).toBeGreaterThanOrEqual(event.dueAt);
    });
    expect(eventsOf('redis-limit.queue.retry', q)).toEqual([]);
    expect(ctx.app.moduleRef.get(RedisLimitEvents).counters().queues[q]).toMatchObject({ retriedLater: 4, retried: 0, handled: 1, dead: 0 });
    expect(await queues().size(q)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
  });

  it('after a real failure, RetryLater keeps the attempt count and the error', async () => {
    const q = 'later-after-failure';
    await queues().enqueue(q, 'x', { id: 'm' });
    const attempts: number[] = [];
    const consumer = queues().consume(
      q,
      (message) => {
        attempts.push(message.attempt);
        if (attempts.length === 1) throw new Error('upstream 503');
        if (attempts.length === 2) throw new RetryLater(0);
        throw new Error('upstream 503 again');
      },
      { maxAttempts: 2, backoffMs: 0 },
    );
    try {
      await until(
        () => eventsOf('redis-limit.queue.dead', q).length === 1,
        20_000,
        () => `attempts ${attempts.join(', ')}`,
      );
    } finally {
      await consumer.stop();
    }
    // attempt 2 asked to retry later: the next delivery was attempt 2 again, whose failure killed it
    expect(attempts).toEqual([1, 2, 2]);
    const [dead] = (await queues().dead(q)).messages;
    expect(dead).toMatchObject({ id: 'm', attempts: 2, error: 'Error: upstream 503 again' });
  });

  it('Unrecoverable sends the message to the dead set at once, with its error, whatever attempts are left', async () => {
    const q = 'unrecoverable';
    await queues().enqueue(q, { url: 'https://gone.example' }, { id: 'm' });
    let calls = 0;
    const consumer = queues().consume(
      q,
      () => {
        calls += 1;
        throw new Unrecoverable('the endpoint answered 410 Gone');
      },
      { maxAttempts: 10 },
    );
    try {
      await until(
        () => eventsOf('redis-limit.queue.dead', q).length === 1,
        20_000,
        () => `${calls} calls`,
      );
    } finally {
      await consumer.stop();
    }
    expect(calls).toBe(1);
    expect(eventsOf('redis-limit.queue.dead', q)).toEqual([expect.objectContaining({ id: 'm', attempt: 1, unrecoverable: true })]);
    expect((await queues().dead(q)).messages).toEqual([
      expect.objectContaining({ id: 'm', attempts: 1, error: 'Unrecoverable: the endpoint answered 410 Gone' }),
    ]);
    expect(ctx.app.moduleRef.get(RedisLimitEvents).counters().queues[q]).toMatchObject({ dead: 1, unrecoverable: 1, retried: 0 });
  });

  it('a backoff function chooses each retry delay from the attempt and the error', async () => {
    const q = 'custom-backoff';
    await queues().enqueue(q, 'x', { id: 'm' });
    const asked: [number, string][] = [];
    const failedAt: number[] = [];
    const consumer = queues().consume(
      q,
      async (message) => {
        failedAt.push(await serverNow());
        throw new Error(`failure ${message.attempt}`);
      },
      {
        maxAttempts: 3,
        backoff: (attempt, error) => {
          asked.push([attempt, (error as Error).message]);
          return attempt * 200;
        },
      },
    );
    try {
      await until(
        () => eventsOf('redis-limit.queue.dead', q).length === 1,
        20_000,
        () => `asked ${JSON.stringify(asked)}`,
      );
    } finally {
      await consumer.stop();
    }
    // the last attempt dies: nothing to wait for, the function is not asked
    expect(asked).toEqual([
      [1, 'failure 1'],
      [2, 'failure 2'],
    ]);
    const retries = eventsOf('redis-limit.queue.retry', q);
    expect(retries.map((e) => e.attempt)).toEqual([1, 2]);
    retries.forEach((event, i) => expect(event.dueAt - failedAt[i]!).toBeGreaterThanOrEqual((i + 1) * 200));
  });

  it('RetryLater with pauseKey holds every message of that rate key until it is due, uncharged and as no attempt; other keys go on', async () => {
    const q = 'pause-key';
    const tenantOf = (message: DelayedMessage) => (message.payload as { tenant: string }).tenant;
    const handled: { id: string; attempt: number; at: number }[] = [];
    let throttled = false;
    const consumer = queues().consume(
      q,
      async (message) => {
        if (message.id === 'a-1' && !throttled) {
          throttled = true;
          // long enough that tenant b's message is surely handled within it on a busy machine
          throw new RetryLater(5000, { pauseKey: true });
        }
        handled.push({ id: message.id, attempt: message.attempt, at: await serverNow() });
      },
      { rateLimit: { limit: 1000, windowMs: 1000, key: tenantOf } },
    );
    try {
      await queues().enqueue(q, { tenant: 'a' }, { id: 'a-1' });
      await until(
        () => eventsOf('redis-limit.queue.retry-later', q).length === 1,
        20_000,
        () => 'no RetryLater',
      );
      // enqueued once the key is paused: tenant a's wait, tenant b's not
      for (const id of ['a-2', 'a-3', 'b-1']) await queues().enqueue(q, { tenant: id[0] }, { id });
      await until(
        () => handled.length === 4,
        20_000,
        () => `handled ${handled.map((h) => h.id).join(', ')}`,
      );
    } finally {
      await consumer.stop();
    }
    const [pause] = eventsOf('redis-limit.queue.retry-later', q);
    expect(pause).toMatchObject({ id: 'a-1', pausedKey: true });
    const at = (id: string) => handled.find((h) => h.id === id)!;
    // b went on while a was paused; a's messages ran only once the pause had ended
    expect(at('b-1').at).toBeLessThan(pause!.dueAt);
    for (const id of ['a-1', 'a-2', 'a-3']) expect(at(id).at).toBeGreaterThanOrEqual(pause!.dueAt);
    expect(handled.map((h) => h.attempt)).toEqual([1, 1, 1, 1]);
    expect(await queues().size(q)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
  });

  it('pauseKey without a rate key pauses the message alone', async () => {
    const q = 'pause-unkeyed';
    const handled: string[] = [];
    let throttled = false;
    const consumer = queues().consume(q, (message) => {
      if (message.id === 'first' && !throttled) {
        throttled = true;
        throw new RetryLater(60_000, { pauseKey: true });
      }
      handled.push(message.id);
    });
    try {
      await queues().enqueue(q, 'x', { id: 'first' });
      await until(
        () => eventsOf('redis-limit.queue.retry-later', q).length === 1,
        20_000,
        () => 'no RetryLater',
      );
      await queues().enqueue(q, 'y', { id: 'second' });
      await until(
        () => handled.includes('second'),
        20_000,
        () => 'second never handled',
      );
    } finally {
      await consumer.stop();
    }
    expect(eventsOf('redis-limit.queue.retry-later', q)).toEqual([expect.objectContaining({ id: 'first', pausedKey: false })]);
    expect(await queues().size(q)).toEqual({ scheduled: 1, inFlight: 0, dead: 0 });
  });
});
