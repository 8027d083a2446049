import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { MemoryClient } from '../../lib/testing/memory-client.js';
import { MemoryServer } from '../../lib/testing/memory-server.js';
import { WALL_CLOCK } from '../harness/memory-node.js';
import { RedisNode } from '../harness/redis-server.js';

// forTesting()'s engine answers every command the library sends as Redis does: random sequences of
// them, on a few keys of mixed types, sent to a real redis-server and to the in-memory server, must
// get the same replies (errors by their code). The semantics suites then run the scripts on it
// (the integration:memory project); this holds the commands under them to Redis itself.

const key = fc.constantFrom('k1', 'k2', 'k3');
const member = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'ä');
const score = fc.oneof(fc.integer({ min: -3, max: 3 }).map(String), fc.constantFrom('1.5', '-0.5', '+inf', '-inf'));
const bound = fc.oneof(
  score,
  score.map((s) => `(${s}`),
);
const index = fc.integer({ min: -6, max: 6 }).map(String);
// expiries long enough that none lapses while a sequence runs, so the two clocks never disagree
const longMs = fc.integer({ min: 100_000, max: 200_000 }).map(String);

const command: fc.Arbitrary<string[]> = fc.oneof(
  fc
    .tuple(
      key,
      fc.subarray(['NX', 'XX', 'GT', 'LT', 'CH']),
      fc.array(
        fc.tuple(
          score.filter((s) => !s.includes('inf')),
          member,
        ),
        { minLength: 1, maxLength: 3 },
      ),
    )
    .map(([k, flags, pairs]) => ['ZADD', k, ...flags, ...pairs.flat()]),
  fc
    .tuple(
      key,
      score.filter((s) => !s.includes('inf')),
      member,
    )
    .map(([k, s, m]) => ['ZADD', k, 'INCR', s, m]),
  fc.tuple(key, fc.array(member, { minLength: 1, maxLength: 3 })).map(([k, ms]) => ['ZREM', k, ...ms]),
  fc
    .tuple(key, index, index, fc.boolean(), fc.boolean())
    .map(([k, a, b, rev, ws]) => ['ZRANGE', k, a, b, ...(rev ? ['REV'] : []), ...(ws ? ['WITHSCORES'] : [])]),
  fc
    .tuple(key, bound, bound, fc.boolean(), fc.option(fc.tuple(fc.nat(3), fc.integer({ min: -1, max: 3 }))), fc.boolean())
    .map(([k, a, b, rev, limit, ws]) => [
      'ZRANGE',
      k,
      a,
      b,
      'BYSCORE',
      ...(rev ? ['REV'] : []),
      ...(limit ? ['LIMIT', String(limit[0]), String(limit[1])] : []),
      ...(ws ? ['WITHSCORES'] : []),
    ]),
  fc.tuple(key, bound, bound, fc.boolean()).map(([k, a, b, ws]) => ['ZRANGEBYSCORE', k, a, b, ...(ws ? ['WITHSCORES'] : [])]),
  fc.tuple(key, bound, bound).map(([k, a, b]) => ['ZCOUNT', k, a, b]),
  fc.tuple(key, bound, bound).map(([k, a, b]) => ['ZREMRANGEBYSCORE', k, a, b]),
  fc.tuple(key, member).map(([k, m]) => ['ZSCORE', k, m]),
  key.map((k) => ['ZCARD', k]),
  fc.tuple(key, fc.array(fc.tuple(member, fc.string({ maxLength: 3 })), { minLength: 1, maxLength: 3 })).map(([k, pairs]) => ['HSET', k, ...pairs.flat()]),
  fc.tuple(key, member).map(([k, f]) => ['HGET', k, f]),
  fc.tuple(key, fc.array(member, { minLength: 1, maxLength: 3 })).map(([k, fs]) => ['HMGET', k, ...fs]),
  fc.tuple(key, fc.array(member, { minLength: 1, maxLength: 3 })).map(([k, fs]) => ['HDEL', k, ...fs]),
  fc.tuple(key, member, fc.integer({ min: -5, max: 5 }).map(String)).map(([k, f, by]) => ['HINCRBY', k, f, by]),
  key.map((k) => ['HLEN', k]),
  key.map((k) => ['HGETALL', k]),
  fc
    .tuple(key, fc.string({ maxLength: 3 }), fc.constantFrom([], ['NX'], ['XX'], ['KEEPTTL'], ['PX', '150000']))
    .map(([k, v, options]) => ['SET', k, v, ...options]),
  key.map((k) => ['GET', k]),
  fc.tuple(key, fc.nat(6).map(String), fc.string({ maxLength: 3 })).map(([k, offset, v]) => ['SETRANGE', k, offset, v]),
  fc.tuple(key, fc.array(member, { minLength: 1, maxLength: 3 })).map(([k, ms]) => ['SADD', k, ...ms]),
  fc.tuple(key, fc.array(member, { minLength: 1, maxLength: 3 })).map(([k, ms]) => ['SREM', k, ...ms]),
  key.map((k) => ['SCARD', k]),
  fc.tuple(key, member).map(([k, m]) => ['SISMEMBER', k, m]),
  fc.tuple(key, longMs, fc.constantFrom([], ['NX'], ['XX'], ['GT'], ['LT'])).map(([k, ms, flags]) => ['PEXPIRE', k, ms, ...flags]),
  key.map((k) => ['PERSIST', k]),
  key.map((k) => ['PTTL', k]),
  key.map((k) => ['TYPE', k]),
  key.map((k) => ['EXISTS', k]),
  fc.array(key, { minLength: 1, maxLength: 2 }).map((ks) => ['DEL', ...ks]),
);

/** A reply both can be compared by: an error by its code, a ttl by its sign, members with their
 * scores as one flat list (ioredis 6's `call` hands RESP3's pairs over as they came). */
async function answer(client: { call(name: string, ...args: string[]): Promise<unknown> }, args: string[]): Promise<unknown> {
  try {
    const reply = await client.call(args[0]!, ...args.slice(1));
    if (args.includes('WITHSCORES') && Array.isArray(reply)) return reply.flat();
    return args[0] === 'PTTL' && typeof reply === 'number' && reply > 0 ? 'positive' : reply;
  } catch (error) {
    return `error ${(error as Error).message.split(' ')[0]}`;
  }
}

describe("the in-memory engine's commands", () => {
  let redis: RedisNode;
  let real: Redis;

  beforeAll(async () => {
    redis = await RedisNode.start();
    real = redis.client();
  });
  afterAll(async () => {
    real.disconnect();
    await redis.stop();
  });

  it('answer random sequences as redis-server does', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 40 }), async (commands) => {
        await real.flushall();
        const memory = new MemoryClient(new MemoryServer(WALL_CLOCK));
        for (const args of commands) {
          const [expected, got] = await Promise.all([answer(real, args), answer(memory, args)]);
          expect({ args, reply: got }).toEqual({ args, reply: expected });
        }
      }),
      { numRuns: 1000 },
    );
  });

  // (the random sequences seldom write a string with an expiry and then a range of it)
  it('write a range of a string in place as redis-server does: its expiry kept, a short one padded', async () => {
    await real.flushall();
    const memory = new MemoryClient(new MemoryServer(WALL_CLOCK));
    const commands = [
      ['SET', 'k', 'abcdef', 'PX', '150000'],
      ['SETRANGE', 'k', '2', 'XY'],
      ['PTTL', 'k'],
      ['GET', 'k'],
      ['SETRANGE', 'k', '5', 'long'],
      ['GET', 'k'],
      ['PTTL', 'k'],
      ['SETRANGE', 'new', '3', 'é'],
      ['GET', 'new'],
      ['PTTL', 'new'],
      ['SETRANGE', 'none', '2', ''],
      ['EXISTS', 'none'],
      ['SETRANGE', 'k', '-1', 'x'],
      ['HSET', 'h', 'f', 'v'],
      ['SETRANGE', 'h', '0', 'x'],
    ];
    for (const args of commands) {
      const [expected, got] = await Promise.all([answer(real, args), answer(memory, args)]);
      expect({ args, reply: got }).toEqual({ args, reply: expected });
    }
  });
});
