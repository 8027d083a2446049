import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueService, type DelayedMessage } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { limiterModule, withLimiterApp } from '../harness/limiter-app.js';
import { until } from '../harness/until.js';

// Rate-limited and globally bounded consumers in one process: several consumers of one queue
// share the counters and the leases in Redis as separate processes do (delay-queue-processes.spec.ts
// runs them in separate processes).

const tenantOf = (message: DelayedMessage) => (message.payload as { tenant: string }).tenant;

describe('DelayQueue rateLimit and globalConcurrency', () => {
  const ctx = withLimiterApp();
  const queues = () => ctx.app.moduleRef.get(DelayQueueService);
  const key = (kind: 'dqs' | 'dqf' | 'dqm', q: string) => `${ctx.app.prefix}${kind}:{${q}}`;

  it('at most `limit` starts per key per window across consumers; a tenant over its limit does not hold up the others', async () => {
    const q = 'tenants';
    // the busy tenant's messages come first in the claim order (same due time, ids sorted)
    const busy = Array.from({ length: 12 }, (_, i) => `a-${String(i).padStart(2, '0')}`);
    const quiet = ['b-1', 'b-2', 'b-3', 'c-1'];
    const runAt = Date.now();
    for (const id of [...busy, ...quiet]) await queues().enqueue(q, { tenant: id.split('-')[0] }, { id, runAt });
    const started: DelayedMessage[] = [];
    // a window far longer than the test: exactly `limit` starts per tenant, whatever the timing
    const rateLimit = { limit: 3, windowMs: 600_000, key: tenantOf };
    const consumers = [0, 1].map(() => queues().consume(q, (m) => void started.push(m), { rateLimit, concurrency: 4 }));
    await until(
      () => started.filter((m) => tenantOf(m) !== 'a').length === quiet.length && started.length === 3 + quiet.length,
      10_000,
      () => started.map((m) => m.id).join(', '),
    );
    await until(
      async () => (await queues().size(q)).inFlight === 0,
      20_000,
      () => 'in flight',
    );
    await sleep(200); // any start beyond the limit would show now
    await Promise.all(consumers.map((c) => c.stop()));

    const perTenant = (t: string) => started.filter((m) => tenantOf(m) === t).length;
    expect([perTenant('a'), perTenant('b'), perTenant('c')]).toEqual([3, 3, 1]);
    // the rest of `a` waits, scheduled; being refused is no attempt: every claim of each is
    // counted as a non-attempt ('d:'), and none is pending admission ('u:')
    expect(await queues().size(q)).toEqual({ scheduled: busy.length - 3, inFlight: 0, dead: 0 });
    const waiting = await ctx.app.raw.zrange(key('dqs', q), '0', '-1');
    const counts = await Promise.all(waiting.map((id) => ctx.app.raw.hmget(key('dqm', q), `a:${id}`, `d:${id}`, `u:${id}`)));
    expect(counts.map(([claims, deferred, pending]) => [claims === deferred, pending])).toEqual(waiting.map(() => [true, null]));
    expect(started.every((m) => m.attempt === 1)).toBe(true);
  });

  it('messages over the limit run later as first attempts: waiting never kills one, even with maxAttempts 1', async () => {
    const q = 'patient';
    const ids = Array.from({ length: 8 }, (_, i) => `p-${i}`);
    const started: DelayedMessage[] = [];
    for (const algorithm of ['fixed-window', 'sliding-window', 'sliding-window-counter', 'token-bucket'] as const) {
      started.length = 0;
      const qa = `${q}-${algorithm}`;
      for (const id of ids) await queues().enqueue(qa, { tenant: 't' }, { id });
      const consumer = queues().consume(qa, (m) => void started.push(m), { maxAttempts: 1, rateLimit: { limit: 2, windowMs: 300, algorithm, key: tenantOf } });
      await until(
        async () => started.length === ids.length && (await queues().size(qa)).inFlight === 0,
        10_000,
        () => `${algorithm}: ${started.length} started`,
      );
      await consumer.stop();
      expect({ algorithm, attempts: started.map((m) => m.attempt) }).toEqual({ algorithm, attempts: ids.map(() => 1) });
      expect(await queues().size(qa)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
    }
  });

  it('admission calls that fail are not attempts: after several in a row the handler sees attempt 1', async () => {
    const q = 'admit-outage';
    await queues().enqueue(q, { tenant: 't' }, { id: 'x' });
    // the server refuses every admission of this queue (its counter key holds a string, where the
    // sliding window keeps a sorted set: WRONGTYPE), and nothing else: claims, acks and renewals
    // of the queue go on
    const counter = `${ctx.app.prefix}dqr.sw5.60000:{${q}}`;
    await ctx.app.raw.set(counter, 'not a sorted set');
    const started: DelayedMessage[] = [];
    const consumer = queues().consume(q, (m) => void started.push(m), { maxAttempts: 2, visibilityTimeoutMs: 200, rateLimit: { limit: 5, windowMs: 60_000 } });
    // four claims, each followed by a refused admission, each lease run out before the next
    await until(
      async () => Number(await ctx.app.raw.hget(key('dqm', q), 'a:x')) >= 4,
      20_000,
      () => 'fewer than 4 claims',
    );
    await ctx.app.raw.del(counter);
    await until(
      async () => started.length > 0 || (await queues().size(q)).dead > 0,
      20_000,
      async () => JSON.stringify(await queues().size(q)),
    );
    await until(
      async () => (await queues().size(q)).inFlight === 0,
      20_000,
      () => 'in flight',
    );
    await consumer.stop();
    expect({ attempts: started.map((m) => m.attempt), size: await queues().size(q) }).toEqual({ attempts: [1], size: { scheduled: 0, inFlight: 0, dead: 0 } });
  });

  it("a key's refused messages are paced windowMs / limit apart, however many claims refused them", async () => {
    const q = 'paced';
    const ids = Array.from({ length: 9 }, (_, i) => `p-${i}`);
    for (const id of ids) await queues().enqueue(q, { tenant: 't' }, { id });
    const started: string[] = [];
    // claims of 2: the refusals come from several admission calls
    const consumer = queues().consume(q, (m) => void started.push(m.id), { concurrency: 2, rateLimit: { limit: 3, windowMs: 600_000, key: tenantOf } });
    const dueTimes = async () => (await ctx.app.raw.zrange(key('dqs', q), '0', '-1', 'WITHSCORES')).filter((_, i) => i % 2 === 1).map(Number);
    // until the 6 refused are all due minutes ahead: 6 scheduled alone is also the moment the 3
    // admitted have left and the rest wait unclaimed, which a loaded machine showed this poll
    await until(
      async () => (await dueTimes()).filter((at) => at > Date.now() + 60_000).length === 6 && (await queues().size(q)).inFlight === 0,
      20_000,
      () => `${started.length} started`,
    );
    await consumer.stop();
    const scores = await dueTimes();
    // each refused once, each in its own slot: the backlog comes back at the pace the limit allows
    expect(scores.slice(1).map((at, i) => at - scores[i]!)).toEqual([200_000, 200_000, 200_000, 200_000, 200_000]);
  });

  it('without a key function the whole queue shares one counter', async () => {
    const q = 'one-counter';
    for (let i = 0; i < 6; i++) await queues().enqueue(q, { tenant: `t${i}` });
    const started: DelayedMessage[] = [];
    const consumer = queues().consume(q, (m) => void started.push(m), { rateLimit: { limit: 2, windowMs: 600_000 } });
    await until(
      async () => started.length === 2 && (await queues().size(q)).scheduled === 4,
      10_000,
      () => `${started.length} started`,
    );
    await sleep(200);
    await consumer.stop();
    expect(started).toHaveLength(2);
  });

  it('a key function that throws fails the message as its handler would', async () => {
    const q = 'bad-key';
    await queues().enqueue(q, {}, { id: 'k' });
    const handled: string[] = [];
    const consumer = queues().consume(q, (m) => void handled.push(m.id), {
      maxAttempts: 1,
      rateLimit: {
        limit: 5,
        windowMs: 1000,
        key: () => {
          throw new Error('no tenant');
        },
      },
    });
    await until(
      async () => (await queues().size(q)).dead === 1,
      10_000,
      () => 'not dead',
    );
    await consumer.stop();
    expect(handled).toEqual([]);
    expect(await ctx.app.raw.hget(key('dqm', q), 'e:k')).toBe('Error: no tenant');
  });

  it('globalConcurrency: at most N handlers run at once across consumers, and all are handled', async () => {
    const q = 'global';
    const ids = Array.from({ length: 30 }, (_, i) => `g-${i}`);
    let running = 0;
    let most = 0;
    const handled = new Set<string>();
    const handler = async (m: DelayedMessage) => {
      running += 1;
      most = Math.max(most, running);
      await sleep(20);
      running -= 1;
      handled.add(m.id);
    };
    const consumers = [0, 1, 2].map(() => queues().consume(q, handler, { concurrency: 5, globalConcurrency: 3 }));
    await Promise.all(ids.map((id) => queues().enqueue(q, null, { id })));
    await until(
      () => handled.size === ids.length,
      20_000,
      () => `${handled.size} handled`,
    );
    await Promise.all(consumers.map((c) => c.stop()));
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThan(1);
  });

  it('globalConcurrency: a consumer that finds the queue full sleeps until a slot frees, and is woken then', async () => {
    const q = 'full';
    // two app instances (two connections, two subscribers) on one queue, one handler at a time
    const other = await limiterModule(ctx.redis, { keyPrefix: ctx.app.prefix });
    try {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const starts: { id: string; app: string; at: number }[] = [];
      const opts = { globalConcurrency: 1 };
      const first = queues().consume(
        q,
        async (m) => {
          starts.push({ id: m.id, app: 'first', at: Date.now() });
          await gate;
        },
        opts,
      );
      await queues().enqueue(q, null, { id: 'long' });
      await until(
        () => starts.length === 1,
        20_000,
        () => 'not started',
      );
      // the first consumer takes nothing more; the other finds the queue full with 'next' due
      void first.stop(60_000);
      await queues().enqueue(q, null, { id: 'next' });
      const waiting = other.moduleRef.get(DelayQueueService).consume(q, (m) => void starts.push({ id: m.id, app: 'other', at: Date.now() }), opts);
      await sleep(300); // it has claimed, found the queue full, and gone to sleep
      // script calls on every master while the long handler runs
      const scriptCalls = async () => {
        let total = 0;
        for (const stats of await ctx.redis.onEveryMaster('INFO', 'commandstats')) {
          for (const [, calls] of String(stats).matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)) total += Number(calls);
        }
        return total;
      };
      const before = await scriptCalls();
      await sleep(1500);
      const spent = (await scriptCalls()) - before;
      const releasedAt = Date.now();
      release();
      await until(
        () => starts.length === 2,
        10_000,
        () => JSON.stringify(starts),
      );
      await waiting.stop();
      // polling every 50 ms made about 30 calls here; a waiting consumer makes none
      expect(spent).toBeLessThanOrEqual(3);
      expect([starts[1]!.id, starts[1]!.app]).toEqual(['next', 'other']);
      // woken by the acknowledgement, not by a timer (the lease runs 30 s, the idle check 5 s)
      expect(starts[1]!.at - releasedAt).toBeLessThan(2500);
    } finally {
      await other.close();
    }
  });

  // A deferral frees the slot its claim took, and admit.lua wakes whoever waits for one
  // (free-slot.lua publishes '0', due now, on the queue's channel). Without that wake-up the
  // waiting consumer still starts the message at its idle check (5 s), so the test listens on the
  // channel: the wake-up must come, and must come before the waiting message starts.
  it('globalConcurrency: a rate-limit deferral frees its slot and wakes the consumer waiting for it', async () => {
    const q = 'deferred-slot';
    const wakeUps = queues()['wakeUps'];
    const [channel, publish] = [wakeUps.channel(q), await wakeUps.publishCommand()];
    const listener = ctx.app.moduleRef.get(RedisConnection).subscriberConnection(publish === 'SPUBLISH');
    const events: string[] = [];
    // enqueues publish a runAt there; only a freed slot publishes '0'
    const onMessage = (from: string, message: string) => void (from === channel && message === '0' && events.push('slot freed'));
    listener.on('message', onMessage);
    listener.on('smessage', onMessage);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // a claim asks for 2 but the queue allows 1: it takes one and, with more due, leaves the
    // consumer waiting for a slot (not claiming again at once); one start per tenant in the window
    const opts = { concurrency: 2, globalConcurrency: 1, rateLimit: { limit: 1, windowMs: 600_000, key: tenantOf } };
    const consumer = queues().consume(
      q,
      async (m) => {
        events.push(`started ${m.id}`);
        if (m.id === 'b-1') await gate; // holds its slot: its ack would wake too
      },
      opts,
    );
    try {
      await (publish === 'SPUBLISH' ? listener.ssubscribe(channel) : listener.subscribe(channel));
      // tenant a's one start in the window; nobody waits for a slot, so its ack publishes nothing
      await queues().enqueue(q, { tenant: 'a' }, { id: 'a-0' });
      await until(
        async () => events.includes('started a-0') && (await queues().size(q)).inFlight === 0,
        10_000,
        () => `a-0 not handled: ${events.join(', ')}`,
      );
      // in one call, due at once: the claim takes a-1 (ids in order) and finds the queue full with
      // b-1 due; admission defers a-1 (tenant a is spent), which frees the slot b-1 waits for
      await queues().enqueueMany(q, [
        { payload: { tenant: 'a' }, id: 'a-1' },
        { payload: { tenant: 'b' }, id: 'b-1' },
      ]);
      await until(
        () => events.includes('slot freed'),
        20_000,
        () => `no wake-up on ${channel} after a-1 was deferred (so far: ${events.join(', ')})`,
      );
      await until(
        () => events.includes('started b-1'),
        20_000,
        () => `b-1 not started (so far: ${events.join(', ')})`,
      );
      expect(events).toEqual(['started a-0', 'slot freed', 'started b-1']);
      // a-1 waits for tenant a's next window, scheduled; b-1 holds the one slot
      expect(await queues().size(q)).toEqual({ scheduled: 1, inFlight: 1, dead: 0 });
    } finally {
      release();
      await consumer.stop();
      listener.disconnect();
    }
  });

  it('bad rateLimit and globalConcurrency options are refused at consume() with the option named', () => {
    const consume = (opts: object) => () => queues().consume('bad', () => undefined, opts);
    expect(consume({ rateLimit: { limit: 0, windowMs: 1000 } })).toThrow(new RangeError('opts.rateLimit.limit must be a positive integer, got 0'));
    expect(consume({ rateLimit: { limit: 1 } })).toThrow(TypeError);
    expect(consume({ rateLimit: { limit: 1, windowMs: 10, key: 'tenant' } })).toThrow(
      new TypeError('opts.rateLimit.key must be a function (message) => string, got "tenant"'),
    );
    expect(consume({ rateLimit: 5 })).toThrow(/^opts\.rateLimit must be an object/);
    expect(consume({ globalConcurrency: 0 })).toThrow(new RangeError('opts.globalConcurrency must be an integer >= 1, got 0'));
    expect(consume({ globalConcurrency: '2' })).toThrow(new TypeError('opts.globalConcurrency must be an integer >= 1, got "2"'));
  });
});
