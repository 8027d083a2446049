import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { Response } from 'supertest';
import { RedisNode } from '../harness/redis-server.js';
import { until } from '../harness/until.js';
import { bootSample, inSequence, PLATFORMS, type SampleApp } from './sample-app.js';

// Each test owns its redis-server, so stopping, pausing or flushing it disturbs no other test.
const COMMAND_TIMEOUT_MS = 300;
// A property, not a benchmark: bounded by the command timeout plus generous slack.
const ANSWER_WITHIN_MS = 2_000;
// jest.config's testTimeout sits in the project entries, where jest ignores it (default 5 s)
const TEST_TIMEOUT_MS = 30_000;

async function timed(send: () => Promise<Response>): Promise<{ response: Response; ms: number }> {
  const started = performance.now();
  const response = await send();
  return { response, ms: performance.now() - started };
}

describe.each(PLATFORMS)('Redis outages on %s', (platform) => {
  let redis: RedisNode;
  let sample: SampleApp | undefined;
  beforeEach(async () => {
    redis = await RedisNode.start({ own: true, args: ['--enable-debug-command', 'local'] });
  });
  afterEach(async () => {
    await sample?.close();
    sample = undefined;
    await redis.stop();
  });

  const boot = async (failMode: 'open' | 'closed', commandTimeoutMs = COMMAND_TIMEOUT_MS) =>
    (sample = await bootSample(platform, { redis: redis.url, failMode, commandTimeoutMs }));
  const quote = () => sample!.http.get('/quotes/ACME');
  /** The first quote passes: asked again while a loaded machine's cold start (scripts loaded, the
   * grant secret made) outruns the short deadline, which is not what these tests are about. */
  const firstQuotePasses = async () => {
    let status = 0;
    await until(
      async () => (status = (await quote()).status) === 200,
      15_000,
      () => `the first quote answered ${status}`,
    );
  };

  it(
    "failMode 'closed' answers 503 promptly once Redis is gone",
    async () => {
      await boot('closed');
      await firstQuotePasses();
      await redis.stop();

      const { response, ms } = await timed(quote);
      expect(response.status).toBe(503);
      expect(response.body).toEqual({ statusCode: 503, message: expect.any(String) });
      expect(ms).toBeLessThan(ANSWER_WITHIN_MS);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "failMode 'closed' answers 503 within commandTimeoutMs when Redis hangs",
    async () => {
      await boot('closed');
      await firstQuotePasses();
      const raw = new Redis(redis.url);
      const probe = new Redis(redis.url);
      try {
        await Promise.all([raw.ping(), probe.ping()]);
        // the server blocks longer than the bound: the connection is up, replies just do not come
        const hang = raw.call('DEBUG', 'SLEEP', String(ANSWER_WITHIN_MS / 1000 + 1)).catch(() => undefined);
        // the quote goes once the server has stopped answering (a fixed 50 ms, beside a CPU hog,
        // let it in before DEBUG SLEEP had begun: 200)
        await until(
          async () => (await Promise.race([probe.ping(), sleep(200, 'hung')])) === 'hung',
          5_000,
          () => 'the server never hung',
        );
        const { response, ms } = await timed(quote);
        expect(response.status).toBe(503);
        expect(ms).toBeGreaterThanOrEqual(COMMAND_TIMEOUT_MS - 50);
        expect(ms).toBeLessThan(ANSWER_WITHIN_MS);
        await hang;
      } finally {
        raw.disconnect();
        probe.disconnect();
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "failMode 'open' lets requests through while Redis is gone",
    async () => {
      await boot('open');
      await firstQuotePasses();
      await redis.stop();

      const responses = await inSequence(6, quote); // more than the limit: nobody counts them
      expect(responses.map((r) => r.status)).toEqual(Array(6).fill(200));
      expect(responses[0]!.body).toMatchObject({ symbol: 'ACME' });
      expect(responses[0]!.headers['x-ratelimit-limit']).toBeUndefined();
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'limits again once Redis is back, without restarting the app',
    async () => {
      await boot('closed');
      await redis.stop();
      expect((await quote()).status).toBe(503);
      await redis.resume();

      // ioredis reconnects with backoff; the first decided request carries the headers again
      let first: Response | undefined;
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100)) {
        const response = await quote();
        if (response.status === 200 && response.headers['x-ratelimit-limit'] === '5') {
          first = response;
          break;
        }
        expect(response.status).toBe(503);
      }
      expect(first).toBeDefined();
      // the restarted server is empty, so this is the first grant (or a late-timed-out poll's second)
      const left = Number(first!.headers['x-ratelimit-remaining']);
      expect(left).toBeGreaterThanOrEqual(3);
      const rest = await inSequence(left + 1, quote);
      expect(rest.map((r) => r.status)).toEqual([...Array(left).fill(200), 429]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'survives SCRIPT FLUSH: the script is sent again and the counter goes on',
    async () => {
      // not about deadlines: one a loaded machine cannot outrun, so no request is asked twice
      await boot('closed', 10_000);
      expect((await quote()).headers['x-ratelimit-remaining']).toBe('4');
      const raw = new Redis(redis.url);
      try {
        expect(await raw.script('FLUSH')).toBe('OK');
      } finally {
        raw.disconnect();
      }
      const after = await quote();
      expect(after.status).toBe(200);
      expect(after.headers['x-ratelimit-remaining']).toBe('3');
    },
    TEST_TIMEOUT_MS,
  );
});
