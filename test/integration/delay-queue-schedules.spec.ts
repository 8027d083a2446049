import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueService, type DelayedMessage } from '../../lib/index.js';
import { MISSED_AFTER_MS } from '../../lib/delay-queue/recurring-ticks.js';
import { queueKeys, schedulesKey } from '../../lib/delay-queue/queue-keys.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { QueueReply } from '../../lib/redis/replies.js';
import { limiterModule, withLimiterApp, type LimiterApp } from '../harness/limiter-app.js';
import { recordQueueEvents } from '../harness/queue-events.js';
import { until } from '../harness/until.js';
import { redisNow } from '../harness/server-time.js';

// Recurring schedules (issue 31, item 1): one message per tick, id '<name>@<tick ms>', however
// many instances consume and however often the schedule is replaced; missed ticks not replayed.
describe('DelayQueue recurring schedules', () => {
  const ctx = withLimiterApp();
  const queues = () => ctx.app.moduleRef.get(DelayQueueService);
  const eventsOf = recordQueueEvents(ctx);
  const serverNow = () => redisNow(ctx.app.raw);
  const tickOf = (id: string) => Number(id.slice(id.lastIndexOf('@') + 1));
  /** Consumes `queue` until `count` messages ran; resolves them. */
  const firstTicks = async (queue: string, count: number) => {
    const seen: DelayedMessage[] = [];
    const consumer = queues().consume(queue, (message) => void seen.push(message));
    try {
      await until(
        () => seen.length >= count,
        20_000,
        () => `${seen.length} ticks`,
      );
    } finally {
      await consumer.stop();
    }
    return seen;
  };

  it('schedules an interval: its first tick is a message <name>@<tick>, and each tick runs once with the payload', async () => {
    const q = 'every';
    const before = await serverNow();
    const { nextRunAt } = await queues().schedule(q, 'beat', { everyMs: 250, payload: { kind: 'beat' } });
    // counted from the epoch: the first multiple of 250 after now
    expect(nextRunAt % 250).toBe(0);
    expect(nextRunAt).toBeGreaterThan(before);
    expect(nextRunAt).toBeLessThanOrEqual(before + 250 + 1000);
    expect(await queues().get(q, `beat@${nextRunAt}`)).toMatchObject({ state: 'scheduled', runAt: nextRunAt, attempts: 0, payload: { kind: 'beat' } });
    expect(await queues().schedules(q)).toEqual([{ queue: q, name: 'beat', spec: { payload: { kind: 'beat' }, everyMs: 250 }, nextRunAt, runs: 0 }]);

    const seen = await firstTicks(q, 3);
    const ticks = seen.map((m) => tickOf(m.id));
    expect(seen[0]!.id).toBe(`beat@${nextRunAt}`);
    expect(ticks.slice(1).map((t, i) => t - ticks[i]!)).toEqual(ticks.slice(1).map(() => 250));
    expect(seen.every((m) => m.runAt === tickOf(m.id) && m.attempt === 1)).toBe(true);
    expect(seen[0]!.payload).toEqual({ kind: 'beat' });
    const [listed] = await queues().schedules(q);
    expect(listed!.runs).toBeGreaterThanOrEqual(3);
    expect(listed!.nextRunAt).toBeGreaterThan(ticks.at(-1)!);

    expect(await queues().unschedule(q, 'beat')).toBe(true);
    expect(await queues().unschedule(q, 'beat')).toBe(false);
    expect(await queues().schedules(q)).toEqual([]);
    // its pending tick went with it
    expect((await queues().list(q, { state: 'scheduled' })).messages).toEqual([]);
  });

  it('the same spec again changes nothing; a changed one replaces the pending tick, never adding one', async () => {
    const q = 'upsert';
    const spec = { everyMs: 3_600_000, payload: 1 };
    const first = await queues().schedule(q, 'hourly', spec);
    for (let i = 0; i < 5; i++) expect(await queues().schedule(q, 'hourly', spec)).toEqual(first);
    const pending = async () => (await queues().list(q, { state: 'scheduled' })).messages;
    expect(await pending()).toEqual([{ id: `hourly@${first.nextRunAt}`, runAt: first.nextRunAt, attempts: 0, payload: 1 }]);
    // a new payload for the same tick: still one message, with it
    expect(await queues().schedule(q, 'hourly', { ...spec, payload: 2 })).toEqual(first);
    expect(await pending()).toEqual([{ id: `hourly@${first.nextRunAt}`, runAt: first.nextRunAt, attempts: 0, payload: 2 }]);
    // another interval: its own first tick, the old one gone
    const other = await queues().schedule(q, 'hourly', { everyMs: 7_200_000 });
    expect(other.nextRunAt % 7_200_000).toBe(0);
    expect((await pending()).map((m) => m.id)).toEqual([`hourly@${other.nextRunAt}`]);
    expect(await queues().schedules(q)).toEqual([
      { queue: q, name: 'hourly', spec: { payload: null, everyMs: 7_200_000 }, nextRunAt: other.nextRunAt, runs: 0 },
    ]);
    // a cron in a zone, stored with its zone
    const cron = await queues().schedule(q, 'nightly', { cron: '30 2 * * *', tz: 'America/New_York' });
    const [, nightly] = await queues().schedules(q);
    expect(nightly).toEqual({
      queue: q,
      name: 'nightly',
      spec: { payload: null, cron: '30 2 * * *', tz: 'America/New_York' },
      nextRunAt: cron.nextRunAt,
      runs: 0,
    });
    expect(new Date(cron.nextRunAt).toLocaleTimeString('en-US', { timeZone: 'America/New_York', hour12: false })).toBe('02:30:00');
    // every queue's, when no queue is named
    expect((await queues().schedules()).filter((s) => s.queue === q).map((s) => s.name)).toEqual(['hourly', 'nightly']);
  });

  it('limit and endAt end a schedule: no next tick, nextRunAt null', async () => {
    const q = 'limited';
    const seen: string[] = [];
    const consumer = queues().consume(q, (message) => void seen.push(message.id));
    try {
      await queues().schedule(q, 'twice', { everyMs: 100, limit: 2 });
      await until(
        async () => (await queues().schedules(q))[0]?.nextRunAt === null,
        20_000,
        async () => JSON.stringify(await queues().schedules(q)),
      );
      await sleep(400);
    } finally {
      await consumer.stop();
    }
    expect(seen).toHaveLength(2);
    expect((await queues().schedules(q))[0]).toMatchObject({ nextRunAt: null, runs: 2 });
    // the same spec again has nothing left to run
    await expect(queues().schedule(q, 'twice', { everyMs: 100, limit: 2 })).rejects.toThrow(/^spec\.limit: the schedule has run 2 of 2 times/);
    const now = await serverNow();
    await expect(queues().schedule(q, 'past', { everyMs: 100, endAt: now - 1000 })).rejects.toThrow(/^spec\.endAt leaves no tick after now/);
  });

  it('ticks missed while nothing ran are not replayed: the latest runs once, then the schedule goes on', async () => {
    const q = 'missed';
    const { nextRunAt } = await queues().schedule(q, 'm', { everyMs: 200 });
    // nothing consumes the queue for longer than a tick may be late
    await until(
      async () => (await serverNow()) > nextRunAt + MISSED_AFTER_MS + 400,
      20_000,
      () => 'clock',
    );
    const started = await serverNow();
    const seen = await firstTicks(q, 3);
    const ticks = seen.map((m) => tickOf(m.id));
    // the pending tick never ran; the first to run is the latest by then
    expect(ticks).not.toContain(nextRunAt);
    // and the consumer said so
    expect(eventsOf('redis-limit.queue.ticks-missed', q)).toEqual([
      { type: 'redis-limit.queue.ticks-missed', queue: q, schedule: 'm', from: nextRunAt, to: ticks[0] },
    ]);
    expect(ticks[0]).toBeGreaterThan(started - 200 - 1000);
    expect(ticks[0]).toBeLessThanOrEqual(started + 1000);
    expect(ticks.slice(1).map((t, i) => t - ticks[i]!)).toEqual(ticks.slice(1).map(() => 200));
  });

  // A late tick whose latest tick's message is there already (left by a replacement, and claimed
  // while the late one was still pending, so that claim advanced nothing) runs and advances: were
  // it dropped for the latest, the schedule would wait on a tick whose claim has passed (a96cc08).
  it("a late tick runs and advances when the latest tick's message is already in flight", async () => {
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const q = 'late-pair';
    const keys = { ...queueKeys(connection.keys, q), schedules: schedulesKey(connection.keys, q) };
    const { nextRunAt: first } = await queues().schedule(q, 'm', { everyMs: 1000 });
    const latest = first + 10_000;
    const now = latest + 100;
    await ctx.app.raw.zadd(keys.inFlight, now + 60_000, `m@${latest}`);
    await ctx.app.raw.hset(keys.data, `p:m@${latest}`, 'null', `a:m@${latest}`, '1', `t:m@${latest}`, 'tick m');
    const { messages } = await connection.scripts.call('queueClaim', { keys, args: { now, count: 10, visibilityMs: 60_000 } });
    expect(messages.map(({ id, source }) => ({ id, source }))).toEqual([{ id: `m@${first}`, source: 'tick m' }]);
    const version = Number(await ctx.app.raw.hget(keys.schedules, 'v:m'));
    const tick = { id: `m@${first}`, token: messages[0]!.token, version, next: first + 1000, latest };
    const { verdicts } = await connection.scripts.call('recurringAdvance', {
      keys,
      args: { now, wakeChannel: connection.keys.build('dqw', q), publish: 'PUBLISH', ticks: [tick] },
    });
    expect(verdicts.map((v) => v.verdict)).toEqual([QueueReply.RUN]);
    expect(await ctx.app.raw.hget(keys.schedules, 'n:m')).toBe(String(first + 1000));
    expect(await ctx.app.raw.zscore(keys.scheduled, `m@${first + 1000}`)).toBe(String(first + 1000));
  });

  it('3 instances, everyMs 100, replaced again and again: every tick once, none twice, none skipped', async () => {
    const q = 'exactly-once';
    const others: LimiterApp[] = [];
    for (let i = 0; i < 2; i++) others.push(await limiterModule(ctx.redis, { keyPrefix: ctx.app.prefix }));
    const services = [queues(), ...others.map((o) => o.moduleRef.get(DelayQueueService))];
    const ran: string[] = [];
    const consumers = services.map((service) => service.consume(q, (message) => void ran.push(message.id), { concurrency: 4 }));
    try {
      const { nextRunAt: first } = await queues().schedule(q, 'tick', { everyMs: 100, payload: 0 });
      // replaced from every instance, the same spec and new payloads, while it ticks
      for (let i = 1; i <= 30; i++) {
        await services[i % 3]!.schedule(q, 'tick', { everyMs: 100, payload: i % 2 });
        await sleep(100);
      }
      const { nextRunAt: last } = (await queues().schedules(q))[0]!;
      await queues().unschedule(q, 'tick');
      // every tick before the last one read has run (that one ran too if it was claimed first)
      await until(
        () => new Set(ran.filter((id) => tickOf(id) < last!)).size === (last! - first) / 100,
        20_000,
        () => `${new Set(ran).size} of ${(last! - first) / 100} ticks`,
      );
      await sleep(300);
      const ticks = ran.map(tickOf).sort((a, b) => a - b);
      expect(new Set(ticks).size).toBe(ticks.length);
      expect(ticks).toEqual(Array.from({ length: (ticks.at(-1)! - first) / 100 + 1 }, (_, i) => first + i * 100));
      expect(ticks.length).toBeGreaterThan(25);
    } finally {
      await Promise.all(consumers.map((c) => c.stop()));
      await Promise.all(others.map((o) => o.close()));
    }
  });

  it('refuses bad input, naming the argument', async () => {
    const q = queues();
    await expect(q.schedule('', 'n', { everyMs: 1000 })).rejects.toThrow(/^queue must be a non-empty string/);
    await expect(q.schedule('q', '', { everyMs: 1000 })).rejects.toThrow(/^name must be a non-empty string/);
    await expect(q.schedule('q', 'x'.repeat(1010), { everyMs: 1000 })).rejects.toThrow(RangeError);
    await expect(q.schedule('q', 'n', null as never)).rejects.toThrow(/^spec must be an object/);
    await expect(q.schedule('q', 'n', {})).rejects.toThrow(/^spec must give exactly one of cron and everyMs/);
    await expect(q.schedule('q', 'n', { everyMs: 1000, cron: '* * * * *' })).rejects.toThrow(/^spec must give exactly one/);
    await expect(q.schedule('q', 'n', { every: 1000 } as never)).rejects.toThrow(/^spec\.every is not an option/);
    await expect(q.schedule('q', 'n', { cron: '* * *' })).rejects.toThrow(/^spec\.cron must have 5 fields/);
    await expect(q.schedule('q', 'n', { cron: '61 * * * *' })).rejects.toThrow(/^spec\.cron is not a valid cron expression/);
    await expect(q.schedule('q', 'n', { cron: 5 as never })).rejects.toThrow(TypeError);
    await expect(q.schedule('q', 'n', { cron: '* * * * *', tz: 'Mars/Olympus' })).rejects.toThrow(RangeError);
    await expect(q.schedule('q', 'n', { cron: '* * * * *', tz: 'Mars/Olympus' })).rejects.toThrow(/^spec\.tz must be an IANA time zone/);
    await expect(q.schedule('q', 'n', { everyMs: 1000, tz: 'UTC' })).rejects.toThrow(/^spec\.tz goes with cron/);
    await expect(q.schedule('q', 'n', { everyMs: 0 })).rejects.toThrow(RangeError);
    await expect(q.schedule('q', 'n', { everyMs: 1.5 })).rejects.toThrow(/^spec\.everyMs must be a whole number/);
    await expect(q.schedule('q', 'n', { everyMs: '1000' as never })).rejects.toThrow(TypeError);
    await expect(q.schedule('q', 'n', { everyMs: 1000, startAt: new Date('x') })).rejects.toThrow(/^spec\.startAt must be a Date/);
    await expect(q.schedule('q', 'n', { everyMs: 1000, startAt: 2000, endAt: 1000 })).rejects.toThrow(/^spec\.endAt must not be before spec\.startAt/);
    await expect(q.schedule('q', 'n', { everyMs: 1000, limit: 0 })).rejects.toThrow(RangeError);
    await expect(q.schedule('q', 'n', { everyMs: 1000, payload: new Map() })).rejects.toThrow(/^spec\.payload/);
    await expect(q.unschedule('q', '')).rejects.toThrow(/^name /);
    await expect(q.schedules('')).rejects.toThrow(/^queue /);
    // nothing was written
    expect(await q.schedules('q')).toEqual([]);
  });
});
