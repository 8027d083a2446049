import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import type { RateLimitPolicy, RateLimiterService } from '../../lib/index.js';
import { counterKind, rateLimitSpec } from '../../lib/rate-limit/policy.js';

// Semantics of each algorithm at explicit times (the scripts' test hook), so nothing here
// depends on how fast the machine is. Keys still expire in real time, though, at most windowMs
// after a charge: the windows of tests that read a key again are 100 s or more, never 1 s.
describe('rate-limit algorithms at explicit times', () => {
  const ctx = withLimiterApp();
  let limiter: RateLimiterService;
  let keyNo = 0;
  const T0 = 1_700_000_000_000; // a multiple of 1000, 10_000 and 100_000: window-aligned
  const nextKey = () => `user-${++keyNo}`;
  /** The slice of windowMs / 64 (windows of 100 s) to whose end a sliding window's key's expiry
   * is rounded up. */
  const SLICE = Math.floor(100_000 / 64);
  /** The decision, without its grantId (an opaque id, present exactly when it charged). */
  const at = (key: string, policy: RateLimitPolicy, now: number, permits = 1) =>
    limiter.decide([{ key, policy, permits }], { now }).then((r) => {
      const { grantId, ...decision } = r.decisions[0]!;
      expect(typeof grantId === 'string' && grantId.length > 0).toBe(decision.allowed);
      return decision;
    });
  /** The Redis key of `key` under `policy`, and its PTTL. */
  const stored = async (policy: RateLimitPolicy, key: string) => {
    const redisKey = `${ctx.app.prefix}${counterKind(rateLimitSpec(policy))}:{${key}}`;
    return { redisKey, ttl: await ctx.app.raw.pttl(redisKey) };
  };
  /** A fixed window's (or sliding window counter's) state as fixed-window.lua packs it: seven
   * doubles, then two per ledger entry. */
  const windowOf = async (redisKey: string) => {
    const value = (await ctx.app.raw.getBuffer(redisKey))!;
    const double = (i: number) => value.readDoubleBE(i * 8);
    const ledger: number[][] = [];
    for (let i = 7; i < value.length / 8; i += 2) ledger.push([double(i), double(i + 1)]);
    return { window: double(0), count: double(1), previous: double(2), life: `${double(3)}${double(4)}`, given: double(5), blockedUntil: double(6), ledger };
  };
  /** A token bucket's state as token-bucket.lua packs it: six doubles, then four per ledger entry. */
  const bucketOf = async (redisKey: string) => {
    const value = (await ctx.app.raw.getBuffer(redisKey))!;
    const double = (i: number) => value.readDoubleBE(i * 8);
    const ledger: number[][] = [];
    for (let i = 6; i < value.length / 8; i += 4) ledger.push([double(i), double(i + 1), double(i + 2), double(i + 3)]);
    return { units: double(0), at: double(1), life: `${double(2)}${double(3)}`, given: double(4), blockedUntil: double(5), ledger };
  };
  const peekAt = (key: string, policy: RateLimitPolicy, now: number) => limiter.decide([{ key, policy }], { now, peek: true }).then((r) => r.decisions[0]!);

  beforeAll(() => {
    limiter = ctx.app.limiter;
  });

  describe('fixed-window', () => {
    const policy: RateLimitPolicy = { limit: 3, windowMs: 100_000, algorithm: 'fixed-window' };

    it('counts per aligned window and resets at the boundary', async () => {
      // (explicit times, but keys still expire in real time: keep every TTL here long)
      const key = nextKey();
      expect(await at(key, policy, T0 + 10_000)).toEqual({ allowed: true, limit: 3, remaining: 2, retryAfterMs: 0, resetMs: 90_000 });
      await at(key, policy, T0 + 20_000);
      expect(await at(key, policy, T0 + 30_000)).toMatchObject({ allowed: true, remaining: 0, resetMs: 70_000 });
      expect(await at(key, policy, T0 + 40_000)).toEqual({ allowed: false, limit: 3, remaining: 0, retryAfterMs: 60_000, resetMs: 60_000 });
      // a new window at T0 + 100_000, although the previous grants are only 70-90 s old
      expect(await at(key, policy, T0 + 100_000)).toMatchObject({ allowed: true, remaining: 2, resetMs: 100_000 });
    });

    it('refuses permits that do not fit and charges nothing', async () => {
      const key = nextKey();
      await at(key, policy, T0, 2);
      expect(await at(key, policy, T0 + 1000, 2)).toEqual({ allowed: false, limit: 3, remaining: 1, retryAfterMs: 99_000, resetMs: 99_000 });
      expect(await at(key, policy, T0 + 1000, 1)).toMatchObject({ allowed: true, remaining: 0 });
    });

    it('sets the key to expire at the end of the window', async () => {
      // on the server clock: a day's window, so the key cannot expire before PTTL reads it
      const day: RateLimitPolicy = { ...policy, windowMs: DAY_MS };
      await awayFromWindowEnd(DAY_MS);
      const key = nextKey();
      const before = Date.now();
      await limiter.consume(key, day);
      const { ttl } = await stored(day, key);
      expect(ttl).toBeGreaterThan(0);
      // the window's end, not windowMs after the grant (the servers run on this machine's clock)
      expect(ttl).toBeLessThanOrEqual(DAY_MS - (before % DAY_MS));
    });

    it("expires at the window's end, not windowMs after the first grant", async () => {
      // explicit times: the script sets the expiry from `now`, 15 s before this minute ends
      const minute: RateLimitPolicy = { limit: 3, windowMs: 60_000, algorithm: 'fixed-window' };
      const key = nextKey();
      await at(key, minute, Math.floor(T0 / 60_000) * 60_000 + 45_000);
      const { ttl } = await stored(minute, key);
      expect(ttl).toBeLessThanOrEqual(15_000);
      // (minus what a slow machine spends between the script and the PTTL)
      expect(ttl).toBeGreaterThan(10_000);
    });

    it('stores its window, count, life, refunds and block as one packed string', async () => {
      const key = nextKey();
      const { redisKey } = await stored(policy, key);
      const window = T0 / 100_000;
      const first = await limiter.decide([{ key, policy }], { now: T0 });
      await at(key, policy, T0 + 1000);
      const { life } = await windowOf(redisKey);
      // the id names the stored life: '<life>:<c>:<permits>', then its MAC
      expect(first.decisions[0]!.grantId).toMatch(new RegExp(`^${life}:0:1\\.`));
      expect(await windowOf(redisKey)).toEqual({ window, count: 2, previous: 0, life, given: 0, blockedUntil: 0, ledger: [] });
      expect(await limiter.refundLimit({ key, policy }, first.decisions[0]!.grantId!, 1, { now: T0 + 2000 })).toBe(1);
      // the ledger: the grant's number (c + g before it) and the permits given back of it
      expect(await windowOf(redisKey)).toEqual({ window, count: 1, previous: 0, life, given: 1, blockedUntil: 0, ledger: [[0, 1]] });
      await limiter.blockLimit({ key, policy }, 5000, { now: T0 + 3000 });
      expect(await windowOf(redisKey)).toEqual({ window, count: 1, previous: 0, life, given: 1, blockedUntil: T0 + 8000, ledger: [[0, 1]] });
      expect(await at(key, policy, T0 + 4000)).toEqual({ allowed: false, limit: 3, remaining: 0, retryAfterMs: 4000, resetMs: 96_000 });
      // the block over, the life goes on: the next grant is numbered after both before
      const next = await limiter.decide([{ key, policy }], { now: T0 + 9000 });
      expect(next.decisions[0]).toMatchObject({ allowed: true, remaining: 1 });
      expect(next.decisions[0]!.grantId).toMatch(new RegExp(`^${life}\\+1:1:1\\.`));
      expect(await limiter.refundLimit({ key, policy }, next.decisions[0]!.grantId!, 1, { now: T0 + 9000 })).toBe(1);
      expect(await windowOf(redisKey)).toMatchObject({
        window,
        count: 1,
        life,
        given: 2,
        ledger: [
          [0, 1],
          [2, 1],
        ],
      });
      // a refund again of a grant given back whole gives nothing
      expect(await limiter.refundLimit({ key, policy }, next.decisions[0]!.grantId!, 1, { now: T0 + 9000 })).toBe(0);
    });

    it("keeps 0.2's counter apart: a process of each version side by side counts on its own", async () => {
      const key = nextKey();
      const { redisKey } = await stored(policy, key);
      // 0.2's key: kind 'fw', fields w, c, e; full
      const old = redisKey.replace(':fw4.', ':fw.');
      await ctx.app.raw.hset(old, 'w', String(T0 / 100_000), 'c', '3', 'e', '1700000000000123');
      expect(await at(key, policy, T0 + 1000)).toMatchObject({ allowed: true, remaining: 2 });
      expect(await ctx.app.raw.hgetall(old)).toEqual({ w: String(T0 / 100_000), c: '3', e: '1700000000000123' });
    });
  });

  describe('sliding-window', () => {
    const policy: RateLimitPolicy = { limit: 3, windowMs: 100_000, algorithm: 'sliding-window' };

    it('never grants more than limit in any window span and says exactly when the next fits', async () => {
      const key = nextKey();
      await at(key, policy, T0 + 0);
      await at(key, policy, T0 + 30_000);
      expect(await at(key, policy, T0 + 60_000)).toEqual({ allowed: true, limit: 3, remaining: 0, retryAfterMs: 0, resetMs: 100_000 });
      // the grant at T0 ages out at T0 + 100_000, not at a window boundary
      expect(await at(key, policy, T0 + 99_999)).toEqual({ allowed: false, limit: 3, remaining: 0, retryAfterMs: 1, resetMs: 60_001 });
      expect(await at(key, policy, T0 + 100_000)).toMatchObject({ allowed: true, remaining: 0 });
      // two permits need the grants of T0 + 30_000 and T0 + 60_000 to age out
      expect(await at(key, policy, T0 + 110_000, 2)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 50_000 });
      expect(await at(key, policy, T0 + 160_000, 2)).toMatchObject({ allowed: true, remaining: 0, resetMs: 100_000 });
    });

    it('resetMs is the time until the newest grant ages out', async () => {
      const key = nextKey();
      await at(key, policy, T0);
      await at(key, policy, T0 + 40_000);
      expect(await peekAt(key, policy, T0 + 50_000)).toEqual({ allowed: true, limit: 3, remaining: 1, retryAfterMs: 0, resetMs: 90_000 });
    });

    /** The grants a sliding window stores: its members scored by a time (ms >= 0). */
    const grants = (redisKey: string) => ctx.app.raw.zrangebyscore(redisKey, 0, '(+inf');

    it('keeps one entry per live grant and expires windowMs after the last grant, to a slice', async () => {
      const key = nextKey();
      for (let i = 0; i < 10; i++) await limiter.consume(key, policy);
      const { redisKey, ttl } = await stored(policy, key);
      expect(await grants(redisKey)).toHaveLength(3);
      expect(ttl).toBeGreaterThan(0);
      // rounded up to the end of a slice of windowMs / 64
      expect(ttl).toBeLessThanOrEqual(100_000 + SLICE);
    });

    it('a grant that needs the key past the slice its expiry reaches sets it again; one within it does not', async () => {
      const key = nextKey();
      await at(key, policy, T0);
      const { redisKey } = await stored(policy, key);
      // as if most of the window had passed in real time since that grant
      await ctx.app.raw.pexpire(redisKey, 5_000);
      await at(key, policy, T0 + SLICE);
      expect((await stored(policy, key)).ttl).toBeGreaterThan(90_000);
      expect((await stored(policy, key)).ttl).toBeLessThanOrEqual(100_000 + SLICE);
      // a grant whose need lies within the slice already set leaves the expiry as it is: here the
      // one this test set by hand (the library never shortens an expiry like that)
      await ctx.app.raw.pexpire(redisKey, 5_000);
      await Promise.all([at(key, policy, T0 + SLICE), at(key, policy, T0 + SLICE)]);
      expect((await stored(policy, key)).ttl).toBeLessThanOrEqual(5_000);
    });

    it('stores a grant of many permits as one entry, and says exactly when it ages out', async () => {
      const key = nextKey();
      const big: RateLimitPolicy = { limit: 1_000_000, windowMs: 60_000 };
      expect(await at(key, big, T0, 1_000_000)).toEqual({ allowed: true, limit: 1_000_000, remaining: 0, retryAfterMs: 0, resetMs: 60_000 });
      expect(await grants((await stored(big, key)).redisKey)).toHaveLength(1);
      expect(await at(key, big, T0 + 100, 1)).toEqual({ allowed: false, limit: 1_000_000, remaining: 0, retryAfterMs: 59_900, resetMs: 59_900 });
      expect(await at(key, big, T0 + 60_000, 1_000_000)).toMatchObject({ allowed: true, remaining: 0 });
      expect(await grants((await stored(big, key)).redisKey)).toHaveLength(1);
    });

    it("keeps 0.2's counter apart: a process of each version side by side counts on its own", async () => {
      const key = nextKey();
      const { redisKey } = await stored(policy, key);
      // 0.2's key: kind 'sw', counter '#<seq>.<life>' scored -1 - (permits held); full
      const old = redisKey.replace(':sw5.', ':sw.');
      const state = ['-4', '#3.1700000000000123', String(T0), 'a1:1:1', String(T0 + 10_000), 'a2:2:3'];
      await ctx.app.raw.zadd(old, ...state);
      expect(await at(key, policy, T0 + 20_000)).toMatchObject({ allowed: true, remaining: 2 });
      expect(await ctx.app.raw.zrange(old, '0', '-1', 'WITHSCORES')).toEqual([
        '#3.1700000000000123',
        '-4',
        'a1:1:1',
        String(T0),
        'a2:2:3',
        String(T0 + 10_000),
      ]);
    });

    it("reads a counter member of another shape (0.2's) from the grants, and goes on counting", async () => {
      const key = nextKey();
      const { redisKey } = await stored(policy, key);
      // two grants of 1 and one of 2 permits is 4, over the limit of 3; the counter held them
      const member = (seq: number, permits: number, total: number, time: number) => {
        const bytes = Buffer.alloc(32);
        [seq, permits, total, time].forEach((value, i) => bytes.writeDoubleBE(value, 8 * i));
        return bytes;
      };
      const grant = (seq: number, permits: number, total: number, time: number) => [String(time), member(seq, permits, total, time)];
      await ctx.app.raw.zadd(redisKey, '-5', '#3.1700000000000123', ...grant(1, 1, 1, T0), ...grant(2, 1, 2, T0 + 10_000), ...grant(3, 2, 4, T0 + 20_000));
      expect(await peekAt(key, policy, T0 + 50_000)).toEqual({ allowed: false, limit: 3, remaining: 0, retryAfterMs: 60_000, resetMs: 70_000 });
      // the first two age out: the grant of 2 leaves 1
      expect(await at(key, policy, T0 + 110_000)).toEqual({ allowed: true, limit: 3, remaining: 0, retryAfterMs: 0, resetMs: 100_000 });
      // seqs go on from the newest grant; the old counter is gone
      const members = await ctx.app.raw.zrangeBuffer(redisKey, '0', '-1');
      expect(members.filter((m) => m[0] === 0x23)).toHaveLength(1);
      expect(members.filter((m) => m[0] !== 0x23)).toEqual([member(3, 2, 4, T0 + 20_000), member(4, 1, 5, T0 + 110_000)]);
    });

    it('waits for just enough of the oldest grants to age out', async () => {
      const key = nextKey();
      const six: RateLimitPolicy = { limit: 6, windowMs: 100_000 };
      await at(key, six, T0, 2);
      await at(key, six, T0 + 10_000, 3);
      await at(key, six, T0 + 20_000, 1);
      expect(await at(key, six, T0 + 30_000, 2)).toMatchObject({ allowed: false, retryAfterMs: 70_000 });
      expect(await at(key, six, T0 + 30_000, 4)).toMatchObject({ allowed: false, retryAfterMs: 80_000 });
      expect(await at(key, six, T0 + 30_000, 6)).toMatchObject({ allowed: false, retryAfterMs: 90_000 });
      expect(await at(key, six, T0 + 100_000, 3)).toMatchObject({ allowed: false, remaining: 2, retryAfterMs: 10_000 });
      expect(await at(key, six, T0 + 110_000, 3)).toMatchObject({ allowed: true, remaining: 2 });
    });

    it('walks past many small grants to find the wait', async () => {
      const key = nextKey();
      const many: RateLimitPolicy = { limit: 250, windowMs: 60_000 };
      for (let i = 0; i < 250; i++) await at(key, many, T0 + i);
      // 201 permits need the 201 oldest grants gone: the one at T0 + 200 leaves at T0 + 60_200
      expect(await at(key, many, T0 + 300, 201)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 59_900 });
      expect(await at(key, many, T0 + 60_199, 200)).toMatchObject({ allowed: true, remaining: 0 });
      // what aged out is counted out at once, and stays until the stored counter's oldest grant
      // is a slice (windowMs / 64) behind the oldest live one: the next grant after that removes it
      expect(await grants((await stored(many, key)).redisKey)).toHaveLength(251);
      // (the grants from T0 + 211 on are live: 39 of them and the 200)
      expect(await at(key, many, T0 + 60_210)).toMatchObject({ allowed: true, remaining: 10 });
      expect(await grants((await stored(many, key)).redisKey)).toHaveLength(252);
      expect(await at(key, many, T0 + 61_200)).toMatchObject({ allowed: true, remaining: 48 });
      expect(await grants((await stored(many, key)).redisKey)).toHaveLength(3);
    });
  });

  describe('token-bucket', () => {
    const policy: RateLimitPolicy = { limit: 4, windowMs: 100_000, algorithm: 'token-bucket' };

    it('refills continuously with fractional tokens, never rounded to seconds', async () => {
      const key = nextKey();
      expect(await at(key, policy, T0, 4)).toEqual({ allowed: true, limit: 4, remaining: 0, retryAfterMs: 0, resetMs: 100_000 });
      // 1 token refills every 25 s
      expect(await at(key, policy, T0 + 10_000)).toEqual({ allowed: false, limit: 4, remaining: 0, retryAfterMs: 15_000, resetMs: 90_000 });
      expect(await at(key, policy, T0 + 25_000)).toMatchObject({ allowed: true, remaining: 0, resetMs: 100_000 });
      // 0.6 tokens after 15 s is not one token; 1.2 tokens after 30 s is
      expect(await at(key, policy, T0 + 40_000)).toMatchObject({ allowed: false, retryAfterMs: 10_000 });
      expect(await at(key, policy, T0 + 55_000)).toMatchObject({ allowed: true, remaining: 0, resetMs: 95_000 });
    });

    it('is exact at fractional boundaries (3 tokens per 100 s: one per 33_333.3 ms)', async () => {
      const key = nextKey();
      const thirds: RateLimitPolicy = { limit: 3, windowMs: 100_000, algorithm: 'token-bucket' };
      await at(key, thirds, T0, 3);
      expect(await at(key, thirds, T0 + 33_333)).toMatchObject({ allowed: false, retryAfterMs: 1 });
      expect(await at(key, thirds, T0 + 33_334)).toMatchObject({ allowed: true, remaining: 0 });
      // 0.00002 tokens were left over, so the next token is due at T0 + 66_666.67, not at T0 + 66_667.33
      expect(await at(key, thirds, T0 + 66_666)).toMatchObject({ allowed: false, retryAfterMs: 1 });
      expect(await at(key, thirds, T0 + 66_667)).toMatchObject({ allowed: true });
    });

    it('expires the key when the bucket would be full again', async () => {
      const key = nextKey();
      await limiter.consume(key, policy, 2);
      const { ttl } = await stored(policy, key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(50_000);
    });

    it('stores units, time, life, refunds and block as one packed string', async () => {
      const key = nextKey();
      const { redisKey } = await stored(policy, key);
      await at(key, policy, T0);
      const second = await limiter.decide([{ key, policy }], { now: T0 });
      const { life } = await bucketOf(redisKey);
      // the id names the stored life: '<life>:<permits>:<ms>:<units left>', then its MAC
      expect(second.decisions[0]!.grantId).toMatch(new RegExp(`^${life}:1:${T0}:200000\\.`));
      // units of 1 / windowMs token: 4 tokens are 400_000
      expect(await bucketOf(redisKey)).toEqual({ units: 200_000, at: T0, life, given: 0, blockedUntil: 0, ledger: [] });
      expect(await limiter.refundLimit({ key, policy }, second.decisions[0]!.grantId!, 1, { now: T0 })).toBe(1);
      // the ledger: the grant's time, the units left after it, g before it, permits given back
      expect(await bucketOf(redisKey)).toEqual({ units: 300_000, at: T0, life, given: 100_000, blockedUntil: 0, ledger: [[T0, 200_000, 0, 1]] });
      await limiter.blockLimit({ key, policy }, 5000, { now: T0 });
      expect(await bucketOf(redisKey)).toEqual({ units: 300_000, at: T0, life, given: 100_000, blockedUntil: T0 + 5000, ledger: [[T0, 200_000, 0, 1]] });
      expect(await at(key, policy, T0 + 1000)).toEqual({ allowed: false, limit: 4, remaining: 0, retryAfterMs: 4000, resetMs: 24_000 });
      // the block over, the life goes on, with what was given back in it
      expect(await at(key, policy, T0 + 6000)).toMatchObject({ allowed: true, remaining: 2 });
      expect(await bucketOf(redisKey)).toMatchObject({ life, given: 100_000, blockedUntil: 0 });
    });
  });

  describe('funnel', () => {
    it('is a leaky bucket: capacity units refilled evenly over leakingDurationMs', async () => {
      const key = nextKey();
      const funnel = { capacity: 2, leakingDurationMs: 60_000 };
      const f = (now: number, quota = 1) => limiter.decide([{ key, funnel, permits: quota }], { now }).then((r) => r.decisions[0]!);
      expect(await f(T0, 2)).toMatchObject({ allowed: true, limit: 2, remaining: 0, resetMs: 60_000 });
      expect(await f(T0 + 1)).toMatchObject({ allowed: false, retryAfterMs: 29_999 });
      expect(await f(T0 + 30_000)).toMatchObject({ allowed: true, remaining: 0 });
    });

    it('funnel() charges the quota', async () => {
      const decision = await limiter.funnel(nextKey(), { capacity: 5, leakingDurationMs: 1000 }, 3);
      expect(decision).toMatchObject({ allowed: true, limit: 5, remaining: 2 });
    });
  });

  describe('sliding-window-counter', () => {
    // 10 per 10 s: a permit of the previous window weighs (10_000 - elapsed) / 10_000
    const policy: RateLimitPolicy = { limit: 10, windowMs: 10_000, algorithm: 'sliding-window-counter' };

    it("weighs the previous window's count by the part a window ending now still covers", async () => {
      const key = nextKey();
      expect(await at(key, policy, T0 + 5_000, 8)).toEqual({ allowed: true, limit: 10, remaining: 2, retryAfterMs: 0, resetMs: 15_000 });
      // 2.5 s into the next window the 8 weigh 6: 4 fit, 5 fit once they weigh 5 (at 3.75 s)
      expect(await at(key, policy, T0 + 12_500, 5)).toEqual({ allowed: false, limit: 10, remaining: 4, retryAfterMs: 1_250, resetMs: 7_500 });
      expect(await at(key, policy, T0 + 13_750, 5)).toEqual({ allowed: true, limit: 10, remaining: 0, retryAfterMs: 0, resetMs: 16_250 });
      // one more once the 8 weigh 4 (at 5 s); 6 more only in the next window, once these 5 weigh 4
      expect(await at(key, policy, T0 + 13_750, 1)).toMatchObject({ allowed: false, retryAfterMs: 1_250 });
      expect(await at(key, policy, T0 + 13_750, 6)).toMatchObject({ allowed: false, retryAfterMs: 6_250 + 2_000 });
    });

    it('grants at most 2 × limit - 1 in a span of windowMs, under a burst at the boundary', async () => {
      const key = nextKey();
      // the adversary: all 10 in the last ms of a window, then as many as fit just before the
      // next one ends, while the first 10 are still within windowMs of now
      expect(await at(key, policy, T0 + 9_999, 10)).toMatchObject({ allowed: true });
      let granted = 10;
      for (const now of [T0 + 19_998, T0 + 19_998]) {
        const decision = await at(key, policy, now, 9);
        if (decision.allowed) granted += 9;
      }
      // the 10 at T0 + 9_999 weigh 10 × 2 / 10_000 at T0 + 19_998: 9 fit, once
      expect(granted).toBe(19);
      // a fixed window's own count never passes the limit
      expect(await at(key, policy, T0 + 19_999, 1)).toMatchObject({ allowed: false, remaining: 0 });
    });

    it('is O(1): one string of a few numbers, expiring when its newest window stops weighing', async () => {
      const key = nextKey();
      const day: RateLimitPolicy = { limit: 100, windowMs: DAY_MS, algorithm: 'sliding-window-counter' };
      await awayFromWindowEnd(DAY_MS);
      for (let i = 0; i < 50; i++) await limiter.consume(key, day);
      const { redisKey, ttl } = await stored(day, key);
      expect(await windowOf(redisKey)).toMatchObject({ window: Math.floor(Date.now() / DAY_MS), count: 50, ledger: [] });
      // until the end of the window after this one: more than a day, at most two
      expect(ttl).toBeGreaterThan(DAY_MS);
      expect(ttl).toBeLessThanOrEqual(2 * DAY_MS);
    });
  });

  describe.each(['fixed-window', 'sliding-window', 'sliding-window-counter', 'token-bucket'] as const)('%s: common rules', (algorithm) => {
    // a day: no fixed window ends, and no bucket refills a permit, between a test's calls
    const policy: RateLimitPolicy = { limit: 2, windowMs: DAY_MS, algorithm };
    beforeEach(() => awayFromWindowEnd(DAY_MS));

    it('peek on an unused key grants the full limit and resets in 0 ms', async () => {
      expect(await limiter.peek(nextKey(), policy)).toEqual({ allowed: true, limit: 2, remaining: 2, retryAfterMs: 0, resetMs: 0 });
    });

    it('peek charges nothing', async () => {
      const key = nextKey();
      await limiter.consume(key, policy);
      for (let i = 0; i < 3; i++) expect(await limiter.peek(key, policy)).toMatchObject({ allowed: true, remaining: 1 });
      expect(await limiter.consume(key, policy)).toMatchObject({ allowed: true, remaining: 0 });
      expect(await limiter.peek(key, policy)).toMatchObject({ allowed: false, remaining: 0 });
    });

    it('permits > limit is a RangeError, not a wait', async () => {
      await expect(limiter.consume(nextKey(), policy, 3)).rejects.toThrow(RangeError);
      await expect(limiter.acquire(nextKey(), policy, { permits: 3 })).rejects.toThrow(/permits \(3\) exceeds the limit \(2\)/);
    });

    it('reset() forgets what the key used', async () => {
      const key = nextKey();
      await limiter.consume(key, policy, 2);
      expect((await limiter.consume(key, policy)).allowed).toBe(false);
      await limiter.reset(key, policy);
      expect(await limiter.peek(key, policy)).toMatchObject({ allowed: true, remaining: 2, resetMs: 0 });
      expect(await ctx.app.keys(`${ctx.app.prefix}*{${key}}`)).toEqual([]);
    });

    it('uses the server clock: a refused call says how long to wait, and waiting that long works', async () => {
      const key = nextKey();
      const short: RateLimitPolicy = { limit: 1, windowMs: 500, algorithm };
      // On a loaded machine a window boundary can fall between two calls: call until one is refused.
      let refused = await limiter.consume(key, short);
      for (let attempt = 0; attempt < 3 && refused.allowed; attempt++) refused = await limiter.consume(key, short);
      expect(refused.allowed).toBe(false);
      expect(refused.retryAfterMs).toBeGreaterThan(0);
      // (a counter of the window's whole limit weighs until the next window ends)
      expect(refused.retryAfterMs).toBeLessThanOrEqual(algorithm === 'sliding-window-counter' ? 1000 : 500);
      await new Promise((r) => setTimeout(r, refused.retryAfterMs + 5));
      expect((await limiter.consume(key, short)).allowed).toBe(true);
    });
  });
});
