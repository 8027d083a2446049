import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DelayQueueService, OnDelayed, RedisLimitModule, RedisTimeoutError, type DelayedMessage } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { limiterModule, TEST_COMMAND_TIMEOUT_MS, uniquePrefix, withLimiterApp } from '../harness/limiter-app.js';
import { itOnAServer } from '../harness/on-a-server.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

/** Resolves once `count` messages have arrived (or rejects after `timeoutMs`). */
function collector<T = unknown>(count: number, timeoutMs = 10_000) {
  const received: { message: DelayedMessage<T>; at: number }[] = [];
  let done!: () => void;
  const all = new Promise<void>((resolve) => (done = resolve));
  return {
    received,
    handler: (message: DelayedMessage<T>) => {
      received.push({ message, at: Date.now() });
      if (received.length === count) done();
    },
    all: () => Promise.race([all, sleep(timeoutMs).then(() => Promise.reject(new Error(`only ${received.length} of ${count} arrived`)))]),
  };
}

describe('DelayQueueService', () => {
  const ctx = withLimiterApp();
  const queue = () => ctx.app.moduleRef.get(DelayQueueService);
  let n = 0;
  const fresh = () => `q-${(n += 1)}`;

  it('delivers each message once, never before its runAt, with payload, runAt and attempt', async () => {
    const q = fresh();
    const got = collector<{ n: number }>(20);
    const consumer = queue().consume(q, got.handler);
    const enqueuedAt = Date.now();
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => queue().enqueue(q, { n: i }, { delayMs: 50 + i * 10 })));
    await got.all();
    await consumer.stop();
    expect(new Set(got.received.map((r) => r.message.id))).toEqual(new Set(ids));
    for (const { message, at } of got.received) {
      expect(message.queue).toBe(q);
      expect(message.attempt).toBe(1);
      // due times come from the Redis clock, which is this machine's clock here
      expect(at).toBeGreaterThanOrEqual(message.runAt - 5);
      expect(at).toBeGreaterThanOrEqual(enqueuedAt + 50 + message.payload.n * 10 - 5);
    }
    expect(await queue().size(q)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
  });

  it('enqueue with an id that is scheduled changes nothing; cancel and reschedule act on scheduled messages only', async () => {
    const q = fresh();
    expect(await queue().enqueue(q, 'a', { id: 'x', delayMs: 60_000 })).toBe('x');
    expect(await queue().enqueue(q, 'b', { id: 'x', delayMs: 0 })).toBe('x');
    expect(await queue().size(q)).toEqual({ scheduled: 1, inFlight: 0, dead: 0 });
    expect(await queue().reschedule(q, 'x', { delayMs: 30 })).toBe(true);
    expect(await queue().reschedule(q, 'nope', { delayMs: 30 })).toBe(false);
    expect(await queue().cancel(q, 'nope')).toBe(false);
    const got = collector<string>(1);
    const consumer = queue().consume(q, got.handler);
    await got.all();
    expect(got.received[0]!.message.payload).toBe('a'); // the first enqueue's payload
    expect(await queue().cancel(q, 'x')).toBe(false); // already handled
    await queue().enqueue(q, 'c', { id: 'y', delayMs: 60_000 });
    expect(await queue().cancel(q, 'y')).toBe(true);
    expect(await queue().size(q)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
    await consumer.stop();
  });

  it('an earlier message wakes a sleeping consumer at once', async () => {
    const q = fresh();
    const got = collector<string>(1);
    const consumer = queue().consume(q, got.handler);
    await queue().enqueue(q, 'late', { delayMs: 60_000 });
    await sleep(50); // the consumer now sleeps until the late one
    const sent = Date.now();
    await queue().enqueue(q, 'early', { delayMs: 100 });
    await got.all();
    expect(got.received[0]!.message.payload).toBe('early');
    expect(got.received[0]!.at - sent).toBeGreaterThanOrEqual(95);
    expect(got.received[0]!.at - sent).toBeLessThan(2000); // far below the 5 s idle re-check
    await consumer.stop();
  });

  it('retries a failing handler with backoff, then succeeds; one that always fails ends dead with its error', async () => {
    const q = fresh();
    const attempts: number[] = [];
    const consumer = queue().consume(
      q,
      (message) => {
        attempts.push(message.attempt);
        if (message.payload === 'flaky' && message.attempt < 3) throw new Error('not yet');
        if (message.payload === 'broken') throw new Error('always broken');
      },
      { backoffMs: 20, maxAttempts: 3 },
    );
    await queue().enqueue(q, 'flaky', { id: 'flaky' });
    await queue().enqueue(q, 'broken', { id: 'broken' });
    const deadline = Date.now() + 10_000;
    while ((await queue().size(q)).dead < 1 || (await queue().size(q)).scheduled + (await queue().size(q)).inFlight > 0) {
      if (Date.now() > deadline) throw new Error('did not settle');
      await sleep(20);
    }
    expect(attempts.sort()).toEqual([1, 1, 2, 2, 3, 3]);
    const dataKey = `${ctx.app.prefix}dqm:{${q}}`;
    expect(await ctx.app.raw.hget(dataKey, 'e:broken')).toBe('Error: always broken');
    expect(await ctx.app.raw.zscore(`${ctx.app.prefix}dqd:{${q}}`, 'flaky')).toBeNull();
    // a dead id enqueued again starts afresh
    const again = collector<string>(1);
    await consumer.stop();
    const second = queue().consume(q, again.handler);
    await queue().enqueue(q, 'broken', { id: 'broken' });
    await again.all();
    expect(again.received[0]!.message.attempt).toBe(1);
    await second.stop();
  });

  it('bounds handlers in flight by concurrency', async () => {
    const q = fresh();
    let running = 0;
    let peak = 0;
    const got = collector(30);
    const consumer = queue().consume(
      q,
      async (message) => {
        running += 1;
        peak = Math.max(peak, running);
        await sleep(10);
        running -= 1;
        got.handler(message);
      },
      { concurrency: 4 },
    );
    await Promise.all(Array.from({ length: 30 }, (_, i) => queue().enqueue(q, i)));
    await got.all();
    expect(peak).toBe(4);
    await consumer.stop();
  });

  it('stop() waits for handlers in flight and claims nothing more', async () => {
    const q = fresh();
    let [started, finished] = [0, 0];
    const consumer = queue().consume(q, async () => {
      started += 1;
      await sleep(200);
      finished += 1;
    });
    await queue().enqueue(q, 'slow');
    // stop while the handler runs: once it has started (a fixed 80 ms was too short under load)
    await until(
      () => started === 1,
      20_000,
      () => 'the handler never started',
    );
    await consumer.stop();
    expect(finished).toBe(1);
    await queue().enqueue(q, 'after');
    await sleep(100);
    expect(await queue().size(q)).toEqual({ scheduled: 1, inFlight: 0, dead: 0 });
  });

  it('rejects bad input with errors naming the argument', async () => {
    const q = fresh();
    await expect(queue().enqueue(q, () => 1)).rejects.toThrow(/payload must be JSON-serializable, got function/);
    await expect(queue().enqueue(q, { when: new Date() })).rejects.toThrow(/payload\.when .*Date/);
    await expect(queue().enqueue(q, { n: NaN })).rejects.toThrow(/payload\.n .*NaN/);
    await expect(queue().enqueue(q, undefined)).rejects.toThrow(TypeError);
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    await expect(queue().enqueue(q, cyclic)).rejects.toThrow(/cycle/);
    await expect(queue().enqueue(q, 1, { runAt: NaN })).rejects.toThrow(RangeError);
    await expect(queue().enqueue(q, 1, { runAt: -5 })).rejects.toThrow(/opts\.runAt/);
    await expect(queue().enqueue(q, 1, { runAt: new Date('nope') })).rejects.toThrow(/opts\.runAt .*Invalid Date/);
    await expect(queue().enqueue(q, 1, { delayMs: -1 })).rejects.toThrow(/opts\.delayMs/);
    await expect(queue().enqueue(q, 1, { delayMs: 10, runAt: 10 })).rejects.toThrow(/not both/);
    await expect(queue().enqueue('', 1)).rejects.toThrow(/queue must be a non-empty string/);
    await expect(queue().enqueue('x'.repeat(10 * 1024), 1)).rejects.toThrow(/queue must be at most 1024 bytes/);
    await expect(queue().enqueue(q, 1, { id: '' })).rejects.toThrow(/opts\.id/);
    expect(() => queue().consume(q, () => 1, { concurrency: 0 })).toThrow(/opts\.concurrency/);
    expect(() => queue().consume(q, 'nope' as never)).toThrow(/handler must be a function/);
    expect(await queue().size(q)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
  });

  it('a payload with undefined object properties is stored as JSON.stringify stores it; undefined elsewhere, functions, symbols, BigInt and cycles stay TypeErrors', async () => {
    const q = fresh();
    const stored = (id: string) => ctx.app.raw.hget(`${ctx.app.prefix}dqm:{${q}}`, `p:${id}`);
    // an optional DTO field left out: { fail: body.fail }
    const body: { fail?: boolean; to?: string } = { to: 'a@example.com' };
    await queue().enqueue(q, { fail: body.fail }, { id: 'one', delayMs: 60_000 });
    expect(await stored('one')).toBe('{}');
    const deep = { to: body.to, fail: body.fail, nested: { a: undefined, list: [1, { b: undefined, c: 2 }] } };
    await queue().enqueue(q, deep, { id: 'deep', delayMs: 60_000 });
    expect(await stored('deep')).toBe(JSON.stringify(deep));
    expect(JSON.parse((await stored('deep'))!)).toEqual({ to: 'a@example.com', nested: { list: [1, { c: 2 }] } });
    await queue().enqueueMany(q, [{ payload: { fail: body.fail, n: 1 }, id: 'many', delayMs: 60_000 }]);
    expect(await stored('many')).toBe('{"n":1}');

    const holed: number[] = [];
    holed[0] = 1;
    holed[2] = 3;
    const cyclic: Record<string, unknown> = { fine: undefined };
    cyclic['self'] = { back: cyclic };
    const refused: [unknown, RegExp][] = [
      [undefined, /^payload must be JSON-serializable, got undefined$/],
      [[1, undefined], /^payload\[1\] must be JSON-serializable, got undefined$/],
      // a hole comes back as null, as an undefined item would
      [holed, /^payload\[1\] must be JSON-serializable, got undefined$/],
      [{ a: { f: () => 1 } }, /^payload\.a\.f must be JSON-serializable, got function$/],
      [{ s: Symbol('s') }, /^payload\.s must be JSON-serializable, got symbol$/],
      [{ list: [10n] }, /^payload\.list\[0\] must be JSON-serializable, got bigint$/],
      [cyclic, /^payload\.self\.back must be JSON-serializable: it is a cycle$/],
    ];
    for (const [payload, message] of refused) {
      await expect(queue().enqueue(q, payload)).rejects.toThrow(message);
      await expect(queue().enqueue(q, payload)).rejects.toBeInstanceOf(TypeError);
    }
    await expect(queue().enqueueMany<unknown>(q, [{ payload: 1 }, { payload: { a: [undefined] } }])).rejects.toThrow(
      /^messages\[1\]\.payload\.a\[0\] must be JSON-serializable, got undefined$/,
    );
    expect(await queue().size(q)).toEqual({ scheduled: 3, inFlight: 0, dead: 0 });
  });

  it('takes hostile queue names and ids, and a runAt far in the past is due at once', async () => {
    const q = 'a{b}c:\n🚦';
    const got = collector<string>(2);
    const consumer = queue().consume(q, got.handler);
    await queue().enqueue(q, 'past', { id: '}{:id', runAt: 1 });
    await queue().enqueue(q, 'date', { id: 'x'.repeat(1000), runAt: new Date(Date.now() + 20) });
    await got.all();
    expect(got.received.map((r) => r.message.id).sort()).toEqual(['x'.repeat(1000), '}{:id'].sort());
    await consumer.stop();
  });

  it('idle consumers cost Redis at most about one command per second each', async () => {
    const q = fresh();
    const consumers = [0, 1, 2, 3].map(() => queue().consume(q, () => undefined));
    await sleep(300);
    // every command on every master (those inside scripts too), but for our own INFO and the
    // cluster clients' periodic slot-map refreshes
    const commands = async () => {
      let total = 0;
      for (const stats of await ctx.redis.onEveryMaster('INFO', 'commandstats')) {
        for (const [, name, calls] of String(stats).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
          if (!/^(info|cluster\|)/.test(name!)) total += Number(calls);
        }
      }
      return total;
    };
    const before = await commands();
    await sleep(6000);
    const spent = (await commands()) - before;
    expect(spent).toBeLessThanOrEqual(4 * 6);
    await Promise.all(consumers.map((c) => c.stop()));
  });
});

describe('DelayQueueService under contention', () => {
  const ctx = withLimiterApp({ commandTimeoutMs: 300 });
  const queue = () => ctx.app.moduleRef.get(DelayQueueService);
  /** size() under the module's short deadline, which is these tests' subject and not their
   * bookkeeping's: asked again when it times out (a loaded cluster run missed 300 ms). */
  async function sizeOf(q: string) {
    for (let tries = 1; ; tries++) {
      try {
        return await queue().size(q);
      } catch (error) {
        if (!(error instanceof RedisTimeoutError) || tries >= 20) throw error;
      }
    }
  }

  itOnAServer('a claim whose reply comes after the timeout still gets its messages handled, first attempt', async () => {
    const got = collector<string>(1);
    const consumer = queue().consume('slow-claim', got.handler, { visibilityTimeoutMs: 20_000 });
    await queue().enqueue('slow-claim', 'a', { delayMs: 300 });
    await sleep(150);
    // writes (scripts included) wait 1 s: the claim due at +300 ms outlives its 300 ms timeout
    await ctx.redis.onEveryMaster('CLIENT', 'PAUSE', '1000', 'WRITE');
    await got.all();
    expect(got.received[0]!.message.attempt).toBe(1);
    await consumer.stop(); // flushes the acknowledgement
    expect(await sizeOf('slow-claim')).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
  });

  it('a failure reported after the lease was handed on does not touch the attempt that now holds the message', async () => {
    const q = 'contended';
    const keys = ['dqs', 'dqf', 'dqd', 'dqm'].map((kind) => `${ctx.app.prefix}${kind}:{${q}}`);
    const scripts = ctx.app.moduleRef.get(RedisConnection).scripts;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const attempts: number[] = [];
    // a lease long enough that no renewal happens during this test
    const first = queue().consume(
      q,
      async (message) => {
        attempts.push(message.attempt);
        await gate;
        throw new Error('too late to matter');
      },
      { visibilityTimeoutMs: 60_000, backoffMs: 10 },
    );
    await queue().enqueue(q, 'x', { id: 'x' });
    while (attempts.length === 0) await sleep(10);
    // a consumer whose clock reads a minute later (the scripts' test hook) finds the lease run out
    const [now] = (await scripts.run('queueClaim', keys, ['', 1, 1])) as number[];
    const taken = (await scripts.run('queueClaim', keys, [now! + 61_000, 10, 60_000])) as (string | number)[];
    expect(taken.slice(2)).toEqual(['x', '"x"', expect.any(Number), 2, 2, 2, '', '']);
    release();
    await first.stop();
    expect(attempts).toEqual([1]);
    expect(await sizeOf(q)).toEqual({ scheduled: 0, inFlight: 1, dead: 0 });
    expect(await ctx.app.raw.hget(keys[3]!, 'e:x')).toBeNull();
    expect(await ctx.app.raw.hget(keys[3]!, 'a:x')).toBe('2');
  });
});

describe('DelayQueueService acknowledgements across a Redis restart', () => {
  it('an ack refused while Redis is down is retried while the lease lasts: the message is not delivered again', async () => {
    const redis = await TestRedis.start({ own: true, args: ['--appendonly', 'yes', '--appendfsync', 'always'] });
    const app = await limiterModule(redis, { commandTimeoutMs: 300 });
    try {
      const queue = app.moduleRef.get(DelayQueueService);
      const attempts: number[] = [];
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const consumer = queue.consume(
        'restart-ack',
        async (message) => {
          attempts.push(message.attempt);
          await gate;
        },
        { visibilityTimeoutMs: 20_000 },
      );
      await queue.enqueue('restart-ack', 'a', { id: 'a' });
      while (attempts.length === 0) await sleep(10);

      await redis.stop();
      release(); // the handler returns while Redis is down: its ack is refused at once
      await sleep(700);
      await redis.resume();

      // without a retry the message would sit in flight until its 20 s lease ran out, then come back:
      // a deadline well inside the lease, and long enough for a loaded machine's reconnect
      const deadline = Date.now() + 15_000;
      let size = { scheduled: -1, inFlight: -1, dead: -1 };
      while (Date.now() < deadline) {
        size = await queue.size('restart-ack').catch(() => size);
        if (size.inFlight === 0) break;
        await sleep(50);
      }
      expect(size).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
      expect(attempts).toEqual([1]);
      await consumer.stop();
    } finally {
      await app.close();
      await redis.stop();
    }
  });
});

describe('@OnDelayed', () => {
  const ctx = withLimiterApp();

  it('consumes with the provider method bound to its instance, from start-up to shutdown', async () => {
    const seen: string[] = [];
    @Injectable()
    class Reminders {
      readonly label = 'reminders';
      @OnDelayed('reminders', { concurrency: 2 })
      remind(message: DelayedMessage<string>) {
        seen.push(`${this.label}:${message.payload}`);
      }
    }
    @Module({ providers: [Reminders] })
    class RemindersModule {}
    const prefix = uniquePrefix('ondelayed');
    const moduleRef = await Test.createTestingModule({
      imports: [RedisLimitModule.forRoot({ redis: ctx.redis.connection, keyPrefix: prefix, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS }), RemindersModule],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    await app.get(DelayQueueService).enqueue('reminders', 'hello', { delayMs: 20 });
    const deadline = Date.now() + 20_000;
    while (seen.length === 0 && Date.now() < deadline) await sleep(10);
    expect(seen).toEqual(['reminders:hello']);
    await app.close();
  });

  it('bad options fail start-up naming Provider.method', async () => {
    @Injectable()
    class Broken {
      @OnDelayed('q', { maxAttempts: 0 })
      handle() {}
    }
    const moduleRef = await Test.createTestingModule({
      imports: [RedisLimitModule.forRoot({ redis: ctx.redis.connection, keyPrefix: uniquePrefix('ondelayed') })],
      providers: [Broken],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await expect(app.init()).rejects.toThrow(/Broken\.handle: @OnDelayed options\.maxAttempts must be an integer >= 1/);
    await app.close();
  });
});
