import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { withLimiterApp } from '../harness/limiter-app.js';
import type { RateLimitPolicy } from '../../lib/index.js';
import { counterKind, rateLimitSpec } from '../../lib/rate-limit/policy.js';

// A counter's key must outlive what its grants need (a key gone early reads as an empty one,
// which grants too much). Most grants on a sliding window leave its expiry as an earlier one set
// it, rounded up to a slice of windowMs / 64 (sw_expire, lua/rate-limit/sliding-window.lua); a
// token bucket's is set by each grant, and a refund shortens it. On the server clock, with short
// windows, so slices pass while the test runs; the servers run on this machine's clock, so the
// key needs to last at least until the time before a peek plus the resetMs it returns.
describe('a counter key outlives what its grants need (server clock)', () => {
  const ctx = withLimiterApp();
  const WINDOW_MS = 640;
  const SLICE = WINDOW_MS / 64;
  let keyNo = 0;

  const algorithms = ['sliding-window', 'token-bucket'] as const;

  it.each(algorithms)('%s: grants, refusals and refunds in a run never leave the key short', async (algorithm) => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ permits: fc.integer({ min: 1, max: 4 }), refund: fc.boolean(), pauseMs: fc.integer({ min: 0, max: 12 }) }), {
          minLength: 10,
          maxLength: 60,
        }),
        async (steps) => {
          const key = `k-${algorithm}-${++keyNo}`;
          const policy: RateLimitPolicy = { limit: 200, windowMs: WINDOW_MS, algorithm };
          const redisKey = `${ctx.app.prefix}${counterKind(rateLimitSpec(policy))}:{${key}}`;
          for (const { permits, refund, pauseMs } of steps) {
            if (pauseMs > 0) await sleep(pauseMs);
            const decision = await ctx.app.limiter.consume(key, policy, permits);
            if (decision.allowed && refund) await ctx.app.limiter.refund(key, policy, decision.grantId!, 1);
            // what the key needs now: to last until the limit is full again (resetMs), counted
            // from a time no later than the server's when it answered
            const before = Date.now();
            const { resetMs } = await ctx.app.limiter.peek(key, policy);
            const ttl = await ctx.app.raw.pttl(redisKey);
            const left = before + resetMs - Date.now();
            if (left <= 1) continue;
            // (PTTL rounds down to the ms) and not more than a slice past a whole window
            expect(ttl).toBeGreaterThanOrEqual(left - 1);
            expect(ttl).toBeLessThanOrEqual(WINDOW_MS + SLICE);
          }
        },
      ),
      { numRuns: 12 },
    );
  });
});
