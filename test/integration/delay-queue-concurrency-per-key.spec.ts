import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueService, RedisLimitEvents, RetryLater, type DelayedMessage } from '../../lib/index.js';
import { storedCount } from '../harness/fixed-windows.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { until } from '../harness/until.js';

// concurrencyPerKey: at most `limit` handlers per key at once across consumers (two consumers of
// one queue share slots in Redis as two processes do), waiting is no attempt, a key with a
// backlog holds up no other key, and a waiting message starts when a slot frees.

const tenantOf = (message: DelayedMessage) => (message.payload as { tenant: string }).tenant;

/** Handlers that run until let go, counting how many of each tenant run at once. */
function gatedHandlers() {
  const running = new Map<string, number>();
  const most = new Map<string, number>();
  const started: DelayedMessage[] = [];
  const gates = new Map<string, () => void>();
  return {
    started,
    most,
    running: (tenant: string) => running.get(tenant) ?? 0,
    handler: async (message: DelayedMessage) => {
      const tenant = tenantOf(message);
      started.push(message);
      running.set(tenant, (running.get(tenant) ?? 0) + 1);
      most.set(tenant, Math.max(most.get(tenant) ?? 0, running.get(tenant)!));
      await new Promise<void>((resolve) => gates.set(message.id, resolve));
      running.set(tenant, running.get(tenant)! - 1);
    },
    /** Lets the running handlers of `tenant` finish; how many there were. */
    finish(tenant?: string) {
      let n = 0;
      for (const m of started) {
        if (tenant !== undefined && tenantOf(m) !== tenant) continue;
        const gate = gates.get(m.id);
        if (gate) {
          gates.delete(m.id);
          gate();
          n += 1;
        }
      }
      return n;
    },
  };
}

describe('DelayQueue concurrencyPerKey', () => {
  const ctx = withLimiterApp();
  const queues = () => ctx.app.moduleRef.get(DelayQueueService);
  const key = (kind: string, q: string, scope?: string) => `${ctx.app.prefix}${kind}:${scope === undefined ? '' : `${scope}:`}{${q}}`;

  it('at most `limit` per key at once across consumers; a tenant with a backlog does not hold up one with 1', async () => {
    const q = 'exports';
    const busy = Array.from({ length: 30 }, (_, i) => `a-${String(i).padStart(2, '0')}`);
    const runAt = Date.now();
    // the busy tenant's messages come first in the claim order (same due time, ids sorted)
    for (const id of busy) await queues().enqueue(q, { tenant: 'a' }, { id, runAt });
    await queues().enqueue(q, { tenant: 'b' }, { id: 'b-1', runAt: runAt + 1 });
    const h = gatedHandlers();
    // a visibility timeout longer than the test: a waiting message can only start when a slot is freed
    const opts = { concurrency: 10, maxAttempts: 1, visibilityTimeoutMs: 120_000, concurrencyPerKey: { limit: 2, key: tenantOf } };
    const consumers = [0, 1].map(() => queues().consume(q, h.handler, opts));
    // b starts while a's two hold their slots
    await until(
      () => h.running('a') === 2 && h.running('b') === 1,
      15_000,
      () => `running: a ${h.running('a')}, b ${h.running('b')}`,
    );
    await sleep(300); // a third of `a` would show now
    expect(h.running('a')).toBe(2);
    // the rest of a waits, back in the queue and listed as waiting; none is pending admission
    const waiting = await ctx.app.raw.zrange(key('dqcw', q, 'a'), '0', '-1');
    expect(waiting).toHaveLength(busy.length - 2);
    expect(await ctx.app.raw.hlen(key('dqc', q, 'a'))).toBe(2);

    // each finished handler lets one waiting message in, at once (their wait is 120 s)
    let left = busy.length - 2;
    while (left > 0) {
      const before = h.started.length;
      const next = Math.min(2, left);
      expect(h.finish('a')).toBe(2);
      await until(
        () => h.started.length === before + next,
        15_000,
        () => `${h.started.length - before} of ${next} started`,
      );
      left -= next;
    }
    h.finish();
    await until(
      async () => (await queues().size(q)).inFlight === 0,
      15_000,
      () => 'in flight',
    );
    await Promise.all(consumers.map((c) => c.stop()));
    expect(h.most.get('a')).toBe(2);
    expect(h.started.map((m) => m.id).sort()).toEqual([...busy, 'b-1'].sort());
    // waiting is no attempt: each message ran once, as its first, and none died
    expect(h.started.every((m) => m.attempt === 1)).toBe(true);
    expect(await queues().size(q)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
    // each wait was counted (a message may wait more than once, if a claim finds its key full again)
    expect(ctx.app.moduleRef.get(RedisLimitEvents).counters().queues[q]!.waited).toBeGreaterThanOrEqual(busy.length - 2);
    // nothing is left behind: the slots and the waiting list are gone with the last handler
    expect(await ctx.app.raw.exists(key('dqc', q, 'a'), key('dqcw', q, 'a'), key('dqc', q, 'b'))).toBe(0);
  });

  it('a slot whose lease is gone is free: a consumer that died holds no slot once its lease ran out', async () => {
    const q = 'orphans';
    // a slot held by a claim whose message is no longer in flight (its consumer died, and the
    // lease ran out and was handed on, or the message was acknowledged since)
    await ctx.app.raw.hset(key('dqc', q, 't'), 'gone', '3');
    await queues().enqueue(q, { tenant: 't' }, { id: 'next' });
    const h = gatedHandlers();
    const consumer = queues().consume(q, h.handler, { concurrencyPerKey: { limit: 1, key: tenantOf } });
    await until(
      () => h.running('t') === 1,
      15_000,
      () => `${h.started.length} started`,
    );
    expect(await ctx.app.raw.hgetall(key('dqc', q, 't'))).toEqual({ next: expect.any(String) });
    h.finish();
    await consumer.stop();
  });

  it('with a rateLimit: a message takes a slot and a permit together, or neither', async () => {
    const q = 'both';
    for (const id of ['t-1', 't-2', 't-3']) await queues().enqueue(q, { tenant: 't' }, { id });
    const h = gatedHandlers();
    // 2 permits in a window longer than the test, 1 slot: t-1 runs; t-2 waits for the slot
    // uncharged; when t-1 ends, t-2 takes the second permit; t-3 is refused by the rate limit and
    // takes no slot
    const consumer = queues().consume(q, h.handler, {
      rateLimit: { limit: 2, windowMs: 600_000, algorithm: 'fixed-window', key: tenantOf },
      concurrencyPerKey: { limit: 1, key: tenantOf },
      visibilityTimeoutMs: 120_000,
    });
    await until(
      () => h.running('t') === 1,
      15_000,
      () => `${h.started.length} started`,
    );
    await sleep(300);
    expect(h.started.map((m) => m.id)).toEqual(['t-1']);
    expect(await storedCount(ctx.app.raw, key('dqr.fw4.600000', q, 't'), 600_000)).toBe('1');
    h.finish();
    await until(
      () => h.started.length === 2,
      15_000,
      () => `${h.started.length} started`,
    );
    h.finish();
    await until(
      async () => (await queues().size(q)).inFlight === 0 && h.running('t') === 0,
      15_000,
      () => 'in flight',
    );
    await sleep(300);
    await consumer.stop();
    expect(h.started.map((m) => m.id)).toEqual(['t-1', 't-2']);
    expect(await storedCount(ctx.app.raw, key('dqr.fw4.600000', q, 't'), 600_000)).toBe('2');
    // t-3 waits for the rate limit, holding no slot
    expect(await queues().size(q)).toEqual({ scheduled: 1, inFlight: 0, dead: 0 });
    expect(await ctx.app.raw.exists(key('dqc', q, 't'))).toBe(0);
  });

  it("a RetryLater with pauseKey holds the key's other messages until the pause ends, and no other key", async () => {
    const q = 'paused';
    const PAUSE_MS = 3_000;
    const starts: { id: string; at: number }[] = [];
    let thrownAt = 0;
    const consumer = queues().consume(
      q,
      (message) => {
        starts.push({ id: message.id, at: Date.now() });
        if (message.id === 't-1' && message.attempt === 1 && thrownAt === 0) {
          thrownAt = Date.now();
          throw new RetryLater(PAUSE_MS, { pauseKey: true });
        }
      },
      { concurrencyPerKey: { limit: 5, key: tenantOf } },
    );
    await queues().enqueue(q, { tenant: 't' }, { id: 't-1' });
    await until(
      () => thrownAt > 0,
      15_000,
      () => 'no throw',
    );
    for (const id of ['t-2', 't-3']) await queues().enqueue(q, { tenant: 't' }, { id });
    await queues().enqueue(q, { tenant: 'u' }, { id: 'u-1' });
    await until(
      () => starts.length === 5,
      20_000,
      () => starts.map((s) => s.id).join(', '),
    );
    await consumer.stop();
    // u ran at once; t's messages, t-1 again among them, only once the pause was over (the pause
    // is on the server's clock: 250 ms allow for the two clocks' difference here)
    const startOf = (id: string) => starts.filter((s) => s.id === id).at(-1)!.at;
    expect(startOf('u-1') - thrownAt).toBeLessThan(PAUSE_MS);
    for (const id of ['t-1', 't-2', 't-3']) expect(startOf(id) - thrownAt).toBeGreaterThanOrEqual(PAUSE_MS - 250);
    expect(await queues().size(q)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
  });

  it('a key function that throws fails its message as a handler would; the others run', async () => {
    const q = 'broken-key';
    await queues().enqueue(q, { tenant: 't' }, { id: 'fine' });
    await queues().enqueue(q, { nope: true }, { id: 'keyless' });
    const started: string[] = [];
    const consumer = queues().consume(q, (m) => void started.push(m.id), {
      maxAttempts: 1,
      concurrencyPerKey: {
        limit: 1,
        key: (m) => {
          const tenant = (m.payload as { tenant?: string }).tenant;
          if (tenant === undefined) throw new Error('no tenant');
          return tenant;
        },
      },
    });
    await until(
      async () => (await queues().size(q)).dead === 1 && started.length === 1,
      15_000,
      () => `${started.length} started`,
    );
    await consumer.stop();
    expect(started).toEqual(['fine']);
    const [dead] = (await queues().dead(q)).messages;
    expect(dead).toMatchObject({ id: 'keyless', error: 'Error: no tenant' });
  });
});
