import 'reflect-metadata';
import { Controller, Get, Post } from '@nestjs/common';
import type { Response } from 'supertest';
import { Funnel, MaxPending, RateLimit } from '../../lib/index.js';
import { controllerApp, statusesOf, type ControllerApp } from '../harness/controller-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { sfItem, sfList } from '../harness/structured-fields.js';

// The draft RateLimit headers (draft-ietf-httpapi-ratelimit-headers-11) against every kind of
// limit: policy names unique per route, and on a 429 `t` (the seconds within which no more than
// `r` is available) equal to Retry-After, which is the wait rounded up.
@Controller('draft')
class DraftController {
  @Get('twins')
  @RateLimit({ limit: 5, windowMs: 10_000 })
  @RateLimit({ limit: 5, windowMs: 10_000, algorithm: 'fixed-window' })
  twins() {
    return 'ok';
  }

  // an hour, so no grant ages out while the test sends its requests
  @Get('sliding')
  @RateLimit({ limit: 3, windowMs: 3_600_000 })
  sliding() {
    return 'ok';
  }

  // a token per 360 s, so none comes back while the test drains it; empty, it is full again after 3600 s
  @Get('bucket')
  @RateLimit({ limit: 10, windowMs: 3_600_000, algorithm: 'token-bucket' })
  bucket() {
    return 'ok';
  }

  // a unit per 900 s; empty, it is full again after 1800 s
  @Get('funnel')
  @Funnel({ capacity: 2, leakingDurationMs: 1_800_000 })
  funnel() {
    return 'ok';
  }

  // the third request: 'hourly' refuses 4 permits with 2 left, 'minute' alone would grant (1 left)
  @Get('stacked')
  @RateLimit({ limit: 10, windowMs: 3_600_000, name: 'hourly', cost: 4 })
  @RateLimit({ limit: 3, windowMs: 60_000, name: 'minute' })
  stacked() {
    return 'ok';
  }

  // refused right after its grant: a wait of about 1.45 s, which rounding or flooring would make 1 s
  @Get('fraction')
  @RateLimit({ limit: 1, windowMs: 1_499 })
  fraction() {
    return 'ok';
  }

  @Post('cap')
  @MaxPending(1, { name: 'cap', ttlMs: 1_499 })
  cap() {
    return 'ok';
  }
}

// the README's example, as the README shows its headers
@Controller('quotes')
@RateLimit({ limit: 1000, windowMs: 3_600_000, name: 'hourly' })
class ReadmeQuotesController {
  @Get(':symbol')
  @RateLimit({ limit: 5, windowMs: 10_000 })
  quote() {
    return 'ok';
  }
}

describe("'both' headers on a refusal", () => {
  let redis: TestRedis;
  let app: ControllerApp;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());
  beforeEach(async () => {
    app = await controllerApp(redis, { controllers: [DraftController, ReadmeQuotesController], options: { headers: 'both' } });
  });
  afterEach(() => app.close());

  /** The response refused after `granted` grants, checked: Retry-After and `t` are both the wait
   * in whole seconds, rounded up. */
  async function refusal(send: () => PromiseLike<Response>, granted: number): Promise<{ response: Response; wait: number }> {
    for (const status of await statusesOf(send, granted)) expect(status).toBeLessThan(300);
    const response = await send();
    expect(response.status).toBe(429);
    const wait = Math.ceil(response.body.retryAfterMs / 1000);
    expect(response.headers['retry-after']).toBe(String(wait));
    expect(sfItem(response.headers['ratelimit']!)['t']).toBe(wait);
    return { response, wait };
  }

  it("sends the README's draft headers: the handler's policy first", async () => {
    const first = await app.http.get('/quotes/ACME');
    expect(first.headers['ratelimit-policy']).toBe('"5-per-10000ms";q=5;w=10, "hourly";q=1000;w=3600');
    expect(first.headers['ratelimit']).toBe('"5-per-10000ms";r=4;t=10');
  });

  it('names two unnamed limits of the same numbers apart', async () => {
    const response = await app.http.get('/draft/twins');
    const names = sfList(response.headers['ratelimit-policy']!).map((policy) => policy['name']);
    expect(names).toHaveLength(2);
    expect(new Set(names).size).toBe(2);
    expect(names).toContain(sfItem(response.headers['ratelimit']!)['name']);
  });

  it.each([
    ['a sliding window', '/draft/sliding', 3, 3600],
    ['a token bucket', '/draft/bucket', 10, 3600],
    ['a funnel', '/draft/funnel', 2, 1800],
  ])('%s: t is the wait, X-RateLimit-Reset the time until full', async (_case, path, granted, fullAgainS) => {
    const started = Date.now();
    const { response, wait } = await refusal(() => app.http.get(path), granted);
    expect(sfItem(response.headers['ratelimit']!)['r']).toBe(0);
    // full again that long after the first grant (the bucket, the funnel) or the newest (the
    // window): as many whole seconds sooner as the requests took, however long a busy machine
    // made them, and no later
    const ranS = Math.ceil((Date.now() - started) / 1000);
    expect(Number(response.headers['x-ratelimit-reset'])).toBeLessThanOrEqual(fullAgainS);
    expect(Number(response.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(fullAgainS - ranS);
    if (path !== '/draft/sliding') expect(wait).toBeLessThan(fullAgainS);
  });

  it('a stack: the headers describe the refusing limit Retry-After waits for', async () => {
    const { response, wait } = await refusal(() => app.http.get('/draft/stacked'), 2);
    expect(wait).toBeGreaterThan(3_000);
    expect(sfItem(response.headers['ratelimit']!)).toEqual({ name: 'hourly', r: 2, t: wait });
    expect(response.headers['x-ratelimit-limit']).toBe('10');
    expect(response.headers['x-ratelimit-remaining']).toBe('2');
  });

  it.each([
    ['@RateLimit', () => app.http.get('/draft/fraction')],
    ['@MaxPending (the wait for the oldest slot)', () => app.http.post('/draft/cap')],
  ])('%s: a wait of 1.0 to 1.5 s is 2 s, rounded up', async (_case, send) => {
    const { response, wait } = await refusal(send, 1);
    // what makes this test able to see a rounding bug: the refusal came within 499 ms of the grant
    expect(response.body.retryAfterMs).toBeGreaterThan(1000);
    expect(wait).toBe(2);
  });
});
