import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueService, type DelayedMessage } from '../../lib/index.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { until } from '../harness/until.js';
import { redisNow } from '../harness/server-time.js';

// Retries and the dead set: how long a failed message waits (doubled, capped by maxBackoffMs) and
// how much of the dead set is kept (maxDead, deadRetentionMs).

const failing = () => {
  throw new Error('always broken');
};

describe('DelayQueue retries', () => {
  const ctx = withLimiterApp();
  const queue = () => ctx.app.moduleRef.get(DelayQueueService);
  const key = (kind: 'dqs' | 'dqd' | 'dqm', q: string) => `${ctx.app.prefix}${kind}:{${q}}`;
  /** The Redis server's clock in ms. */
  const serverNow = () => redisNow(ctx.app.raw);

  it('the retry delay doubles per attempt: each retry is due backoffMs * 2^(attempt-1) or more after the last (server clock)', async () => {
    const q = 'doubling';
    const runAts: number[] = [];
    const consumer = queue().consume(
      q,
      (message: DelayedMessage) => {
        runAts.push(message.runAt);
        throw new Error('not yet');
      },
      { backoffMs: 150, maxAttempts: 4 },
    );
    await queue().enqueue(q, 'x', { id: 'x' });
    await until(
      async () => (await queue().size(q)).dead === 1,
      10_000,
      () => `runAts ${runAts.join(', ')}`,
    );
    await consumer.stop();
    // runAt is the retry's score in Redis: the failure's server time plus the delay, and the
    // failure came after the attempt was due
    const gaps = runAts.slice(1).map((at, i) => at - runAts[i]!);
    expect(gaps).toHaveLength(3);
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(150 * 2 ** i));
  });

  it('a retry waits at most maxBackoffMs (default an hour), however many attempts came before', async () => {
    // [queue, consume options, the delay the 56th attempt's failure must get]
    const cases = [
      ['capped-default', {}, 3_600_000],
      ['capped-5s', { maxBackoffMs: 5000 }, 5000],
    ] as const;
    for (const [q] of cases) {
      await queue().enqueue(q, 'x', { id: 'x' });
      // 55 deliveries so far: the next failure is attempt 56, whose doubled backoff is 1000 * 2^55 ms
      await ctx.app.raw.hset(key('dqm', q), 'a:x', 55);
    }
    const before = await serverNow();
    const consumers = cases.map(([q, opts]) => queue().consume(q, failing, { maxAttempts: 100, backoffMs: 1000, ...opts }));
    // scheduled again once the failure is recorded with its error
    const failed = async () => Promise.all(cases.map(async ([q]) => (await ctx.app.raw.hget(key('dqm', q), 'e:x')) !== null));
    await until(
      async () => (await failed()).every(Boolean),
      20_000,
      async () => `failed ${(await failed()).join(', ')}`,
    );
    const after = await serverNow();
    await Promise.all(consumers.map((c) => c.stop()));
    for (const [q, , delayMs] of cases) {
      const due = Number(await ctx.app.raw.zscore(key('dqs', q), 'x'));
      expect(due).toBeGreaterThanOrEqual(before + delayMs);
      expect(due).toBeLessThanOrEqual(after + delayMs);
    }
  });
});

describe('DelayQueue dead set, bounded by count (maxDead)', () => {
  const ctx = withLimiterApp({ delayQueue: { maxDead: 3 } });
  const queue = () => ctx.app.moduleRef.get(DelayQueueService);

  it('keeps the newest maxDead dead messages and deletes the others with their payload, attempts and error', async () => {
    const q = 'dead-count';
    const consumer = queue().consume(q, failing, { maxAttempts: 1 });
    // one at a time, so they die in this order
    for (let i = 1; i <= 5; i++) {
      await queue().enqueue(q, `payload ${i}`, { id: `d${i}` });
      await until(
        async () => (await ctx.app.raw.zscore(`${ctx.app.prefix}dqd:{${q}}`, `d${i}`)) !== null,
        20_000,
        () => `d${i} not dead`,
      );
    }
    await consumer.stop();
    expect(await ctx.app.raw.zrange(`${ctx.app.prefix}dqd:{${q}}`, '0', '-1')).toEqual(['d3', 'd4', 'd5']);
    expect(Object.keys(await ctx.app.raw.hgetall(`${ctx.app.prefix}dqm:{${q}}`)).sort()).toEqual(
      ['f', ...['d3', 'd4', 'd5'].flatMap((id) => [`a:${id}`, `e:${id}`, `p:${id}`, `r:${id}`])].sort(),
    );
    expect(await queue().size(q)).toEqual({ scheduled: 0, inFlight: 0, dead: 3 });
  });
});

describe('DelayQueue dead set, bounded by age (deadRetentionMs)', () => {
  const ctx = withLimiterApp({ delayQueue: { deadRetentionMs: 300 } });
  const queue = () => ctx.app.moduleRef.get(DelayQueueService);
  /** The Redis server's clock in ms. */
  const serverNow = () => redisNow(ctx.app.raw);

  it('a message dying deletes those that died more than deadRetentionMs before it', async () => {
    const q = 'dead-age';
    const key = (kind: 'dqd' | 'dqm') => `${ctx.app.prefix}${kind}:{${q}}`;
    const dead = () => ctx.app.raw.zrange(key('dqd'), '0', '-1');
    // A consumer's claims trim the dead set too: its next one (an idle re-check, 5 s on) deletes
    // 'old', which a loaded test process may not have polled by then, and the claim that takes
    // 'new' deletes it before 'new' dies. So both are claimed first and fail when let go, and the
    // consumer is stopped in between: no claim runs after that, only their deaths change the set.
    const gates = new Map<string, () => void>();
    const letGo = new Map<string, Promise<void>>();
    for (const id of ['old', 'new']) letGo.set(id, new Promise<void>((resolve) => gates.set(id, resolve)));
    const consumer = queue().consume(
      q,
      async (message: DelayedMessage) => {
        await letGo.get(message.id);
        throw new Error('always broken');
      },
      { maxAttempts: 1, concurrency: 2 },
    );
    await queue().enqueue(q, 'old', { id: 'old' });
    await queue().enqueue(q, 'new', { id: 'new' });
    await until(
      async () => (await queue().size(q)).inFlight === 2,
      20_000,
      async () => `not both claimed: ${JSON.stringify(await queue().size(q))}`,
    );
    const stopping = consumer.stop(60_000);
    gates.get('old')!();
    await until(
      async () => (await dead()).includes('old'),
      20_000,
      () => 'old not dead',
    );
    // 'old' stays dead (nothing trims now) until the server clock is past its retention
    const diedAt = Number(await ctx.app.raw.zscore(key('dqd'), 'old'));
    await until(
      async () => (await serverNow()) > diedAt + 300,
      20_000,
      () => 'the server clock stands still',
    );
    expect(await dead()).toEqual(['old']);
    gates.get('new')!();
    await stopping;
    expect(await dead()).toEqual(['new']);
    expect(Object.keys(await ctx.app.raw.hgetall(key('dqm'))).sort()).toEqual(['a:new', 'e:new', 'f', 'p:new', 'r:new']);
  });

  it('a consumer deletes dead messages past deadRetentionMs even when nothing dies again', async () => {
    const q = 'dead-idle';
    const dead = () => ctx.app.raw.zrange(`${ctx.app.prefix}dqd:{${q}}`, '0', '-1');
    const first = queue().consume(q, failing, { maxAttempts: 1 });
    await queue().enqueue(q, 'old', { id: 'old' });
    await until(
      async () => (await dead()).length === 1,
      20_000,
      () => 'old not dead',
    );
    await first.stop();
    await sleep(600); // twice the retention
    // a consumer's first claim (and each idle one after it, every 5 s) trims what aged out
    const second = queue().consume(q, failing, { maxAttempts: 1 });
    await until(
      async () => (await dead()).length === 0,
      20_000,
      async () => `dead: ${(await dead()).join(', ')}`,
    );
    await second.stop();
    // nothing of the message is left: only the queue's claim count
    expect(await ctx.app.raw.hgetall(`${ctx.app.prefix}dqm:{${q}}`)).toEqual({ f: '1' });
  });
});
