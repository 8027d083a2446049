import { DelayQueueService, type DelayedMessage } from '../../lib/index.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { until } from '../harness/until.js';

// enqueueMany: many messages of one queue in bounded script calls, each as enqueue would.
describe('DelayQueue enqueueMany', () => {
  const ctx = withLimiterApp();
  const queues = () => ctx.app.moduleRef.get(DelayQueueService);
  const scheduledKey = (q: string) => `${ctx.app.prefix}dqs:{${q}}`;

  it('schedules every message over several calls, ids in order, runAt and delayMs as enqueue takes them', async () => {
    const q = 'many';
    const far = Date.now() + 3_600_000;
    const messages = Array.from({ length: 2500 }, (_, i) => ({ payload: { i }, id: `m-${i}`, runAt: far + i }));
    expect(await queues().enqueueMany(q, messages)).toEqual(messages.map((m) => m.id));
    expect(await queues().size(q)).toEqual({ scheduled: 2500, inFlight: 0, dead: 0 });
    expect(Number(await ctx.app.raw.zscore(scheduledKey(q), 'm-2499'))).toBe(far + 2499);

    const [generated, delayed] = await queues().enqueueMany(q, [{ payload: 'a' }, { payload: 'b', delayMs: 60_000 }]);
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    const [s, us] = await ctx.app.raw.time();
    const serverNow = Number(s) * 1000 + Math.floor(Number(us) / 1000);
    const due = Number(await ctx.app.raw.zscore(scheduledKey(q), delayed!));
    expect(due).toBeGreaterThan(serverNow + 50_000);
    expect(due).toBeLessThanOrEqual(serverNow + 60_000);
  });

  it('an id already scheduled, or given twice, is scheduled once and keeps its first payload and time', async () => {
    const q = 'dupes';
    await queues().enqueue(q, 'old', { id: 'x', delayMs: 3_600_000 });
    await queues().enqueueMany(q, [
      { payload: 'new', id: 'x' },
      { payload: 'first', id: 'y' },
      { payload: 'second', id: 'y', delayMs: 3_600_000 },
    ]);
    expect(await queues().size(q)).toEqual({ scheduled: 2, inFlight: 0, dead: 0 });
    const got: DelayedMessage[] = [];
    const consumer = queues().consume(q, (m) => void got.push(m));
    await until(
      () => got.length === 1,
      10_000,
      () => 'y not delivered',
    );
    await consumer.stop();
    expect(got.map((m) => [m.id, m.payload])).toEqual([['y', 'first']]);
  });

  it('wakes a waiting consumer, and refuses bad input before sending anything', async () => {
    const q = 'wake';
    const got: string[] = [];
    const consumer = queues().consume(q, (m) => void got.push(m.id));
    await until(
      async () => (await ctx.redis.subscribers(`${ctx.app.prefix}dqw:{${q}}`)) >= 1,
      10_000,
      () => 'not subscribed',
    );
    await queues().enqueueMany(q, [{ payload: 1, id: 'soon', delayMs: 100 }]);
    await until(
      () => got.length === 1,
      4000,
      () => 'not woken',
    ); // below the 5 s idle re-check: woken by enqueueMany's publish
    await consumer.stop();

    const bad = (messages: unknown) => () => queues().enqueueMany('bad', messages as never);
    await expect(bad('x')).rejects.toThrow(new TypeError('messages must be an array of { payload, id?, delayMs?, runAt? }'));
    await expect(bad([{ payload: 1 }, null])).rejects.toThrow(/^messages\[1\] must be an object/);
    await expect(bad([{ payload: 1 }, { payload: () => 1 }])).rejects.toThrow(/^messages\[1\]\.payload/);
    await expect(bad([{ payload: 1, id: '' }])).rejects.toThrow(/^messages\[0\]\.id must be a non-empty string/);
    await expect(bad([{ payload: 1, delayMs: -1 }])).rejects.toThrow(RangeError);
    expect(await queues().size('bad')).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
  });
});
