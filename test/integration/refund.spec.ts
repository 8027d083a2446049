import { counterKind, rateLimitSpec } from '../../lib/rate-limit/policy.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { RateLimitReply } from '../../lib/redis/replies.js';
import type { RateLimitPolicy } from '../../lib/index.js';
import { decideOne } from '../harness/decide-one.js';
import { withLimiterApp } from '../harness/limiter-app.js';

// Each algorithm's refund primitive (refund.lua), which RateLimiterService.refund and cross-slot
// stacks use to give back a charge, driven at explicit times with the grant ids decide.lua
// returns: each permit of a grant comes back at most once, and only while the grant counts.
// The times are explicit, but keys still expire in real time, windowMs or less after a charge:
// windows are a minute, so no key a test still reads can expire while a busy machine stalls.
describe('refund primitives', () => {
  const ctx = withLimiterApp();
  const T0 = 1_700_000_040_000; // a multiple of 60_000
  let keyNo = 0;

  function limiterOf(policy: RateLimitPolicy) {
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const spec = rateLimitSpec(policy);
    const key = connection.keys.build(counterKind(spec), `r-${++keyNo}`);
    const args = (permits: number) => [spec.algorithm, spec.limit, spec.windowMs, permits];
    return {
      key,
      /** decide.lua for one limit: allowed, remaining, retryAfterMs, grant id. */
      async charge(now: number, permits: number) {
        const { verdict, remaining, retryAfterMs, grant } = await decideOne(connection, key, spec, now, permits);
        return { allowed: verdict === RateLimitReply.GRANTED, remaining, retryAfterMs, grant };
      },
      async refund(now: number, permits: number, grant: string) {
        return ((await connection.scripts.run('rateLimitRefund', [key], [String(now), ...args(permits), grant])) as number[])[0];
      },
      async remaining(now: number) {
        return (await decideOne(connection, key, spec, now, 1, '0')).remaining;
      },
    };
  }

  it('fixed window: gives back within the grant window only', async () => {
    const limiter = limiterOf({ limit: 5, windowMs: 60_000, algorithm: 'fixed-window' });
    const first = await limiter.charge(T0 + 10, 3);
    expect(await limiter.refund(T0 + 20, 1, first.grant)).toBe(1);
    expect(await limiter.remaining(T0 + 30)).toBe(3);
    // the next window counts its own grants: an old grant gives nothing back from them
    await limiter.charge(T0 + 60_000, 4);
    expect(await limiter.refund(T0 + 60_001, 2, first.grant)).toBe(0);
    expect(await limiter.remaining(T0 + 60_002)).toBe(1);
  });

  it('fixed window: each permit of a grant comes back once, over any number of refunds', async () => {
    const limiter = limiterOf({ limit: 5, windowMs: 60_000, algorithm: 'fixed-window' });
    const a = await limiter.charge(T0, 3);
    const b = await limiter.charge(T0 + 1, 2);
    expect(await limiter.refund(T0 + 2, 2, a.grant)).toBe(2);
    expect(await limiter.refund(T0 + 3, 5, a.grant)).toBe(1);
    expect(await limiter.refund(T0 + 4, 5, a.grant)).toBe(0);
    // b's permits are b's: a's refunds never reach them
    expect(await limiter.remaining(T0 + 5)).toBe(3);
    expect(await limiter.refund(T0 + 6, 5, b.grant)).toBe(2);
    expect(await limiter.remaining(T0 + 7)).toBe(5);
  });

  it('fixed window: a grant made before a reset gives nothing back from the grants after it', async () => {
    const limiter = limiterOf({ limit: 5, windowMs: 60_000, algorithm: 'fixed-window' });
    const before = await limiter.charge(T0, 2);
    await ctx.app.raw.del(limiter.key);
    // the same permits at the same time: only the life tells the grants apart
    const after = await limiter.charge(T0, 2);
    expect(await limiter.refund(T0, 2, before.grant)).toBe(0);
    expect(await limiter.remaining(T0)).toBe(3);
    expect(await limiter.refund(T0, 2, after.grant)).toBe(2);
  });

  it('sliding window: a grant is given back once, in part or whole, and not once aged out', async () => {
    const limiter = limiterOf({ limit: 10, windowMs: 60_000 });
    const a = await limiter.charge(T0, 4);
    const b = await limiter.charge(T0 + 6000, 3);
    expect(await limiter.refund(T0 + 12_000, 4, a.grant)).toBe(4);
    expect(await limiter.refund(T0 + 12_000, 4, a.grant)).toBe(0);
    expect(await limiter.remaining(T0 + 12_000)).toBe(7);
    expect(await limiter.refund(T0 + 18_000, 1, b.grant)).toBe(1);
    expect(await limiter.remaining(T0 + 18_000)).toBe(8);
    // b's other 2 permits still leave at T0 + 66_000, not before
    expect(await limiter.remaining(T0 + 65_999)).toBe(8);
    expect(await limiter.remaining(T0 + 66_000)).toBe(10);
    const c = await limiter.charge(T0 + 120_000, 5);
    expect(await limiter.refund(T0 + 180_000, 5, c.grant)).toBe(0);
    expect(await limiter.remaining(T0 + 180_000)).toBe(10);
    expect(await limiter.refund(T0 + 180_000, 1, 'no-such-grant:1')).toBe(0);
  });

  it('sliding window: a grant refunded in part gives back the rest later, then nothing', async () => {
    const limiter = limiterOf({ limit: 10, windowMs: 60_000 });
    const a = await limiter.charge(T0, 5);
    await limiter.charge(T0 + 1, 2);
    expect(await limiter.refund(T0 + 2, 2, a.grant)).toBe(2);
    expect(await limiter.refund(T0 + 3, 2, a.grant)).toBe(2);
    expect(await limiter.refund(T0 + 4, 2, a.grant)).toBe(1);
    expect(await limiter.refund(T0 + 5, 2, a.grant)).toBe(0);
    expect(await limiter.remaining(T0 + 6)).toBe(8);
  });

  it('sliding window: a grant of a key that emptied and started again is not found', async () => {
    const limiter = limiterOf({ limit: 10, windowMs: 60_000 });
    const old = await limiter.charge(T0, 3);
    await ctx.app.raw.del(limiter.key);
    // the new first grant has the old one's seq, permits and time
    await limiter.charge(T0, 3);
    expect(await limiter.refund(T0 + 1, 3, old.grant)).toBe(0);
    expect(await limiter.remaining(T0 + 1)).toBe(7);
  });

  it('sliding window: a grant is found after refunds of others renumbered it', async () => {
    const limiter = limiterOf({ limit: 100, windowMs: 60_000 });
    const grants = [];
    for (let i = 0; i < 12; i++) grants.push(await limiter.charge(T0 + i * 600, i + 1));
    // refunds of old and new grants rewrite the running totals of the grants on either side
    expect(await limiter.refund(T0 + 12_000, 1, grants[1]!.grant)).toBe(1);
    expect(await limiter.refund(T0 + 12_000, 20, grants[10]!.grant)).toBe(11);
    expect(await limiter.refund(T0 + 12_000, 3, grants[6]!.grant)).toBe(3);
    expect(await limiter.refund(T0 + 12_000, 2, grants[3]!.grant)).toBe(2);
    expect(await limiter.refund(T0 + 12_000, 9, grants[8]!.grant)).toBe(9);
    expect(await limiter.refund(T0 + 12_000, 2, grants[10]!.grant)).toBe(0);
    // 78 - 26 = 52 permits held, 48 left: 50 more need 2 of the oldest gone, which the first
    // two grants now hold (1 each)
    expect(await limiter.remaining(T0 + 12_000)).toBe(48);
    expect(await limiter.charge(T0 + 12_000, 50)).toMatchObject({ allowed: false, remaining: 48, retryAfterMs: 48_600 });
    expect(await limiter.charge(T0 + 12_000, 54)).toMatchObject({ allowed: false, remaining: 48, retryAfterMs: 49_800 });
    expect(await limiter.remaining(T0 + 62_400)).toBe(48 + 1 + 1 + 3 + 2 + 5);
  });

  it('token bucket: tokens come back, never above the limit', async () => {
    const limiter = limiterOf({ limit: 4, windowMs: 60_000, algorithm: 'token-bucket' });
    const g = await limiter.charge(T0, 3);
    expect(await limiter.refund(T0, 2, g.grant)).toBe(2);
    expect(await limiter.remaining(T0)).toBe(3);
    // 15 s refills one token: the bucket is full, nothing more fits in
    expect(await limiter.refund(T0 + 15_000, 1, g.grant)).toBe(0);
    expect(await limiter.remaining(T0 + 15_000)).toBe(4);
  });

  it('token bucket: each permit of a grant comes back once', async () => {
    const limiter = limiterOf({ limit: 4, windowMs: 60_000, algorithm: 'token-bucket' });
    const g = await limiter.charge(T0, 2);
    await limiter.charge(T0, 2);
    expect(await limiter.refund(T0, 1, g.grant)).toBe(1);
    expect(await limiter.refund(T0, 1, g.grant)).toBe(1);
    expect(await limiter.refund(T0, 1, g.grant)).toBe(0);
    expect(await limiter.remaining(T0)).toBe(2);
  });

  it('token bucket: all of a grant comes back when nothing was charged since, even as refill nears full', async () => {
    const limiter = limiterOf({ limit: 4, windowMs: 60_000, algorithm: 'token-bucket' });
    const g = await limiter.charge(T0, 3);
    // 1.4 tokens now: the bucket without the grant is full, and so is this one after the refund
    expect(await limiter.refund(T0 + 6000, 3, g.grant)).toBe(3);
    expect(await limiter.remaining(T0 + 6000)).toBe(4);
  });

  it('token bucket: charged since, whole tokens up to what the bucket without the grant holds', async () => {
    const limiter = limiterOf({ limit: 4, windowMs: 60_000, algorithm: 'token-bucket' });
    const g = await limiter.charge(T0, 3);
    await limiter.charge(T0 + 6000, 1);
    // without g: full until T0 + 6000 (its refill lost to the cap), then 3 tokens; with g: 0.4,
    // and at most 1.4 since g: 2 whole tokens fit under 3, not 3
    expect(await limiter.refund(T0 + 6000, 3, g.grant)).toBe(2);
    expect(await limiter.remaining(T0 + 6000)).toBe(2);
    expect(await limiter.refund(T0 + 6000, 3, g.grant)).toBe(0);
  });

  it('token bucket: a bucket never full again keeps a ledger of its recent refunds only', async () => {
    const limiter = limiterOf({ limit: 10, windowMs: 10_000, algorithm: 'token-bucket' });
    // half used, then each second two permits charged and one given back: refill (one a second)
    // keeps it half full, so its life never ends
    await limiter.charge(T0, 5);
    for (let i = 1; i <= 300; i++) {
      const g = await limiter.charge(T0 + i * 1000, 2);
      expect(g.allowed).toBe(true);
      expect(await limiter.refund(T0 + i * 1000, 1, g.grant)).toBe(1);
    }
    // one entry (32 bytes, after the bucket's 48) per refund of the last few seconds (a grant's
    // refund is bounded by refill within the ~5 s it takes to fill); not 300
    const entries = ((await ctx.app.raw.getBuffer(limiter.key))!.length - 48) / 32;
    expect(entries).toBeGreaterThan(0);
    expect(entries).toBeLessThanOrEqual(10);
    expect(await limiter.remaining(T0 + 300_000)).toBe(5);
  });

  it('token bucket: a grant gives nothing back once the bucket has been full since, even drained again', async () => {
    const limiter = limiterOf({ limit: 4, windowMs: 60_000, algorithm: 'token-bucket' });
    const g = await limiter.charge(T0, 2);
    // full again at T0 + 30_000; drained by a later grant
    await limiter.charge(T0 + 36_000, 4);
    expect(await limiter.refund(T0 + 36_000, 2, g.grant)).toBe(0);
    expect(await limiter.remaining(T0 + 36_000)).toBe(0);
  });
});
