import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueService, ExpiringHashService, type ExpiredField } from '../../lib/index.js';
import { ExpiringHashKeys } from '../../lib/expiring-hash/expiring-hash.keys.js';
import { EXPIRY_SOURCE, armingId, notificationRef } from '../../lib/expiring-hash/notifier.js';
import { sourceTag } from '../../lib/delay-queue/message-sources.js';
import { queueKeys } from '../../lib/delay-queue/queue-keys.js';
import { legacyTimerQueue } from '../../lib/expiring-hash/legacy-timers.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import type { ScriptReply } from '../../lib/redis/scripts.js';
import { EXPIRY_CASES, eventually } from '../harness/expiring-hash.js';
import { limiterModule, withLimiterApp } from '../harness/limiter-app.js';
import { until } from '../harness/until.js';

describe.each(EXPIRY_CASES)('expiry notifications, $name', ({ mode, server }) => {
  const ctx = withLimiterApp({ expiringHash: { mode, sweepIntervalMs: 100 } }, server);
  const hash = () => ctx.app.moduleRef.get(ExpiringHashService);
  const queues = () => ctx.app.moduleRef.get(DelayQueueService);
  let n = 0;

  /** Everything delivered on a fresh queue while `act` runs, until `expected` have come (however
   * long a loaded machine takes), and for `quietMs` after: time for a duplicate to show. */
  async function deliveries(act: (queue: string) => Promise<void>, expected: number, quietMs: number) {
    const queue = `expired-${mode}-${(n += 1)}`;
    const got: { message: ExpiredField; at: number }[] = [];
    const consumer = queues().consume<ExpiredField>(queue, ({ payload }) => {
      got.push({ message: payload, at: Date.now() });
    });
    try {
      await act(queue);
      await until(
        () => got.length >= expected,
        30_000,
        () => `${got.length} of ${expected} delivered: ${JSON.stringify(got.map((g) => g.message))}`,
      );
      await sleep(quietMs);
    } finally {
      await consumer.stop();
    }
    return got;
  }

  /** Field 'order-1' of a fresh hash, due in an hour with a notification to a fresh queue: the
   * module's sweeper leaves it, so a test hands it over itself. */
  async function armedForAnHour(label: string) {
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const keys = new ExpiringHashKeys(connection.keys, connection.options.expiringHash.sweepShards);
    const [key, queue] = [`${label}-${mode}`, `expired-${label}-${mode}`];
    await hash().set(key, 'order-1', 'unpaid', 3_600_000, { notify: queue });
    const outbox = keys.hash(key).outbox;
    const [name] = await ctx.app.raw.hkeys(outbox);
    return { key, queue, outbox, name: name! };
  }

  /** Enqueues a notification's message as the notifier does: with its id, marked as its own. */
  async function enqueueAsNotifier(queue: string, key: string, field: string, value: string, name: string) {
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const args = {
      id: armingId(key, field, name.split(':')[0]!),
      payload: JSON.stringify({ key, field, value }),
      runAt: '' as const,
      delayMs: 0,
      wakeChannel: connection.keys.build('dqw', queue),
      publish: 'PUBLISH' as const,
      source: sourceTag(EXPIRY_SOURCE, notificationRef(key, name)),
    };
    await connection.scripts.call('queueEnqueue', { keys: queueKeys(connection.keys, queue), args });
  }

  it('sends exactly one { key, field, value } per expired field', async () => {
    const got = await deliveries(
      async (queue) => {
        await Promise.all(Array.from({ length: 20 }, (_, i) => hash().set(`owner-${i % 3}`, `f${i}`, `value ${i}`, 100 + i * 10, { notify: queue })));
      },
      20,
      500,
    );
    expect(got.map((g) => g.message).sort((a, b) => a.field.localeCompare(b.field))).toEqual(
      Array.from({ length: 20 }, (_, i) => ({ key: `owner-${i % 3}`, field: `f${i}`, value: `value ${i}` })).sort((a, b) => a.field.localeCompare(b.field)),
    );
  });

  it('sends none for a field deleted or re-set before it expired, and follows expire and update', async () => {
    // ttls a loaded machine cannot outrun between the writes (150 ms ones expired mid-sequence)
    const TTL = 1_000;
    const started = Date.now();
    const got = await deliveries(
      async (queue) => {
        const key = `orders-${n}`;
        await hash().set(key, 'paid', 'p', TTL, { notify: queue });
        await hash().set(key, 'reset', 'r', TTL, { notify: queue });
        await hash().set(key, 'moved', 'm', TTL, { notify: queue });
        await hash().set(key, 'edited', 'old', TTL, { notify: queue });
        await hash().set(key, 'renewed', 'first', TTL, { notify: queue });
        await hash().delete(key, 'paid');
        await hash().set(key, 'reset', 'r2', TTL); // re-set without notify disarms
        expect(await hash().expire(key, 'moved', 2.5 * TTL)).toBe(true);
        expect(await hash().update(key, 'edited', 'new')).toBe(true);
        await hash().set(key, 'renewed', 'second', 1.5 * TTL, { notify: queue }); // re-armed once, for the new expiry
      },
      3,
      TTL,
    ); // (the wrong ones would have come at TTL, before 'moved' at 2.5 TTL)
    const byField = new Map(got.map((g) => [g.message.field, g]));
    expect(got.map((g) => g.message.field).sort()).toEqual(['edited', 'moved', 'renewed']);
    expect(byField.get('edited')!.message.value).toBe('new');
    expect(byField.get('renewed')!.message.value).toBe('second');
    expect(byField.get('moved')!.at - started).toBeGreaterThanOrEqual(2.5 * TTL - 10);
  });

  it('a field read after it expired still gets its one notification', async () => {
    const got = await deliveries(
      async (queue) => {
        await hash().set('reader', 'f', 'v', 50, { notify: queue });
        await sleep(60);
        expect(await hash().get('reader', 'f')).toBeNull();
        expect(await hash().count('reader')).toBe(0);
      },
      1,
      500,
    );
    expect(got.map((g) => g.message)).toEqual([{ key: 'reader', field: 'f', value: 'v' }]);
  });

  it('a write whose hash cannot be listed for its sweep fails whole, writing nothing (issue 13 #12)', async () => {
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const key = `registry-broken-${mode}`;
    const keys = new ExpiringHashKeys(connection.keys, connection.options.expiringHash.sweepShards);
    const { hash: hashKey, outbox: armedKey } = keys.hash(key);
    // the registry shard, made a string: the registration ahead of the write fails with WRONGTYPE
    const registry = keys.registryOf(key);
    const listed = await ctx.app.raw.dump(registry);
    await ctx.app.raw.del(registry);
    await ctx.app.raw.set(registry, 'not a sorted set');
    try {
      await hash().set(key, 'kept', 'v', 60_000);
      await expect(hash().setIfBelow(key, 'slot', 'v', 60_000, 2, { notify: 'q' })).rejects.toMatchObject({ code: 'SCRIPT_ERROR' });
      await expect(hash().set(key, 'other', 'v', 60_000, { notify: 'q' })).rejects.toMatchObject({ code: 'SCRIPT_ERROR' });
      expect(await ctx.app.raw.type(hashKey)).toBe('string'); // compact: one field with a ttl
      expect(await hash().getAll(key)).toEqual({ kept: 'v' });
      expect(await ctx.app.raw.hlen(armedKey)).toBe(0);
    } finally {
      await ctx.app.raw.del(registry);
      if (listed) await ctx.app.raw.restore(registry, 0, listed);
    }
    expect(await hash().setIfBelow(key, 'slot', 'v', 60_000, 2, { notify: 'q' })).toEqual({ accepted: true, count: 2 });
  });

  // A sweeper that dies after enqueueing a notification, before disarming it, leaves it armed; so
  // does a disarm that keeps failing. Its consumer disarms it before the ack, so the sweep that
  // comes after finds nothing to hand over again (before: a second message, once the first was
  // handled).
  it('delivers once when the disarm after the enqueue never happens', async () => {
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const scripts = connection.scripts;
    // the lowest call the runner has: every script the module calls passes it
    const send = scripts.send;
    const disarms: string[] = [];
    scripts.send = function (this: typeof scripts, name, call) {
      if (name !== 'hashNotify') return send.call(this, name, call);
      disarms.push(name);
      return Promise.reject(new Error('the sweeping process died here'));
    };
    try {
      const got = await deliveries(
        async (queue) => {
          await hash().set(`undisarmed-${mode}`, 'order-1', 'unpaid', 50, { notify: queue });
          await eventually(async () => disarms.length > 0);
        },
        1,
        5000,
      ); // past the handover lease (3 s) and the sweeps after it
      expect(got.map((g) => g.message)).toEqual([{ key: `undisarmed-${mode}`, field: 'order-1', value: 'unpaid' }]);
      const keys = new ExpiringHashKeys(connection.keys, connection.options.expiringHash.sweepShards);
      expect(await ctx.app.raw.hlen(keys.hash(`undisarmed-${mode}`).outbox)).toBe(0);
    } finally {
      scripts.send = send;
    }
  });

  // The notifier disarms what it enqueued (notify.lua): the hash's outbox loses the notification
  // ("<expiry>:<field>") and its handover record ("h:<expiry>:<field>"). Its consumer disarms it
  // too, so with no consumer running only the notifier can have emptied the outbox.
  it('disarms a delivered notification once it is enqueued, before any consumer handles it', async () => {
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const keys = new ExpiringHashKeys(connection.keys, connection.options.expiringHash.sweepShards);
    const key = `disarmed-${mode}`;
    const queue = `expired-disarmed-${mode}`;
    const outbox = keys.hash(key).outbox;
    await hash().set(key, 'order-1', 'unpaid', 100, { notify: queue });
    const armed = await ctx.app.raw.hkeys(outbox);
    expect(armed).toEqual([expect.stringMatching(/^\d+:order-1$/)]);
    const id = armingId(key, 'order-1', armed[0]!.split(':')[0]!);
    await until(
      async () => (await queues().size(queue)).scheduled === 1,
      15_000,
      () => 'the notification was not enqueued',
    );
    await until(
      async () => (await ctx.app.raw.hlen(outbox)) === 0,
      10_000,
      async () => `the outbox still holds ${JSON.stringify(await ctx.app.raw.hgetall(outbox))} after the enqueue`,
    );
    const got: string[] = [];
    const consumer = queues().consume(queue, (message) => void got.push(message.id));
    try {
      await until(
        async () => got.length > 0 && (await queues().size(queue)).inFlight === 0,
        10_000,
        () => 'not handled',
      );
    } finally {
      await consumer.stop();
    }
    expect(got).toEqual([id]);
    expect(await queues().size(queue)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
  });

  it('hands a notification over again only after its lease, and keeps a twice-handed one longer', async () => {
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const keys = new ExpiringHashKeys(connection.keys, connection.options.expiringHash.sweepShards);
    const key = `handover-${mode}`;
    const hashKeys = keys.hash(key);
    // an hour away, so the module's own sweeper leaves them; the scripts are given a later clock
    await hash().set(key, 'twice', 'a', 3_600_000, { notify: 'q' });
    await hash().set(key, 'once', 'b', 3_600_000, { notify: 'q' });
    const names = await ctx.app.raw.hkeys(hashKeys.outbox);
    const expiry = Math.max(...names.map((name) => Number(name.split(':')[0])));
    const sweep = (now: number) => connection.scripts.call('hashSweep', { keys: hashKeys, args: { now, budget: 250, handoverMs: 3000 } });
    const handled = (now: number, field: string) => {
      const name = names.find((one) => one.endsWith(`:${field}`))!;
      return connection.scripts.call('hashDisarmHandled', { keys: hashKeys, args: { now, name, graceMs: 10_000 } });
    };
    const t = expiry + 1;
    const handedAt = ({ notices }: ScriptReply<'hashSweep'>) => notices.map(({ name }) => name.split(':')[1]).sort();
    expect(handedAt(await sweep(t))).toEqual(['once', 'twice']);
    const during = await sweep(t + 2999);
    expect(handedAt(during)).toEqual([]);
    expect(during.next).toBe(t + 3000); // when the lease ends: the registry comes back then
    expect(await handled(t + 2999, 'once')).toBe(0); // handed over once: its message is the one
    expect(handedAt(await sweep(t + 3000))).toEqual(['twice']);
    // a second handover's enqueue may still be on its way: keep the message until its grace ends
    expect(await handled(t + 4000, 'twice')).toBe(9000);
    expect(await ctx.app.raw.hlen(hashKeys.outbox)).toBe(0);
    expect(await handled(t + 4000, 'twice')).toBe(0); // disarmed already
    expect(handedAt(await sweep(t + 10_000))).toEqual([]);
  });

  // Only the notifier's mark makes a message a notification: a user's message with the same id and
  // payload is handled as a user's, and the field's notification stays armed.
  it("never takes a user's message for a notification", async () => {
    const { key, queue, outbox, name } = await armedForAnHour('lookalike');
    const id = armingId(key, 'order-1', name.split(':')[0]!);
    await queues().enqueue(queue, { key, field: 'order-1', value: 'unpaid' }, { id });
    const got: string[] = [];
    const consumer = queues().consume(queue, (message) => void got.push(message.id));
    try {
      await until(
        async () => got.length === 1 && (await queues().size(queue)).inFlight === 0,
        15_000,
        () => `handled ${JSON.stringify(got)}`,
      );
    } finally {
      await consumer.stop();
    }
    expect(got).toEqual([id]);
    expect(await ctx.app.raw.hkeys(outbox)).toEqual([name]);
  });

  it("keeps a twice-handed notification before its ack without taking a handler's room", async () => {
    const { key, queue, outbox, name } = await armedForAnHour('held');
    const expiry = name.split(':')[0]!;
    // as if handed over a second time 6 s ago: its enqueue may land for 4 s more
    const [seconds, micros] = await ctx.app.raw.time();
    await ctx.app.raw.hset(outbox, `h:${name}`, `${Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - 6000}:2`);
    await enqueueAsNotifier(queue, key, 'order-1', 'unpaid', name);
    await queues().enqueue(queue, 'other', { id: 'other' });
    const handled = new Map<string, number>();
    const consumer = queues().consume(queue, ({ id }) => void handled.set(id, Date.now()), { concurrency: 1 });
    try {
      await eventually(async () => handled.size === 2, 20_000);
      expect(await ctx.app.raw.hlen(outbox)).toBe(0); // disarmed
      const { inFlight } = await queues().size(queue);
      expect(inFlight).toBe(1); // the notification, held
      expect(Math.abs(handled.get('other')! - handled.get(armingId(key, 'order-1', expiry))!)).toBeLessThan(2000);
      await eventually(async () => (await queues().size(queue)).inFlight === 0, 10_000);
    } finally {
      await consumer.stop();
    }
    expect(await queues().size(queue)).toMatchObject({ scheduled: 0, inFlight: 0 });
  });

  // 0.1 found a notification by a timer message on an internal queue, 0.2 through the sweep
  // registry (which never listed a 0.1 hash in native mode): a lapse armed before the upgrade is
  // still notified, once, and the old queue is emptied and left.
  it('delivers a notification armed by 0.1 through its timer queue, once, and drains the queue', async () => {
    const app = await limiterModule(ctx.redis, { expiringHash: { mode, sweepIntervalMs: 100 } });
    try {
      const connection = app.moduleRef.get(RedisConnection);
      const keys = new ExpiringHashKeys(connection.keys, connection.options.expiringHash.sweepShards);
      const key = `from-0.1-${mode}`;
      const expiry = Date.now() + 300;
      const queue = `expired-legacy-${mode}`;
      // what 0.1 left: the arming in the hash's outbox, the timer due at the expiry
      await app.raw.hset(keys.hash(key).outbox, `${expiry}:order-1`, JSON.stringify({ q: queue, v: 'unpaid' }));
      const timers = legacyTimerQueue(keys.shardOf(key));
      await app.moduleRef.get(DelayQueueService).enqueue(timers, { k: key, f: 'order-1', e: expiry }, { runAt: expiry });
      const got: ExpiredField[] = [];
      const consumer = app.moduleRef.get(DelayQueueService).consume<ExpiredField>(queue, ({ payload }) => void got.push(payload));
      await app.moduleRef.get(ExpiringHashService).get('someone', 'else'); // the first call starts the sweeper
      await eventually(async () => got.length > 0);
      await eventually(async () => {
        const { scheduled, inFlight } = await app.moduleRef.get(DelayQueueService).size(timers);
        return scheduled + inFlight === 0;
      });
      await sleep(500);
      await consumer.stop();
      expect(got).toEqual([{ key, field: 'order-1', value: 'unpaid' }]);
      expect(await app.raw.hlen(keys.hash(key).outbox)).toBe(0);
    } finally {
      await app.close();
    }
  });
});
