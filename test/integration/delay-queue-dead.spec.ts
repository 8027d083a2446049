import { DelayQueueService, RedisLimitEvents, type DeadMessage, type RedisLimitEvent } from '../../lib/index.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { until } from '../harness/until.js';

// Dead letters: dead() pages with a cursor, retryDead / purgeDead by id and all, queues().

const broken = () => {
  throw new Error('broken');
};

/** Fills a dead set fast, as fail.lua leaves it: `count` ids "<prefix>-<i>", `perMs` dying in
 * each ms from `from` on (many share a time of death, as in a burst that fails), each with its
 * payload, attempt count and error. */
const SEED = `
local n, per, from = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
for i = 1, n do
  local id = ARGV[4] .. '-' .. i
  redis.call('ZADD', KEYS[1], from + math.floor((i - 1) / per), id)
  redis.call('HSET', KEYS[2], 'p:' .. id, '{"n":' .. i .. '}', 'a:' .. id, 1, 'e:' .. id, 'Error: broken')
end
return n`;

describe('DelayQueue dead letters', () => {
  const ctx = withLimiterApp({ delayQueue: { maxDead: 100_000 } });
  const queue = () => ctx.app.moduleRef.get(DelayQueueService);
  const key = (kind: 'dqs' | 'dqd' | 'dqm', q: string) => `${ctx.app.prefix}${kind}:{${q}}`;
  const seed = (q: string, count: number, perMs: number, from = 1_000_000, prefix = 'd') =>
    ctx.app.raw.eval(SEED, 2, key('dqd', q), key('dqm', q), count, perMs, from, prefix);

  it('a message that dies is listed with its payload, attempts, error and time of death; retried by id it is handled again as attempt 1', async () => {
    const q = 'one';
    const attempts: number[] = [];
    let healthy = false;
    const consumer = queue().consume(
      q,
      (message) => {
        attempts.push(message.attempt);
        if (!healthy) throw new TypeError('gateway down');
      },
      { maxAttempts: 2, backoffMs: 0 },
    );
    await queue().enqueue(q, { order: 7 }, { id: 'm1' });
    await until(
      async () => (await queue().size(q)).dead === 1,
      20_000,
      () => `attempts ${attempts.join(',')}`,
    );
    const page = await queue().dead<{ order: number }>(q);
    expect(page.cursor).toBeNull();
    expect(page.messages).toEqual([{ id: 'm1', queue: q, payload: { order: 7 }, attempts: 2, error: 'TypeError: gateway down', diedAt: expect.any(Number) }]);
    const [seconds] = await ctx.app.raw.time();
    expect(Math.abs(page.messages[0]!.diedAt - Number(seconds) * 1000)).toBeLessThan(60_000);

    healthy = true;
    expect(await queue().retryDead(q, ['m1', 'not-dead'])).toBe(1);
    // woken by the retry's publish: the consumer's idle check is 5 s away
    await until(
      async () => attempts.length === 3 && (await queue().size(q)).scheduled + (await queue().size(q)).inFlight === 0,
      3000,
      () => `attempts ${attempts.join(',')}`,
    );
    expect(attempts).toEqual([1, 2, 1]);
    expect(await queue().size(q)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
    // nothing of its messages is left: only the queue's claim count
    expect(await ctx.app.raw.hkeys(key('dqm', q))).toEqual(['f']);
    await consumer.stop();
  });

  it('an unreadable payload dies on the delivery that finds it, naming the parse failure, without reaching the handler; the other 19 of its batch run once each', async () => {
    const q = 'poison';
    const events: RedisLimitEvent[] = [];
    ctx.app.moduleRef.get(RedisLimitEvents).on((e) => events.push(e));
    const ids = await queue().enqueueMany(
      q,
      Array.from({ length: 20 }, (_, i) => ({ payload: { n: i }, id: `m-${i}` })),
    );
    // written over by something else, or damaged
    await ctx.app.raw.hset(key('dqm', q), 'p:m-7', '{"n": 7,');
    const runs = new Map<string, number>();
    const payloads: unknown[] = [];
    const consumer = queue().consume(
      q,
      (message) => {
        runs.set(message.id, (runs.get(message.id) ?? 0) + 1);
        payloads.push(message.payload);
      },
      { concurrency: 20, maxAttempts: 3 },
    );
    await until(
      async () => {
        const size = await queue().size(q);
        return runs.size === 19 && size.dead === 1 && size.scheduled + size.inFlight === 0;
      },
      15_000,
      async () => `ran ${JSON.stringify([...runs])}, size ${JSON.stringify(await queue().size(q))}`,
    );
    await consumer.stop();
    expect([...runs.keys()].sort()).toEqual(ids.filter((id) => id !== 'm-7').sort());
    expect([...runs.values()].every((count) => count === 1)).toBe(true);
    expect(payloads).not.toContainEqual({ n: 7 });
    expect(payloads).not.toContain(null);

    const page = await queue().dead(q);
    expect(page.messages).toEqual([
      {
        id: 'm-7',
        queue: q,
        payload: null,
        attempts: 1,
        error: expect.stringMatching(/^SyntaxError: the stored payload could not be parsed as JSON: .*JSON/) as unknown,
        diedAt: expect.any(Number) as unknown,
      },
    ]);
    // what dead() says is what it died of: no second sentence
    expect(await ctx.app.raw.hget(key('dqm', q), 'e:m-7')).toBe(page.messages[0]!.error);
    const mine = events.filter((e) => 'queue' in e && e.queue === q && 'id' in e && e.id === 'm-7').map((e) => e.type);
    expect(mine).toEqual(['redis-limit.queue.enqueued', 'redis-limit.queue.dead']);
    await queue().purgeDead(q);
  });

  it('with a rate limit too: an unreadable payload dies, its rate key is never asked for, the rest run', async () => {
    const q = 'poison-rated';
    await queue().enqueueMany(
      q,
      ['a', 'b', 'c', 'd', 'e'].map((tenant) => ({ payload: { tenant }, id: tenant })),
    );
    await ctx.app.raw.hset(key('dqm', q), 'p:c', 'not json');
    const keyed: string[] = [];
    const ran: string[] = [];
    const consumer = queue().consume<{ tenant: string }>(q, (message) => void ran.push(message.id), {
      rateLimit: {
        limit: 100,
        windowMs: 60_000,
        key: (message) => {
          keyed.push(message.id);
          return message.payload.tenant;
        },
      },
    });
    await until(
      async () => {
        const size = await queue().size(q);
        return ran.length === 4 && size.dead === 1 && size.scheduled + size.inFlight === 0;
      },
      15_000,
      async () => `ran ${ran.join(',')}, size ${JSON.stringify(await queue().size(q))}`,
    );
    await consumer.stop();
    expect(ran.sort()).toEqual(['a', 'b', 'd', 'e']);
    expect(keyed).not.toContain('c');
    const [dead] = (await queue().dead(q)).messages;
    expect(dead).toMatchObject({ id: 'c', payload: null, attempts: 1, error: expect.stringMatching(/could not be parsed as JSON/) as unknown });
    await queue().purgeDead(q);
  });

  it('dead() lists a message whose stored payload cannot be parsed with payload null and the parse failure, and the rest of the page as it is', async () => {
    const q = 'damaged';
    await seed(q, 3, 1);
    await ctx.app.raw.hset(key('dqm', q), 'p:d-2', '{"n":2');
    const page = await queue().dead(q);
    expect(page.cursor).toBeNull();
    expect(page.messages.map(({ id, payload }) => [id, payload])).toEqual([
      ['d-1', { n: 1 }],
      ['d-2', null],
      ['d-3', { n: 3 }],
    ]);
    // it died of something else: both are said, the parse failure first
    expect(page.messages[1]!.error).toMatch(/^SyntaxError: the stored payload could not be parsed as JSON: .+; it died of Error: broken$/);
    expect(page.messages[0]!.error).toBe('Error: broken');
    expect(page.messages[1]).toMatchObject({ attempts: 1, diedAt: page.messages[0]!.diedAt + 1 });
    // still retried and purged by id like any other
    expect(await queue().purgeDead(q, ['d-2'])).toBe(1);
    await queue().purgeDead(q);
  });

  it('lists 10,000 dead messages, each once, while others die, are retried and purged between pages', async () => {
    const q = 'many';
    // 7 per ms: pages end inside a run of equal times of death
    await seed(q, 10_000, 7);
    const seen = new Map<string, number>();
    const removed = new Set<string>();
    let cursor: string | null | undefined;
    let pages = 0;
    do {
      const page: { messages: DeadMessage[]; cursor: string | null } = await queue().dead(q, { limit: 997, cursor: cursor ?? undefined });
      pages += 1;
      for (const m of page.messages) seen.set(m.id, (seen.get(m.id) ?? 0) + 1);
      // oldest first: by time of death, then id (bytewise)
      for (let i = 1; i < page.messages.length; i++) {
        const [a, b] = [page.messages[i - 1]!, page.messages[i]!];
        expect(a.diedAt < b.diedAt || (a.diedAt === b.diedAt && Buffer.compare(Buffer.from(a.id), Buffer.from(b.id)) < 0)).toBe(true);
      }
      const last = page.messages.at(-1);
      if (last && page.cursor) {
        // the message the cursor names goes, and so do some not yet listed; others die meanwhile
        const ahead = [`d-${Number(last.id.slice(2)) + 3}`, `d-${Number(last.id.slice(2)) + 50}`];
        expect(await queue().purgeDead(q, [last.id, ahead[0]!])).toBeGreaterThanOrEqual(1);
        await queue().retryDead(q, [ahead[1]!]);
        [last.id, ...ahead].forEach((id) => removed.add(id));
        await seed(q, 5, 1, 2_000_000 + pages * 10, `late${pages}`);
      }
      cursor = page.cursor;
    } while (cursor);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    for (let i = 1; i <= 10_000; i++) {
      const id = `d-${i}`;
      if (!removed.has(id)) expect(seen.has(id)).toBe(true);
    }
    // those that died after listing began come after every older one, on later pages
    expect([...seen.keys()].filter((id) => id.startsWith('late')).length).toBe((pages - 1) * 5);
    expect(pages).toBeGreaterThanOrEqual(11);
    await queue().purgeDead(q);
  });

  it('retryDead and purgeDead of all work through more than a batch, and say how many moved', async () => {
    const events: RedisLimitEvent[] = [];
    ctx.app.moduleRef.get(RedisLimitEvents).on((e) => events.push(e));
    await seed('all-retry', 1234, 50);
    expect(await queue().retryDead('all-retry')).toBe(1234);
    expect(await queue().size('all-retry')).toEqual({ scheduled: 1234, inFlight: 0, dead: 0 });
    // attempt 1 next: the error is gone, the payload stays, and so does the claim count (the lease
    // token keeps growing), every claim so far counted as no attempt
    expect(await ctx.app.raw.hlen(key('dqm', 'all-retry'))).toBe(3 * 1234);
    expect(await ctx.app.raw.hmget(key('dqm', 'all-retry'), 'p:d-1', 'a:d-1', 'd:d-1', 'e:d-1')).toEqual(['{"n":1}', '1', '1', null]);

    await seed('all-purge', 1234, 50);
    expect(await queue().purgeDead('all-purge', ['d-1', 'd-1', 'd-2'])).toBe(2);
    expect(await queue().purgeDead('all-purge')).toBe(1232);
    expect(await queue().purgeDead('all-purge')).toBe(0);
    expect(await queue().size('all-purge')).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
    expect(await ctx.app.raw.exists(key('dqm', 'all-purge'))).toBe(0);
    expect(await queue().retryDead('all-purge', [])).toBe(0);

    expect(events).toContainEqual({ type: 'redis-limit.queue.dead-retried', queue: 'all-retry', count: 1234 });
    expect(events).toContainEqual({ type: 'redis-limit.queue.dead-purged', queue: 'all-purge', count: 1232 });
    const counts = ctx.app.moduleRef.get(RedisLimitEvents).counters().queues;
    expect(counts['all-purge']!.deadPurged).toBe(1234);
    expect(counts['all-retry']!.deadRetried).toBe(1234);
    await queue().purgeDead('all-retry');
  });

  it('queues() lists every queue holding a scheduled, in-flight or dead message, and prometheus() their sizes', async () => {
    await queue().enqueue('q-scheduled', 1, { delayMs: 60_000 });
    await queue().enqueueMany('q-bulk', [{ payload: 1, delayMs: 60_000 }]);
    await queue().enqueue('q-dead', 1, { id: 'x' });
    await queue().enqueue('q-emptied', 1, { id: 'y' });
    await queue().cancel('q-emptied', 'y');
    const consumer = queue().consume('q-dead', broken, { maxAttempts: 1 });
    await until(
      async () => (await queue().size('q-dead')).dead === 1,
      20_000,
      () => 'q-dead never died',
    );
    await consumer.stop();
    const names = await queue().queues();
    expect(names).toEqual(expect.arrayContaining(['q-bulk', 'q-dead', 'q-scheduled']));
    expect(names).not.toContain('q-emptied');
    // the registry is one key, found without a SCAN
    expect(await ctx.app.raw.zscore(`${ctx.app.prefix}dqr:{queues}`, 'q-emptied')).not.toBeNull();
    const text = await queue().prometheus('t');
    expect(text).toContain('t_queue_size{queue="q-dead",state="dead"} 1\n');
    expect(text).toContain('t_queue_size{queue="q-scheduled",state="scheduled"} 1\n');
    await queue().purgeDead('q-dead');
    expect(await queue().queues()).not.toContain('q-dead');
  });

  it('queues() forgets a queue found empty only once nobody has registered it for a day', async () => {
    const registry = `${ctx.app.prefix}dqr:{queues}`;
    const dayAndMore = Date.now() - 25 * 3_600_000;
    await queue().enqueue('old-busy', 1, { delayMs: 60_000 });
    await ctx.app.raw.zadd(registry, dayAndMore, 'old-busy', dayAndMore, 'old-empty', Date.now() - 3_600_000, 'recent-empty');
    expect(await queue().queues()).toContain('old-busy');
    expect(await ctx.app.raw.zscore(registry, 'old-busy')).not.toBeNull();
    expect(await ctx.app.raw.zscore(registry, 'old-empty')).toBeNull();
    expect(await ctx.app.raw.zscore(registry, 'recent-empty')).not.toBeNull();
  });

  it('checks its arguments: TypeError or RangeError naming them', async () => {
    const q = queue();
    await expect(q.dead('')).rejects.toThrow(/^queue must be a non-empty string/);
    await expect(q.dead('x', { limit: 0 })).rejects.toThrow(RangeError);
    await expect(q.dead('x', { limit: 1001 })).rejects.toThrow(/opts.limit must be an integer from 1 to 1000/);
    await expect(q.dead('x', { limit: '5' as never })).rejects.toThrow(TypeError);
    await expect(q.dead('x', { cursor: 'bogus' })).rejects.toThrow(/^opts.cursor must be a cursor returned by dead\(\)/);
    await expect(q.dead('x', { cursor: Buffer.from('12:').toString('base64url') })).rejects.toThrow(TypeError);
    await expect(q.dead('x', { limti: 5 } as never)).rejects.toThrow(/opts.limti is not an option/);
    await expect(q.retryDead('x', 'id' as never)).rejects.toThrow(/^ids must be an array/);
    await expect(q.purgeDead('x', ['a', ''])).rejects.toThrow(/^ids\[1\] must be a non-empty string/);
    await expect(
      q.purgeDead(
        'x',
        Array.from({ length: 1001 }, (_, i) => `${i}`),
      ),
    ).rejects.toThrow(RangeError);
    await expect(q.retryDead(7 as never)).rejects.toThrow(/^queue must be/);
  });
});
