import { grantText } from '../../lib/rate-limit/grant-text.js';
import { RateLimitReply } from '../../lib/redis/replies.js';
import type { RateLimitDecideLimitReply } from '../../lib/redis/script-bindings.generated.js';

// decide.lua replies a grant's parts; the id written from them must be the one refund.lua parses
// (its patterns are in each algorithm's refund).
/** A charge on a counter whose life is 1764470000123456 µs and `lifeNumber`. */
const charged = (lifeNumber: number, given: number, grant: number): RateLimitDecideLimitReply => ({
  verdict: RateLimitReply.CHARGED,
  remaining: 0,
  resetMs: 0,
  lifeAt: 1_764_470_000_123_456,
  lifeNumber,
  given,
  grant,
});
const spec = (algorithm: 'fw' | 'sw' | 'sc' | 'tb', permits: number) => ({ algorithm, limit: 10, windowMs: 1000, permits });

describe('grantText', () => {
  it('writes a fixed window grant as <life>[+<g>]:<c>:<permits>', () => {
    expect(grantText(spec('fw', 3), charged(1, 0, 4), 99)).toBe('17644700001234561:4:3');
    expect(grantText(spec('sc', 1), charged(1, 2, 0), 99)).toBe('17644700001234561+2:0:1');
  });

  it('writes a token bucket grant with g once given back, the call clock and the units left (which may be below 0)', () => {
    expect(grantText(spec('tb', 2), charged(2, 0, -500), 1_764_470_000_123)).toBe('17644700001234562:2:1764470000123:-500');
    expect(grantText(spec('tb', 1), charged(12, 3000, 0), 99)).toBe('176447000012345612+3000:1:99:0');
  });

  it('writes a sliding window seq as a letter for its digit count, then its digits', () => {
    expect(grantText(spec('sw', 1), charged(3, 0, 7), 99)).toBe('17644700001234563:a7');
    expect(grantText(spec('sw', 1), charged(3, 0, 1234), 99)).toBe('17644700001234563:d1234');
  });

  it('names no grant when nothing was charged', () => {
    const uncharged: RateLimitDecideLimitReply[] = [
      { verdict: RateLimitReply.GRANTED, remaining: 1, resetMs: 0 },
      { verdict: RateLimitReply.REFUSED, remaining: 0, retryAfterMs: 5, resetMs: 5 },
      { verdict: RateLimitReply.BLOCKED, remaining: 0, retryAfterMs: 5, resetMs: 5 },
    ];
    for (const algorithm of ['fw', 'sc', 'sw', 'tb'] as const) for (const reply of uncharged) expect(grantText(spec(algorithm, 1), reply, 99)).toBe('');
  });
});
