import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { transpileLib } from '../harness/transpiled-lib.js';
import { describeOnAServer } from '../harness/on-a-server.js';
import { TestRedis } from '../harness/redis-server.js';
import { limiterModule, uniquePrefix } from '../harness/limiter-app.js';
import type { RateLimitAlgorithm } from '../../lib/index.js';

const run = promisify(execFile);
const ALGORITHMS: RateLimitAlgorithm[] = ['fixed-window', 'sliding-window', 'sliding-window-counter', 'token-bucket'];
// Windows long enough that nothing ages out or refills during the test (a fixed window
// boundary falls inside a run with odds of about 1 in 10^7).
const WINDOW_MS = 10_000_000_000;

describe('exactness under concurrency', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  it.each(ALGORITHMS)('%s: 1,000 concurrent consume with limit 100 grant exactly 100', async (algorithm) => {
    // exactness is the point here, not latency: a loaded CI machine may take more than 500 ms
    const app = await limiterModule(redis, { commandTimeoutMs: 5000 });
    try {
      const policy = { limit: 100, windowMs: WINDOW_MS, algorithm };
      const decisions = await Promise.all(Array.from({ length: 1000 }, () => app.limiter.consume('hot', policy)));
      expect(decisions.filter((d) => d.allowed)).toHaveLength(100);
      expect(decisions.filter((d) => !d.allowed).every((d) => d.remaining === 0 && d.retryAfterMs > 0)).toBe(true);
    } finally {
      await app.close();
    }
  });

  describeOnAServer('4 separate Node processes sharing one Redis', () => {
    let libDir: string;
    beforeAll(() => {
      libDir = transpileLib('concurrency');
    });

    // one set of processes for the three algorithms, each on its own key at the same time: a
    // process start costs seconds, the calls milliseconds
    it(`${ALGORITHMS.join(', ')}: 4 × 250 calls each with limit 100 grant exactly 100 each`, async () => {
      const prefix = uniquePrefix('procs');
      const worker = join(process.cwd(), 'test/integration/workers/consume-worker.mjs');
      const args = [worker, libDir, JSON.stringify(redis.connection), prefix, 'shared', ALGORITHMS.join(','), '100', String(WINDOW_MS), '250'];
      const outputs = await Promise.all(Array.from({ length: 4 }, () => run(process.execPath, args)));
      const granted = outputs.map(({ stdout }) => (JSON.parse(stdout) as { granted: Record<RateLimitAlgorithm, number> }).granted);
      const total = (algorithm: RateLimitAlgorithm) => granted.reduce((sum, each) => sum + each[algorithm], 0);
      expect(Object.fromEntries(ALGORITHMS.map((algorithm) => [algorithm, total(algorithm)]))).toEqual(
        Object.fromEntries(ALGORITHMS.map((algorithm) => [algorithm, 100])),
      );
    });
  });
});
