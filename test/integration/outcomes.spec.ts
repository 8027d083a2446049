import type { RateLimitPolicy, StackedLimit } from '../../lib/index.js';
import { withLimiterApp } from '../harness/limiter-app.js';

// refund, penalize and block through RateLimiterService, on the Redis clock unless a test needs
// explicit times (the `now` test hook of the stack-level forms).
describe('refund, penalize and block', () => {
  const ctx = withLimiterApp();
  const T0 = 2_000_000_000_000; // a multiple of 60_000
  let keyNo = 0;
  const nextKey = () => `o-${++keyNo}`;
  const ALGORITHMS = ['fixed-window', 'sliding-window', 'token-bucket'] as const;
  const policyOf = (algorithm: (typeof ALGORITHMS)[number]): RateLimitPolicy => ({ limit: 5, windowMs: 60_000, algorithm });

  describe.each(ALGORITHMS)('%s', (algorithm) => {
    const policy = policyOf(algorithm);

    it('refund gives a grant back once, in part then the rest, then 0', async () => {
      const { limiter } = ctx.app;
      const limit: StackedLimit = { key: nextKey(), policy };
      const grant = (await limiter.decide([{ ...limit, permits: 3 }], { now: T0 })).decisions[0]!;
      expect(grant.grantId).toEqual(expect.any(String));
      expect(await limiter.refundLimit(limit, grant.grantId!, 1, { now: T0 })).toBe(1);
      expect(await limiter.refundLimit(limit, grant.grantId!, undefined, { now: T0 })).toBe(2);
      expect(await limiter.refundLimit(limit, grant.grantId!, undefined, { now: T0 })).toBe(0);
      expect((await limiter.decide([limit], { now: T0, peek: true })).decisions[0]).toMatchObject({ allowed: true, remaining: 5 });
    });

    it('refund on the Redis clock: the short form, twice', async () => {
      const { limiter } = ctx.app;
      const key = nextKey();
      const grant = await limiter.consume(key, policy, 2);
      // a token bucket refills a little meanwhile, and never holds more than its limit
      expect(await limiter.refund(key, policy, grant.grantId!)).toEqual(algorithm === 'token-bucket' ? expect.any(Number) : 2);
      expect(await limiter.refund(key, policy, grant.grantId!)).toBe(0);
    });

    it('refusals and peeks carry no grantId; penalties charge past the limit', async () => {
      const { limiter } = ctx.app;
      const key = nextKey();
      expect(await limiter.consume(key, policy, 4)).toMatchObject({ allowed: true, remaining: 1 });
      expect((await limiter.consume(key, policy, 2)).grantId).toBeUndefined();
      expect((await limiter.peek(key, policy)).grantId).toBeUndefined();
      const penalty = await limiter.penalize(key, policy, 7);
      expect(penalty).toMatchObject({ allowed: false, limit: 5, remaining: 0 });
      expect(penalty.grantId).toBeUndefined();
      expect(penalty.retryAfterMs).toBeGreaterThan(0);
      // more penalty, longer wait (a fixed window waits for its end whatever it holds)
      const more = await limiter.penalize(key, policy, 7);
      expect(more.retryAfterMs).toBeGreaterThanOrEqual(algorithm === 'fixed-window' ? penalty.retryAfterMs - 1000 : penalty.retryAfterMs);
      expect(await limiter.consume(key, policy)).toMatchObject({ allowed: false, remaining: 0 });
    });

    it('block refuses for its duration, then the key counts as before', async () => {
      const { limiter } = ctx.app;
      const key = nextKey();
      const limit: StackedLimit = { key, policy };
      await limiter.decide([{ ...limit, permits: 2 }], { now: T0 });
      await limiter.blockLimit(limit, 30_000, { now: T0 + 1 });
      expect(await limiter.decide([limit], { now: T0 + 2 })).toMatchObject({ allowed: false, retryAfterMs: 29_999 });
      expect((await limiter.decide([limit], { now: T0 + 2, peek: true })).decisions[0]).toMatchObject({ allowed: false, remaining: 0 });
      // a shorter block does not cut a longer one short
      await limiter.blockLimit(limit, 10, { now: T0 + 3 });
      expect(await limiter.decide([limit], { now: T0 + 30_000 })).toMatchObject({ allowed: false, retryAfterMs: 1 });
      // after: what the key used is still counted (the token bucket refilled some meanwhile)
      const after = await limiter.decide([limit], { now: T0 + 30_001 });
      expect(after.decisions[0]).toMatchObject({ allowed: true, remaining: algorithm === 'token-bucket' ? 4 : 2 });
    });
  });
});
