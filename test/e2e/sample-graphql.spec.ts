import type request from 'supertest';
import { RedisLimitEvents, type LimitVerdict, type RedisLimitEvent } from '../../lib/index.js';
import { inSequence, PLATFORMS, withSampleApp } from './sample-app.js';

// The sample app's GraphQL endpoint, on each platform with its driver (Apollo on Express,
// Mercurius on Fastify): a refusal is an entry of `errors`, not an HTTP status.
interface GraphQLBody {
  data?: Record<string, Record<string, unknown> | null> | null;
  errors?: { message: string; path?: string[]; extensions?: Record<string, unknown> }[];
}

const QUOTE = '{ quote(symbol: "ACME") { symbol price currency } }';
const ALERT = 'mutation { createAlert(symbol: "ACME", price: 100) { id symbol price } }';

const bodyOf = (response: request.Response) => response.body as GraphQLBody;
const codes = (responses: request.Response[]) => responses.map((r) => bodyOf(r).errors?.[0]?.extensions?.['code'] ?? null);

describe.each(PLATFORMS)('the sample app over GraphQL on %s', (platform) => {
  const ctx = withSampleApp(platform);
  const send = (count: number, query: string) => inSequence(count, () => ctx.sample.http.post('/graphql').send({ query }));

  it.each([
    ['query quote(symbol)', QUOTE, 'quote', 10_000],
    ['mutation createAlert', ALERT, 'createAlert', 60_000],
  ])('the %s answers 5 times, then refuses with TOO_MANY_REQUESTS and retryAfterMs', async (_name, query, field, windowMs) => {
    const responses = await send(6, query);
    expect(codes(responses)).toEqual([null, null, null, null, null, 'TOO_MANY_REQUESTS']);
    expect(responses.slice(0, 5).map((r) => bodyOf(r).data?.[field]?.['symbol'])).toEqual(Array(5).fill('ACME'));

    const refusal = bodyOf(responses[5]!).errors![0]!;
    expect(refusal.path).toEqual([field]);
    expect(refusal.extensions).toMatchObject({ code: 'TOO_MANY_REQUESTS', statusCode: 429 });
    const retryAfterMs = refusal.extensions!['retryAfterMs'] as number;
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(windowMs);
    expect(bodyOf(responses[5]!).data?.[field] ?? null).toBeNull();
  });

  it('decides each field under its own limit and the app-wide default together', async () => {
    const limits: LimitVerdict[][] = [];
    ctx.sample.app.get(RedisLimitEvents).on((event: RedisLimitEvent) => {
      if (event.type === 'redis-limit.decision') limits.push(event.limits);
    });
    await send(1, QUOTE);
    await send(1, ALERT);
    const verdicts = limits.map((stack) => stack.map(({ limit, remaining }) => ({ limit, remaining })).sort((a, b) => a.limit - b.limit));
    expect(verdicts).toEqual([
      [
        { limit: 5, remaining: 4 },
        { limit: 100, remaining: 99 },
      ],
      [
        { limit: 5, remaining: 4 },
        { limit: 100, remaining: 99 },
      ],
    ]);
  });

  it('counts the query and the mutation apart', async () => {
    expect(codes(await send(6, QUOTE))[5]).toBe('TOO_MANY_REQUESTS');
    expect(codes(await send(1, ALERT))).toEqual([null]);
  });

  it('answers a bad symbol with an error that is no refusal', async () => {
    const [bad] = await send(1, '{ quote(symbol: "no way") { symbol } }');
    expect(bodyOf(bad!).errors?.[0]?.message).toContain('not a ticker symbol');
    expect(codes([bad!])).not.toEqual(['TOO_MANY_REQUESTS']);
  });
});
