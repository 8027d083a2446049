import { rateLimitHeaders, retryAfterSeconds } from '../../lib/transports/headers.js';

const decision = (limit: number, remaining: number, resetMs: number) => ({
  allowed: remaining > 0,
  limit,
  remaining,
  retryAfterMs: 0,
  resetMs,
});
const policies = [
  { name: 'per-second', limit: 10, windowMs: 1000 },
  { name: 'per-hour', limit: 1000, windowMs: 3_600_000 },
];

describe('rate-limit headers', () => {
  const decisions = [decision(10, 7, 400), decision(1000, 3, 1_234_567)];

  it('legacy: describe the limit with the fewest remaining, reset in whole seconds rounded up', () => {
    expect(rateLimitHeaders('legacy', policies, decisions)).toEqual({
      'X-RateLimit-Limit': '1000',
      'X-RateLimit-Remaining': '3',
      'X-RateLimit-Reset': '1235',
    });
  });

  it('draft: every policy in RateLimit-Policy, the tightest in RateLimit', () => {
    expect(rateLimitHeaders('draft', policies, decisions)).toEqual({
      'RateLimit-Policy': '"per-second";q=10;w=1, "per-hour";q=1000;w=3600',
      RateLimit: '"per-hour";r=3;t=1235',
    });
  });

  it('both, and none', () => {
    expect(Object.keys(rateLimitHeaders('both', policies, decisions))).toHaveLength(5);
    expect(rateLimitHeaders(false, policies, decisions)).toEqual({});
  });

  it('policy names become valid structured-field strings', () => {
    const odd = [{ name: 'say "hi" \\ ü', limit: 1, windowMs: 500 }];
    expect(rateLimitHeaders('draft', odd, [decision(1, 0, 500)])['RateLimit-Policy']).toBe('"say \\"hi\\" \\\\ ?";q=1;w=1');
  });

  it('refused: describe the refusing limit Retry-After waits for; t is that wait, X-RateLimit-Reset the time until full', () => {
    const refused = (limit: number, remaining: number, retryAfterMs: number, resetMs: number) => ({
      allowed: false,
      limit,
      remaining,
      retryAfterMs,
      resetMs,
    });
    // a token bucket of 10 per 10 s, empty: a token in 1 s, full in 10 s
    expect(rateLimitHeaders('both', [policies[0]!], [refused(10, 0, 1000, 10_000)])).toEqual({
      'X-RateLimit-Limit': '10',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': '10',
      'RateLimit-Policy': '"per-second";q=10;w=1',
      RateLimit: '"per-second";r=0;t=1',
    });
    // the per-hour limit refuses a cost of 5 with 3 left; per-second would grant (1 left)
    const stack = [decision(10, 1, 400), refused(1000, 3, 1_200_001, 3_000_000)];
    expect(rateLimitHeaders('both', policies, stack)).toMatchObject({
      'X-RateLimit-Limit': '1000',
      'X-RateLimit-Remaining': '3',
      'X-RateLimit-Reset': '3000',
      RateLimit: '"per-hour";r=3;t=1201',
    });
    // both refuse: the longer wait is the one Retry-After gives
    const both = [refused(10, 0, 2_500, 9_000), refused(1000, 0, 60_000, 3_000_000)];
    expect(rateLimitHeaders('draft', policies, both)['RateLimit']).toBe('"per-hour";r=0;t=60');
    expect(retryAfterSeconds(60_000)).toBe('60');
  });

  it('Retry-After is whole seconds, rounded up, at least 1', () => {
    expect(retryAfterSeconds(1)).toBe('1');
    expect(retryAfterSeconds(1000)).toBe('1');
    expect(retryAfterSeconds(1001)).toBe('2');
    expect(retryAfterSeconds(1499)).toBe('2');
    expect(retryAfterSeconds(1999)).toBe('2');
    expect(retryAfterSeconds(1_800_000)).toBe('1800');
  });
});
