import type { Response } from 'supertest';
import type { HeadersMode } from '../../lib/index.js';
import { TestRedis } from '../harness/redis-server.js';
import { sfItem as item } from '../harness/structured-fields.js';
import { bootSample, inSequence, PLATFORMS, type Platform, type SampleApp } from './sample-app.js';

// The `headers` module option on GET /quotes/:symbol (5 per 10 s) and the stacked history route.
const LEGACY = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];
const DRAFT = ['ratelimit-policy', 'ratelimit'];
const present = (r: Response) => [...LEGACY, ...DRAFT].filter((name) => name in r.headers);

describe.each(PLATFORMS)('rate-limit headers on %s', (platform: Platform) => {
  let redis: TestRedis;
  let sample: SampleApp | undefined;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());
  afterEach(() => sample?.close());

  const boot = async (headers: HeadersMode) => (sample = await bootSample(platform, { redis: redis.connection, headers }));

  it("'draft' sends RateLimit-Policy and RateLimit only", async () => {
    const { http } = await boot('draft');
    const allowed = await inSequence(5, () => http.get('/quotes/ACME'));
    const rejected = await http.get('/quotes/ACME');
    expect(present(allowed[0]!)).toEqual(DRAFT);
    expect(present(rejected)).toEqual(DRAFT);

    const policy = item(allowed[0]!.headers['ratelimit-policy']!);
    expect(policy).toMatchObject({ q: 5, w: 10 });
    // RateLimit names the policy it describes
    expect(item(allowed[0]!.headers['ratelimit']!)).toEqual({ name: policy.name, r: 4, t: 10 });
    expect(item(allowed[4]!.headers['ratelimit']!)).toEqual({ name: policy.name, r: 0, t: 10 });
    expect(rejected.status).toBe(429);
    // refused: Retry-After is the wait in whole seconds rounded up, and `t` (more quota in t
    // seconds) says the same
    const wait = Math.ceil(rejected.body.retryAfterMs / 1000);
    expect(rejected.headers['retry-after']).toBe(String(wait));
    expect(item(rejected.headers['ratelimit']!)).toEqual({ name: policy.name, r: 0, t: wait });
  });

  it("'draft' lists every stacked policy and describes the tightest", async () => {
    const { http } = await boot('draft');
    const first = await http.get('/quotes/ACME/history').set('x-api-key', 'k');
    const policies = first.headers['ratelimit-policy']!.split(',').map(item);
    expect(policies.map(({ q, w }) => ({ q, w }))).toEqual([
      { q: 3, w: 1 },
      { q: 5, w: 60 },
    ]);
    // 3-per-second has 2 left, 5-per-minute 4: the burst limit is the tighter
    expect(item(first.headers['ratelimit']!)).toEqual({ name: policies[0]!['name'], r: 2, t: 1 });
  });

  it("'both' sends the legacy and the draft headers, agreeing", async () => {
    const { http } = await boot('both');
    const [first] = await inSequence(2, () => http.get('/quotes/ACME'));
    expect(present(first!)).toEqual([...LEGACY, ...DRAFT]);
    expect(first!.headers['x-ratelimit-remaining']).toBe('4');
    expect(item(first!.headers['ratelimit']!)).toMatchObject({ r: 4, t: Number(first!.headers['x-ratelimit-reset']) });
  });

  it('false sends no rate-limit headers, but still limits with Retry-After', async () => {
    const { http } = await boot(false);
    const responses = await inSequence(6, () => http.get('/quotes/ACME'));
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(responses.flatMap(present)).toEqual([]);
    expect(responses[5]!.body).toMatchObject({ statusCode: 429, retryAfterMs: expect.any(Number) });
    expect(responses[5]!.headers['retry-after']).toBe(String(Math.ceil(responses[5]!.body.retryAfterMs / 1000)));
  });
});
