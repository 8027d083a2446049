import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueService, type DelayedMessage } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { QueueReply } from '../../lib/redis/replies.js';
import type { Reply, ScriptName } from '../../lib/redis/scripts.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { until } from '../harness/until.js';

// Leases: a running handler's lease is renewed while its consumer lives, an outcome from an
// attempt that no longer holds the lease changes nothing, and a consumer never runs one id twice.

describe('DelayQueue leases', () => {
  const ctx = withLimiterApp();
  const queue = () => ctx.app.moduleRef.get(DelayQueueService);
  const key = (kind: 'dqs' | 'dqf' | 'dqd' | 'dqm', q: string) => `${ctx.app.prefix}${kind}:{${q}}`;

  it('a handler slower than visibilityTimeoutMs runs alone, once, and its success acknowledges it', async () => {
    // renewed every third of it: long enough that a loaded machine's event-loop stalls (seen at
    // over 100 ms with a 300 ms lease) do not make a renewal late, which hands the message on
    const LEASE_MS = 1_200;
    const q = 'slow-handler';
    const starts: { attempt: number; consumer: number }[] = [];
    let running = 0;
    let peak = 0;
    let handled = 0;
    // two live consumers: neither may take the message from the other while its handler runs
    const consumers = [0, 1].map((c) =>
      queue().consume(
        q,
        async (message: DelayedMessage) => {
          starts.push({ attempt: message.attempt, consumer: c });
          running += 1;
          peak = Math.max(peak, running);
          await sleep(4 * LEASE_MS); // more than three leases
          running -= 1;
          handled += 1;
        },
        { visibilityTimeoutMs: LEASE_MS, backoffMs: 10 },
      ),
    );
    await queue().enqueue(q, 'slow', { id: 'slow' });
    await until(
      async () => handled > 0 && running === 0 && (await queue().size(q)).inFlight === 0,
      20_000,
      async () => `size ${JSON.stringify(await queue().size(q))}, starts ${JSON.stringify(starts)}`,
    );
    await sleep(LEASE_MS + 300); // a lease not renewed would have run out and come back by now
    await Promise.all(consumers.map((c) => c.stop()));
    expect({ starts: starts.map((s) => s.attempt), peak }).toEqual({ starts: [1], peak: 1 });
    expect(await queue().size(q)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
  });

  it('an acknowledgement from an attempt that no longer holds the lease changes nothing', async () => {
    const q = 'stale-ack';
    const connection = ctx.app.moduleRef.get(RedisConnection);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const attempts: number[] = [];
    // a long lease: no renewal happens during this test
    const consumer = queue().consume(
      q,
      async (message) => {
        attempts.push(message.attempt);
        await gate;
      },
      { visibilityTimeoutMs: 60_000 },
    );
    await queue().enqueue(q, 'x', { id: 'x' });
    await until(
      () => attempts.length === 1,
      20_000,
      () => 'not delivered',
    );
    // another consumer, a minute later on its clock, finds the lease run out and takes the message
    const keys = [key('dqs', q), key('dqf', q), key('dqd', q), key('dqm', q)];
    const [now] = (await connection.scripts.run('queueClaim', keys, ['', 1, 1])) as number[];
    const later = now! + 61_000;
    const taken = (await connection.scripts.run('queueClaim', keys, [later, 10, 60_000])) as (string | number)[];
    expect(taken.slice(2)).toEqual(['x', '"x"', expect.any(Number), 2, 2, 2, '', '']);

    release(); // attempt 1 succeeds: its ack must not remove attempt 2's message
    await consumer.stop();
    expect(attempts).toEqual([1]);
    expect(await queue().size(q)).toEqual({ scheduled: 0, inFlight: 1, dead: 0 });
    expect(await ctx.app.raw.zscore(key('dqf', q), 'x')).toBe(String(later + 60_000));
    expect(await ctx.app.raw.hget(key('dqm', q), 'a:x')).toBe('2');
    expect(await ctx.app.raw.hget(key('dqm', q), 'p:x')).toBe('"x"');
  });

  it("a consumer that claims an id it already runs does not run it again, and records the new attempt's outcome", async () => {
    const q = 'own-id';
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const starts: string[] = [];
    const consumer = queue().consume(
      q,
      async (message) => {
        starts.push(`${message.id}:${message.attempt}`);
        if (message.id === 'x') await gate;
      },
      { visibilityTimeoutMs: 60_000 },
    );
    await queue().enqueue(q, 'x', { id: 'x' });
    await until(
      () => starts.length === 1,
      20_000,
      () => 'not delivered',
    );
    // its lease runs out as if a renewal came late (the event loop blocked): the consumer's next
    // claim, woken by 'y', hands 'x' back to this very consumer as attempt 2
    await ctx.app.raw.zadd(key('dqf', q), 'XX', 1, 'x');
    await queue().enqueue(q, 'y', { id: 'y' });
    await until(
      async () => starts.includes('y:1') && (await queue().size(q)).inFlight === 1,
      20_000,
      async () => `starts ${starts.join(', ')}`,
    );
    expect(await ctx.app.raw.hget(key('dqm', q), 'a:x')).toBe('2');

    release();
    await until(
      async () => (await queue().size(q)).inFlight === 0,
      20_000,
      async () => `size ${JSON.stringify(await queue().size(q))}`,
    );
    await consumer.stop();
    expect(starts).toEqual(['x:1', 'y:1']);
    expect(await queue().size(q)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
  });

  // A claim whose outcome arrives very late (its process paused, its connection slow) must stay
  // refused after the message died and came back: the token keeps growing across the death
  it.each(['retryDead', 'enqueue'] as const)('an ack from a claim made before a message died is refused after %s brings it back', async (revive) => {
    const q = `late-ack-${revive}`;
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const keys = [key('dqs', q), key('dqf', q), key('dqd', q), key('dqm', q)];
    const run = (script: ScriptName, args: (string | number)[]) => connection.scripts.run(script, keys, args);
    const claim = async (args: (string | number)[]) => ((await run('queueClaim', args)) as Reply[]).slice(2);
    const wakeUps = queue()['wakeUps'];
    const [channel, publish] = [wakeUps.channel(q), await wakeUps.publishCommand()];
    const now = 2_000_000_000_000;
    await run('queueEnqueue', [now, 'x', '"x"', now, 0, channel, publish]);
    // claim 1 (token 1) stalls; its lease runs out and claim 2 (token 2) fails for good
    expect(await claim([now, 1, 1000])).toEqual(['x', '"x"', now, 1, 1, 1, '', '']);
    expect(await claim([now + 2000, 1, 1000])).toEqual(['x', '"x"', now + 2000, 2, 2, 2, '', '']); // due again when handed on
    expect(await run('queueFail', [now + 2000, 'x', -1, 'Error: gone', 2, 60_000, 100, 100])).toBe(QueueReply.DIED);
    if (revive === 'retryDead') await run('queueRetryDead', [now + 3000, channel, publish, 10, '', 'x']);
    else await run('queueEnqueue', [now + 3000, 'x', '"x"', now + 3000, 0, channel, publish]);
    const reclaimed = await claim([now + 3000, 1, 60_000]);
    expect(await run('queueAck', ['x', 1])).toBe(0); // claim 1's ack, at last
    expect(await run('queueSize', ['', ''])).toEqual([0, 1, 0, -1]);
    // the new claim is attempt 1 again, under a token no earlier claim had (and the third fence)
    expect(reclaimed).toEqual(['x', '"x"', now + 3000, 1, 3, 3, '', '']);
    expect(await run('queueAck', ['x', 3])).toBe(1);
    // nothing of the message is left; the queue's claim count stays
    expect(await ctx.app.raw.hgetall(key('dqm', q))).toEqual({ f: '3' });
  });
});
