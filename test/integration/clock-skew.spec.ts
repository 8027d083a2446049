import { jest } from '@jest/globals';
import { awayFromWindowEnd } from '../harness/fixed-windows.js';
import { TestRedis } from '../harness/redis-server.js';
import { limiterModule, uniquePrefix } from '../harness/limiter-app.js';
import type { RateLimitAlgorithm } from '../../lib/index.js';

// Two app instances whose local clocks disagree by minutes share one limit and still agree: the
// scripts read time from Redis, never from the caller.
describe('clock skew between app instances', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  it.each<RateLimitAlgorithm>(['fixed-window', 'sliding-window', 'token-bucket'])('%s', async (algorithm) => {
    const keyPrefix = uniquePrefix('skew');
    const a = await limiterModule(redis, { keyPrefix });
    const b = await limiterModule(redis, { keyPrefix });
    const realNow = Date.now.bind(Date);
    const skews = [0, 7 * 60_000, -5 * 60_000];
    try {
      // a minute, shorter than the skews, so a caller's clock would put the calls in other windows;
      // the 30 calls must all fall in one window of the server's clock: none may end mid-test
      const policy = { limit: 10, windowMs: 60_000, algorithm };
      await awayFromWindowEnd(policy.windowMs);
      const decisions = [];
      const started = realNow();
      for (let i = 0; i < 30; i++) {
        // each call sees a different local clock, minutes apart
        jest.spyOn(Date, 'now').mockImplementation(() => realNow() + skews[i % 3]!);
        decisions.push(await (i % 2 ? a : b).limiter.consume('shared', policy));
      }
      expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
      const resets = decisions.filter((d) => !d.allowed).map((d) => d.resetMs);
      // both instances report the same reset, to within the test's own running time (minutes of
      // skew would show; beside a CPU hog the 30 calls took 4.5 s)
      expect(Math.max(...resets) - Math.min(...resets)).toBeLessThanOrEqual(realNow() - started + 1);
      expect(Math.max(...resets)).toBeLessThanOrEqual(60_000);
    } finally {
      jest.restoreAllMocks();
      await a.close();
      await b.close();
    }
  });
});
