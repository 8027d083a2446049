import { DelayQueueService, DelayQueueTimeoutError, type DelayedMessage } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { recordQueueEvents } from '../harness/queue-events.js';
import { until } from '../harness/until.js';

/** A promise and the function that resolves it. */
function gate(): { open: () => void; opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/** Resolves when `signal` fires (at once if it has). */
const aborted = (signal: AbortSignal) => new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve())));

// Deadlines (issue 30, item 4): timeoutMs fails an attempt whatever its handler does; the signal
// fires on a timeout, a lost lease and a stop; the fence grows with every claim of an id and
// never repeats.
describe('DelayQueue deadlines, signals and fences', () => {
  const ctx = withLimiterApp();
  const queues = () => ctx.app.moduleRef.get(DelayQueueService);
  const eventsOf = recordQueueEvents(ctx);

  it('a handler past timeoutMs fails its attempt and is retried while it still runs; its late outcome changes nothing', async () => {
    const q = 'timeout';
    const stuck = gate();
    const deliveries: DelayedMessage[] = [];
    const consumer = queues().consume(
      q,
      async (message) => {
        deliveries.push(message);
        // the first delivery ignores its signal and hangs on; the second is quick
        if (message.attempt === 1) await stuck.opened;
      },
      { timeoutMs: 200, maxAttempts: 2, backoffMs: 0 },
    );
    try {
      await queues().enqueue(q, 'x', { id: 'm' });
      await until(
        () => eventsOf('redis-limit.queue.handled', q).length === 1,
        20_000,
        () => `${deliveries.length} deliveries`,
      );
      const [first, second] = deliveries;
      expect(first!.signal.aborted).toBe(true);
      expect(first!.signal.reason).toBeInstanceOf(DelayQueueTimeoutError);
      expect(second!.signal.aborted).toBe(false);
      const [retry] = eventsOf('redis-limit.queue.retry', q);
      expect(retry).toMatchObject({ id: 'm', attempt: 1, error: expect.any(DelayQueueTimeoutError) });
      expect(second!.attempt).toBe(2);
      expect(second!.fence).toBeGreaterThan(first!.fence);
      stuck.open(); // the first handler resolves at last: no second ack, nothing comes back
      await until(
        async () => (await queues().size(q)).inFlight === 0,
        20_000,
        () => 'still in flight',
      );
    } finally {
      await consumer.stop();
    }
    expect(eventsOf('redis-limit.queue.handled', q).map((e) => e.attempt)).toEqual([2]);
    expect(await queues().size(q)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
  });

  it('a last attempt that times out dies with the timeout as its error', async () => {
    const q = 'timeout-dead';
    const consumer = queues().consume(q, (message) => aborted(message.signal), { timeoutMs: 100, maxAttempts: 1 });
    try {
      await queues().enqueue(q, 'x', { id: 'm' });
      await until(
        () => eventsOf('redis-limit.queue.dead', q).length === 1,
        20_000,
        () => 'not dead',
      );
    } finally {
      await consumer.stop();
    }
    expect((await queues().dead(q)).messages).toEqual([
      expect.objectContaining({ id: 'm', attempts: 1, error: 'DelayQueueTimeoutError: the handler timed out: it ran past timeoutMs (100 ms)' }),
    ]);
  });

  it("the fence grows with every claim of an id, across an acknowledgement and the id's enqueue again", async () => {
    const q = 'fences';
    const fences: number[] = [];
    const consumer = queues().consume(
      q,
      (message) => {
        fences.push(message.fence);
        if (fences.length === 1) throw new Error('once');
      },
      { backoffMs: 0 },
    );
    try {
      await queues().enqueue(q, 'x', { id: 'same' });
      await until(
        () => fences.length === 2 && eventsOf('redis-limit.queue.handled', q).length === 1,
        20_000,
        () => `fences ${fences.join(', ')}`,
      );
      // acknowledged: its fields are gone and its claim count (the lease token) starts over
      await until(
        async () => (await queues().size(q)).inFlight === 0,
        20_000,
        () => 'not acknowledged',
      );
      await queues().enqueue(q, 'x', { id: 'same' });
      await until(
        () => fences.length === 3,
        20_000,
        () => `fences ${fences.join(', ')}`,
      );
    } finally {
      await consumer.stop();
    }
    expect(fences[1]).toBeGreaterThan(fences[0]!);
    expect(fences[2]).toBeGreaterThan(fences[1]!);
  });

  it('the signal fires when the lease is lost to another claim, and the handler outcome is ignored', async () => {
    const q = 'lease-lost';
    const reasons: unknown[] = [];
    const consumer = queues().consume(
      q,
      async (message) => {
        await aborted(message.signal);
        reasons.push(message.signal.reason);
      },
      { visibilityTimeoutMs: 300 }, // renewed every 100 ms
    );
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const keys = ['dqs', 'dqf', 'dqd', 'dqm'].map((kind) => `${ctx.app.prefix}${kind}:{${q}}`);
    try {
      await queues().enqueue(q, 'x', { id: 'm' });
      await until(
        async () => (await queues().size(q)).inFlight === 1,
        20_000,
        () => 'not claimed',
      );
      // a consumer whose clock reads a minute later (the scripts' test hook) takes the message
      const [now] = (await connection.scripts.run('queueClaim', keys, ['', 1, 1])) as number[];
      const taken = (await connection.scripts.run('queueClaim', keys, [now! + 61_000, 10, 600_000])) as (string | number)[];
      expect(taken.slice(2, 3)).toEqual(['m']);
      await until(
        () => reasons.length === 1,
        20_000,
        () => 'the signal never fired',
      );
    } finally {
      await consumer.stop();
    }
    expect(reasons[0]).toMatchObject({ name: 'AbortError', message: expect.stringMatching(/lease was lost/) });
    // the handler's resolve acknowledged nothing: the other claim still holds the message
    expect(await queues().size(q)).toEqual({ scheduled: 0, inFlight: 1, dead: 0 });
    expect(eventsOf('redis-limit.queue.handled', q)).toEqual([]);
  });

  it('the signal fires when the consumer stops; a handler that then gives up puts its message back as no attempt', async () => {
    const q = 'stopping';
    const started = gate();
    const consumer = queues().consume(q, async (message) => {
      started.open();
      await aborted(message.signal);
      throw message.signal.reason;
    });
    await queues().enqueue(q, 'x', { id: 'm' });
    await started.opened;
    await consumer.stop();
    expect(eventsOf('redis-limit.queue.retry-later', q)).toEqual([expect.objectContaining({ id: 'm', attempt: 1 })]);
    expect(eventsOf('redis-limit.queue.retry', q)).toEqual([]);
    expect(await queues().size(q)).toEqual({ scheduled: 1, inFlight: 0, dead: 0 });

    // the next consumer gets it at once, still as attempt 1
    const attempts: number[] = [];
    const next = queues().consume(q, (message) => void attempts.push(message.attempt));
    try {
      await until(
        () => attempts.length === 1,
        20_000,
        () => 'not delivered again',
      );
    } finally {
      await next.stop();
    }
    expect(attempts).toEqual([1]);
  });
});
