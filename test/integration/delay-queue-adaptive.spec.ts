import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueService, RedisLimitEvents, RetryLater } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { QueueReply } from '../../lib/redis/replies.js';
import { awayFromWindowEnd } from '../harness/fixed-windows.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { recordQueueEvents } from '../harness/queue-events.js';
import { until } from '../harness/until.js';

// rateLimit.adaptive (issue 30 item 5): a RetryLater with pauseKey halves its rate key's limit
// (not below 1, at most once a window), each window without one adds 1 back up to the configured
// limit, and the state is Redis's, shared by every process.
describe('DelayQueue adaptive rate limits', () => {
  const ctx = withLimiterApp();
  const queues = () => ctx.app.moduleRef.get(DelayQueueService);
  const eventsOf = recordQueueEvents(ctx);

  it('the scripts halve once a window, never below 1, and add 1 back a window up to the limit (explicit times)', async () => {
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const queue = 'adaptive-lua';
    const { scheduled, inFlight, dead, data } = queues()['keys'](queue);
    const keys = [scheduled, inFlight, dead, data];
    const counter = connection.keys.build('dqr.fw4.1000', queue, 'k');
    const pace = connection.keys.build('dqp.fw4.1000', queue, 'k');
    const LIMIT = 8;
    const T0 = 2_000_000_000_000; // a multiple of the 1 s window
    let next = 0;
    /** `n` messages in flight, each held by claim token 1, as claim.lua leaves them. */
    const lease = async (n: number) => {
      const ids = Array.from({ length: n }, () => `m${(next += 1)}`);
      for (const id of ids) {
        await ctx.app.raw.zadd(inFlight, T0 + 3_600_000, id);
        await ctx.app.raw.hset(data, `a:${id}`, '1');
      }
      return ids;
    };
    /** How many of `n` messages admit.lua lets start at `now`. */
    const admitted = async (now: number, n: number) => {
      const ids = await lease(n);
      const reply = (await connection.scripts.run(
        'queueAdmit',
        [...keys, ...ids.flatMap(() => [counter, pace, pace, pace, pace])],
        [now, 'fw', LIMIT, 1000, '1', 0, 0, ...ids.flatMap((id) => [id, 1])],
      )) as number[];
      return reply.filter((code) => code === QueueReply.ADMITTED).length;
    };
    /** The key's limit after a RetryLater with pauseKey at `now`. */
    const halvedAt = async (now: number) => {
      const [id] = await lease(1);
      const [due, limit] = (await connection.scripts.run('queueRetryLater', [...keys, pace], [now, id!, 0, 1, LIMIT, 1000])) as number[];
      expect(due).toBe(now);
      return limit;
    };

    expect(await admitted(T0, 10)).toBe(LIMIT);
    expect(await halvedAt(T0 + 10)).toBe(4);
    // the messages in flight when the upstream first refused say nothing new: once a window
    expect(await halvedAt(T0 + 20)).toBe(4);
    expect(await halvedAt(T0 + 1_009)).toBe(4);
    // the refusal at T0 + 1_009 came in the window after the halving: that window adds nothing
    expect(await admitted(T0 + 1_010, 10)).toBe(4);
    // a whole window without a refusal: 1 back
    expect(await admitted(T0 + 2_009, 10)).toBe(5);
    expect(await halvedAt(T0 + 2_020)).toBe(2);
    expect(await halvedAt(T0 + 3_100)).toBe(1);
    expect(await halvedAt(T0 + 4_200)).toBe(1);
    expect(await halvedAt(T0 + 5_300)).toBe(1);
    expect(await admitted(T0 + 5_400, 10)).toBe(1);
    // 7 windows later it is whole again, and never more
    expect(await admitted(T0 + 5_300 + 7_000, 10)).toBe(LIMIT);
    expect(await admitted(T0 + 5_300 + 60_000, 20)).toBe(LIMIT);
    // not adaptive: the limit is the configured one whatever the pace hash holds
    const ids = await lease(10);
    const plain = (await connection.scripts.run(
      'queueAdmit',
      [...keys, ...ids.flatMap(() => [counter, pace, pace, pace, pace])],
      [T0 + 5_300 + 120_000, 'fw', LIMIT, 1000, '0', 0, 0, ...ids.flatMap((id) => [id, 1])],
    )) as number[];
    expect(plain.filter((code) => code === QueueReply.ADMITTED)).toHaveLength(LIMIT);
  });

  it('a consumer halves its key on an upstream 429, reports it, and starts no more than the halved limit in the window', async () => {
    const q = 'adaptive';
    const WINDOW_MS = 60_000;
    // one fixed window for the whole test: a new one would add 1 back
    await awayFromWindowEnd(WINDOW_MS, 25_000);
    const started: string[] = [];
    // the upstream refuses once: refusing until the test noticed raced the 20 ms retries
    let refused = false;
    const consumer = queues().consume(
      q,
      (message) => {
        started.push(message.id);
        if (!refused && message.id === 'first') {
          refused = true;
          throw new RetryLater(20, { pauseKey: true });
        }
      },
      { rateLimit: { limit: 8, windowMs: WINDOW_MS, algorithm: 'fixed-window', key: () => 'upstream', adaptive: true } },
    );
    try {
      await queues().enqueue(q, {}, { id: 'first' });
      await until(
        () => eventsOf('redis-limit.queue.retry-later', q).length === 1,
        20_000,
        () => `started ${started.join(', ')}`,
      );
      expect(eventsOf('redis-limit.queue.retry-later', q)[0]).toMatchObject({ id: 'first', pausedKey: true, adaptiveLimit: 4 });
      expect(ctx.app.moduleRef.get(RedisLimitEvents).counters().adaptiveLimits[q]).toEqual({ upstream: 4 });
      expect(ctx.app.moduleRef.get(RedisLimitEvents).prometheus()).toContain('nest_redis_limit_queue_adaptive_limit{queue="adaptive",key="upstream"} 4\n');

      // 4 starts in the window, 'first' once or twice among them (its retry, due 20 ms on, races
      // the new messages): each was charged, and the rest wait for the next window
      for (let i = 0; i < 10; i++) await queues().enqueue(q, {}, { id: `m${i}` });
      const settled = async () => JSON.stringify(await queues().size(q)) === JSON.stringify({ scheduled: 8, inFlight: 0, dead: 0 });
      await until(
        async () => started.length >= 4 && (await settled()),
        20_000,
        async () => `started ${started.join(', ')}; ${JSON.stringify(await queues().size(q))}`,
      );
      await sleep(500);
      expect(started).toHaveLength(4);
      expect(await queues().size(q)).toEqual({ scheduled: 8, inFlight: 0, dead: 0 });
    } finally {
      await consumer.stop();
    }
  });
});
