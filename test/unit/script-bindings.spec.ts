import { RedisScriptError } from '../../lib/errors.js';
import { RateLimitReply } from '../../lib/redis/replies.js';
import { SCRIPT_BINDINGS } from '../../lib/redis/script-bindings.generated.js';

// The generated bindings put named calls into the positional argv the scripts read and read their
// positional replies back (the scripts' own suites run them on Redis). These pin the layouts the
// headers describe where they are least plain: groups, counts, values left out, variants.

const queue = { scheduled: 's', inFlight: 'f', dead: 'd', data: 'm' };

/** A packed reply as struct.pack writes one (script-headers.mjs): codes as int8, other numbers
 * as big-endian doubles, strings after their uint16 length. */
const code = (value: number) => Buffer.from([value & 0xff]);
const double = (value: number) => {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(value);
  return b;
};
const text = (value: string) => {
  const bytes = Buffer.from(value, 'utf8');
  const length = Buffer.alloc(2);
  length.writeUInt16BE(bytes.length);
  return Buffer.concat([length, bytes]);
};
/** decide.lua's packed values for one limit it granted and did not charge: no wait, no grant. */
const grantedReply = (remaining: number, resetMs: number) => Buffer.concat([code(RateLimitReply.GRANTED), double(remaining), double(resetMs)]);
/** ...for one it charged: no wait; the counter's life (µs, number), what it gave back, the grant's number. */
const chargedReply = (remaining: number, resetMs: number, lifeAt: number, lifeNumber: number, given: number, grant: number) =>
  Buffer.concat([code(RateLimitReply.CHARGED), ...[remaining, resetMs, lifeAt, lifeNumber, given, grant].map(double)]);
/** ...and for one it refused: no grant. */
const refusedReply = (verdict: number, remaining: number, retryAfterMs: number, resetMs: number) =>
  Buffer.concat([code(verdict), double(remaining), double(retryAfterMs), double(resetMs)]);

describe('generated script bindings', () => {
  it("decide.lua: the key count first, then the specs after their number, each run of stacks after its length and each stack's limits after theirs; a failed stack is its own variant", () => {
    const decide = SCRIPT_BINDINGS['rate-limit/decide.lua'];
    const limit = { algorithm: 'fw', limit: 10, windowMs: 1000, permits: 1 } as const;
    const call = {
      keys: { states: ['a', 'b', 'c'] },
      args: {
        specs: [limit, { ...limit, algorithm: 'tb', permits: 2 }],
        stacks: [
          { consume: '1', limits: [1, 2] },
          { consume: '0', limits: [1] },
        ],
      },
    } as const;
    expect(decide.encode(call)).toEqual([3, 'a', 'b', 'c', '', 2, 'fw', 10, 1000, 1, 'tb', 10, 1000, 2, 1, '1', 2, 1, 2, 1, '0', 1, 1]);
    const reply = Buffer.concat([
      double(1_700_000_000_123),
      ...[code(RateLimitReply.REFUSED), grantedReply(9, 1000), refusedReply(RateLimitReply.BLOCKED, 0, 250, 1000)],
      ...[code(RateLimitReply.STACK_FAILED), text('WRONGTYPE é')],
    ]);
    expect(decide.decode(reply, call)).toEqual({
      now: 1_700_000_000_123,
      stacks: [
        {
          verdict: RateLimitReply.REFUSED,
          limits: [
            { verdict: RateLimitReply.GRANTED, remaining: 9, resetMs: 1000 },
            { verdict: RateLimitReply.BLOCKED, remaining: 0, retryAfterMs: 250, resetMs: 1000 },
          ],
        },
        { verdict: RateLimitReply.STACK_FAILED, error: 'WRONGTYPE é' },
      ],
    });
    const lone = { ...call, args: { ...call.args, stacks: [call.args.stacks[1]] } };
    expect(() => decide.decode(Buffer.concat([double(1), code(7)]), lone)).toThrow(RedisScriptError);
    // a limit's verdict no variant starts with
    expect(() => decide.decode(Buffer.concat([double(1), code(RateLimitReply.GRANTED), code(7)]), lone)).toThrow(RedisScriptError);
    // a reply that is not the packed string its header says
    expect(() => decide.decode([1, 1, 9, 0, 1000, 'g1'], lone)).toThrow(RedisScriptError);
  });

  it('decide.lua: stacks alike one after another go as one run, and the reply is still read per stack', () => {
    const decide = SCRIPT_BINDINGS['rate-limit/decide.lua'];
    const limit = { algorithm: 'sw', limit: 5, windowMs: 100, permits: 1 } as const;
    const one = { consume: '1', limits: [1] } as const;
    const call = {
      keys: { states: ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'] },
      args: {
        now: 7,
        specs: [limit, { ...limit, permits: 3 }],
        // a run of three, a peek breaks it, two stacks of two limits alike, another spec, then
        // the first shape again: a new run, as it does not follow its like
        stacks: [
          one,
          one,
          one,
          { consume: '0', limits: [1] },
          { consume: '1', limits: [1, 2] },
          { consume: '1', limits: [1, 2] },
          { consume: '1', limits: [2] },
          one,
        ],
      },
    } as const;
    expect(decide.encode(call)).toEqual([
      ...[8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 7, 2, 'sw', 5, 100, 1, 'sw', 5, 100, 3],
      ...[3, '1', 1, 1],
      ...[1, '0', 1, 1],
      ...[2, '1', 2, 1, 2],
      ...[1, '1', 1, 2],
      ...[1, '1', 1, 1],
    ]);
    const granted = (...remaining: number[]) =>
      Buffer.concat([code(RateLimitReply.GRANTED), ...remaining.map((left) => chargedReply(left, 100, 1_764_470_000_123_456, 7, 0, left))]);
    const reply = Buffer.concat([double(7), granted(4), granted(3), granted(2), granted(2), granted(1, 1), granted(0, 0), granted(9), granted(8)]);
    const stacks = decide.decode(reply, call).stacks;
    expect(stacks[0]).toEqual({
      verdict: RateLimitReply.GRANTED,
      limits: [{ verdict: RateLimitReply.CHARGED, remaining: 4, resetMs: 100, lifeAt: 1_764_470_000_123_456, lifeNumber: 7, given: 0, grant: 4 }],
    });
    expect(stacks.map((stack) => ('limits' in stack ? stack.limits.map((l) => l.remaining) : stack.error))).toEqual([
      [4],
      [3],
      [2],
      [2],
      [1, 1],
      [0, 0],
      [9],
      [8],
    ]);
  });

  it('claim.lua: a value left out with a default goes as it; one left out at the end does not go', () => {
    const claim = SCRIPT_BINDINGS['delay-queue/claim.lua'];
    const args = { count: 10, visibilityMs: 30_000 };
    expect(claim.encode({ keys: queue, args })).toEqual(['s', 'f', 'd', 'm', '', 10, 30_000, '', '', '', '']);
    expect(claim.encode({ keys: queue, args: { ...args, now: 5, globalConcurrency: 4, rateLimited: '1', wakeChannel: 'w', publish: 'SPUBLISH' } })).toEqual([
      's',
      'f',
      'd',
      'm',
      5,
      10,
      30_000,
      '',
      '',
      4,
      '1',
      'w',
      'SPUBLISH',
    ]);
    const context = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(claim.decode([100, -1, 'id', '{}', '90', 2, 3, 41, '', context], { keys: queue, args })).toEqual({
      now: 100,
      next: -1,
      messages: [{ id: 'id', payload: '{}', runAt: 90, attempt: 2, token: 3, fence: 41, source: '', context }],
    });
    expect(() => claim.decode(3, { keys: queue, args })).toThrow(RedisScriptError);
  });

  it('refund.lua: an optional value after a group goes last, when given', () => {
    const refund = SCRIPT_BINDINGS['rate-limit/refund.lua'];
    const limits = [{ algorithm: 'sw', limit: 5, windowMs: 60_000, permits: 1, grant: 'g' }] as const;
    expect(refund.encode({ keys: { states: ['a'] }, args: { limits } })).toEqual([1, 'a', '', 'sw', 5, 60_000, 1, 'g']);
    expect(refund.encode({ keys: { states: ['a'] }, args: { limits, channel: 'c' } })).toEqual([1, 'a', '', 'sw', 5, 60_000, 1, 'g', 'c']);
    expect(refund.decode([1], { keys: { states: ['a'] }, args: { limits } })).toEqual({ given: [1] });
  });

  it('admit.lua: a group of keys counts in the key count; get.lua: a Lua false reads as null', () => {
    const admit = SCRIPT_BINDINGS['delay-queue/admit.lua'];
    const flows = [{ counter: 'c1', pace: 'p1', slots: 's1', waiting: 'w1', hold: 'h1' }];
    const args = { algorithm: 'fw', limit: 1, windowMs: 1000, adaptive: '0', slots: 2, parkMs: 500, leases: [{ id: 'x', token: 7 }] } as const;
    expect(admit.encode({ keys: { ...queue, flows }, args })).toEqual([
      9,
      's',
      'f',
      'd',
      'm',
      'c1',
      'p1',
      's1',
      'w1',
      'h1',
      '',
      'fw',
      1,
      1000,
      '0',
      2,
      500,
      'x',
      7,
    ]);
    const get = SCRIPT_BINDINGS['expiring-hash/get.lua'];
    const keys = { hash: 'h', index: 'i', outbox: 'o' };
    expect(get.decode([null, -2], { keys, args: { field: 'f' } })).toEqual({ value: null, ttlMs: -2 });
  });
});
