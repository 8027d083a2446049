import { DelayQueueService, RetryLater, Unrecoverable, type DelayedMessage } from '../../lib/index.js';
import { limiterModule, withLimiterApp } from '../harness/limiter-app.js';
import { recordQueueEvents } from '../harness/queue-events.js';
import { scriptCalls } from '../harness/script-calls.js';
import { until } from '../harness/until.js';
import { redisNow } from '../harness/server-time.js';

// Seeing inside a queue (issue 31, item 2): get, list and explain, from the state the scripts keep.
describe('DelayQueue get, list and explain', () => {
  const ctx = withLimiterApp();
  const queues = () => ctx.app.moduleRef.get(DelayQueueService);
  const eventsOf = recordQueueEvents(ctx);
  const ISO = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';
  const serverNow = () => redisNow(ctx.app.raw);
  /** A handler that holds its message until `open()`. */
  const gated = () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    return { gate, open };
  };

  it('get and explain a scheduled message; unknown ids are null and "unknown"', async () => {
    const q = 'inspect-scheduled';
    const before = await serverNow();
    await queues().enqueue(q, { order: 7 }, { id: 'later', delayMs: 60_000 });
    await queues().enqueue(q, { order: 8 }, { id: 'now' });

    const later = await queues().get<{ order: number }>(q, 'later');
    expect(later).toEqual({ id: 'later', state: 'scheduled', runAt: expect.any(Number), attempts: 0, payload: { order: 7 } });
    expect(later!.runAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(later!.runAt).toBeLessThan(before + 70_000);
    expect(await queues().explain(q, 'later')).toMatch(new RegExp(`^due in \\d+ ms, at ${ISO}$`));
    // nothing consumes this queue: a due message waits for a consumer
    expect(await queues().explain(q, 'now')).toMatch(new RegExp(`^due since ${ISO} \\(\\d+ ms ago\\): waiting for a consumer to claim it$`));

    expect(await queues().get(q, 'nope')).toBeNull();
    expect(await queues().explain(q, 'nope')).toMatch(/^unknown: queue "inspect-scheduled" holds no message "nope"/);
    expect(await queues().get('no-such-queue', 'later')).toBeNull();
  });

  it('explain is one script call', async () => {
    const q = 'inspect-one-call';
    await queues().enqueue(q, 1, { id: 'm' });
    const before = await scriptCalls(ctx.redis);
    await queues().explain(q, 'm');
    expect((await scriptCalls(ctx.redis)) - before).toBe(1);
  });

  it('lists scheduled messages in due order, then by id, across pages; in-flight ones by lease', async () => {
    const q = 'inspect-list';
    const runAt = (await serverNow()) + 600_000;
    // ties on runAt are common (a burst): the cursor must break them by id
    const ids = ['b', 'a', 'c', 'e', 'd'];
    for (const id of ids) await queues().enqueue(q, { id }, { id, runAt });
    await queues().enqueue(q, { id: 'first' }, { id: 'first', runAt: runAt - 1000 });
    await queues().enqueue(q, { id: 'last' }, { id: 'last', runAt: runAt + 1000 });

    const seen: { id: string; runAt: number; attempts: number; payload: unknown }[] = [];
    let page = await queues().list(q, { state: 'scheduled', limit: 2 });
    let pages = 1;
    while (page.cursor !== null) {
      seen.push(...page.messages);
      page = await queues().list(q, { state: 'scheduled', limit: 2, cursor: page.cursor });
      pages += 1;
    }
    seen.push(...page.messages);
    expect(pages).toBe(4);
    expect(seen.map((m) => m.id)).toEqual(['first', 'a', 'b', 'c', 'd', 'e', 'last']);
    expect(seen[0]).toEqual({ id: 'first', runAt: runAt - 1000, attempts: 0, payload: { id: 'first' } });
    expect(seen.slice(1, 6).every((m) => m.runAt === runAt)).toBe(true);
    expect(await queues().list(q, { state: 'in-flight' })).toEqual({ messages: [], cursor: null });
    // a message that moves on between pages does not break the next page
    const first = await queues().list(q, { state: 'scheduled', limit: 3 });
    await queues().cancel(q, first.messages.at(-1)!.id);
    expect((await queues().list(q, { state: 'scheduled', limit: 10, cursor: first.cursor })).messages.map((m) => m.id)).toEqual(['c', 'd', 'e', 'last']);
  });

  it('an in-flight message: its runAt and attempt, leased by this process or another', async () => {
    const q = 'inspect-in-flight';
    const { gate, open } = gated();
    const started: DelayedMessage[] = [];
    const consumer = queues().consume(
      q,
      async (message) => {
        started.push(message);
        await gate;
      },
      { visibilityTimeoutMs: 60_000 },
    );
    const other = await limiterModule(ctx.redis, { keyPrefix: ctx.app.prefix });
    try {
      await queues().enqueue(q, { n: 1 }, { id: 'held' });
      await until(
        () => started.length === 1,
        20_000,
        () => 'not delivered',
      );
      const got = await queues().get(q, 'held');
      expect(got).toEqual({ id: 'held', state: 'in-flight', runAt: started[0]!.runAt, attempts: 1, payload: { n: 1 } });
      expect(await queues().list(q, { state: 'in-flight' })).toEqual({
        messages: [{ id: 'held', runAt: started[0]!.runAt, attempts: 1, payload: { n: 1 } }],
        cursor: null,
      });
      expect(await queues().explain(q, 'held')).toMatch(new RegExp(`^leased by this process, claim 1, attempt 1, lease until ${ISO} \\(in \\d+ ms\\)$`));
      // another module on the same Redis holds no lease of it
      expect(await other.moduleRef.get(DelayQueueService).explain(q, 'held')).toMatch(/^leased by another process, claim 1, attempt 1, lease until /);
    } finally {
      open();
      await consumer.stop();
      await other.close();
    }
    expect(await queues().get(q, 'held')).toBeNull();
  });

  it('a dead message: its error, attempts and the runAt of its last delivery', async () => {
    const q = 'inspect-dead';
    const runAts: number[] = [];
    const consumer = queues().consume(q, (message) => {
      runAts.push(message.runAt);
      throw new Unrecoverable('the card was declined');
    });
    try {
      await queues().enqueue(q, { n: 1 }, { id: 'gone' });
      await until(
        () => eventsOf('redis-limit.queue.dead', q).length === 1,
        20_000,
        () => 'not dead',
      );
    } finally {
      await consumer.stop();
    }
    expect(await queues().get(q, 'gone')).toEqual({ id: 'gone', state: 'dead', runAt: runAts[0], attempts: 1, payload: { n: 1 } });
    expect(await queues().explain(q, 'gone')).toMatch(new RegExp(`^dead: Unrecoverable: the card was declined \\(died at ${ISO}, after 1 attempt\\)$`));
    // brought back, it starts afresh: nothing of its last delivery shows
    await queues().retryDead(q, ['gone']);
    expect(await queues().get(q, 'gone')).toMatchObject({ state: 'scheduled', attempts: 0 });
    expect(await queues().explain(q, 'gone')).toMatch(/^due since /);
  });

  it("a message over its key's rate limit waits for that key; RetryLater pauses it, and with pauseKey its key", async () => {
    const q = 'inspect-rate';
    const handled: string[] = [];
    const consumer = queues().consume<{ tenant: string }>(
      q,
      (message) => {
        if (message.id === 'later') throw new RetryLater(60_000);
        if (message.id === 'pauser') throw new RetryLater(60_000, { pauseKey: true });
        handled.push(message.id);
      },
      { rateLimit: { limit: 1, windowMs: 600_000, key: (m) => m.payload.tenant } },
    );
    try {
      await queues().enqueue(q, { tenant: 'a:1' }, { id: 'a-1' });
      await queues().enqueue(q, { tenant: 'a:1' }, { id: 'a-2' });
      await queues().enqueue(q, { tenant: 'b' }, { id: 'later' });
      await queues().enqueue(q, { tenant: 'c' }, { id: 'pauser' });
      await until(
        () => handled.length === 1 && eventsOf('redis-limit.queue.retry-later', q).length === 2,
        20_000,
        () => `handled ${handled.join(', ')}`,
      );
      await queues().enqueue(q, { tenant: 'c' }, { id: 'c-2' });
      const waiting = handled[0] === 'a-1' ? 'a-2' : 'a-1';
      // the key's name comes back as the key function gave it, ':' and all
      await until(
        async () => (await queues().explain(q, waiting)).startsWith('waiting for key "a:1"'),
        20_000,
        async () => queues().explain(q, waiting),
      );
      expect(await queues().explain(q, waiting)).toMatch(new RegExp(`^waiting for key "a:1"'s rate limit until ${ISO} \\(in \\d+ ms\\)$`));
      expect(await queues().get(q, waiting)).toMatchObject({ state: 'scheduled', attempts: 0 });
      expect(await queues().explain(q, 'later')).toMatch(new RegExp(`^paused by RetryLater until ${ISO} \\(in \\d+ ms\\)$`));
      expect(await queues().get(q, 'later')).toMatchObject({ state: 'scheduled', attempts: 0 });
      await until(
        async () => (await queues().explain(q, 'c-2')).startsWith('waiting: '),
        20_000,
        async () => queues().explain(q, 'c-2'),
      );
      expect(await queues().explain(q, 'c-2')).toMatch(new RegExp(`^waiting: key "c" is paused by RetryLater until ${ISO} \\(in \\d+ ms\\)$`));
    } finally {
      await consumer.stop();
    }
  });

  it("a message whose key's every concurrency slot is taken waits for a slot of that key", async () => {
    const q = 'inspect-slots';
    const { gate, open } = gated();
    const started: string[] = [];
    const consumer = queues().consume<{ tenant: string }>(
      q,
      async (message) => {
        started.push(message.id);
        await gate;
      },
      { concurrency: 4, concurrencyPerKey: { limit: 1, key: (m) => m.payload.tenant } },
    );
    try {
      await queues().enqueue(q, { tenant: 't' }, { id: 't-1' });
      await until(
        () => started.length === 1,
        20_000,
        () => 'not started',
      );
      await queues().enqueue(q, { tenant: 't' }, { id: 't-2' });
      await until(
        async () => (await queues().explain(q, 't-2')).startsWith('waiting for a concurrency slot'),
        20_000,
        async () => queues().explain(q, 't-2'),
      );
      expect(await queues().explain(q, 't-2')).toMatch(new RegExp(`^waiting for a concurrency slot of key "t": due once one frees, ${ISO} at the latest$`));
      expect(await queues().get(q, 't-2')).toMatchObject({ state: 'scheduled', attempts: 0 });
    } finally {
      open();
      await until(
        () => started.length === 2,
        20_000,
        () => `started ${started.join(', ')}`,
      );
      await consumer.stop();
    }
  });

  it('refuses bad input, naming the argument', async () => {
    const q = queues();
    await expect(q.get('', 'x')).rejects.toThrow(/^queue must be a non-empty string/);
    await expect(q.get('q', 42 as unknown as string)).rejects.toThrow(TypeError);
    await expect(q.get('q', 42 as unknown as string)).rejects.toThrow(/^id /);
    await expect(q.explain('q', '')).rejects.toThrow(/^id /);
    await expect(q.list('q', undefined as never)).rejects.toThrow(/^opts must be an object/);
    await expect(q.list('q', { state: 'dead' as never })).rejects.toThrow(/^opts\.state must be 'scheduled' or 'in-flight'/);
    await expect(q.list('q', { state: 'scheduled', limit: 0 })).rejects.toThrow(RangeError);
    await expect(q.list('q', { state: 'scheduled', limit: 1001 })).rejects.toThrow(/^opts\.limit must be an integer from 1 to 1000/);
    await expect(q.list('q', { state: 'scheduled', cursor: 'nope!' })).rejects.toThrow(/^opts\.cursor must be a cursor returned by list\(\)/);
    await expect(q.list('q', { state: 'scheduled', after: 1 } as never)).rejects.toThrow(/^opts\.after is not an option/);
  });
});
