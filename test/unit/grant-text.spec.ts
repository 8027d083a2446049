import { grantText, type GrantedReply } from '../../lib/rate-limit/grant-text.js';
import { RateLimitReply } from '../../lib/redis/replies.js';

// decide.lua replies a grant's parts; the id written from them must be the one refund.lua parses
// (its patterns are in each algorithm's refund).
const granted = (life: string, grant: number): GrantedReply => ({ verdict: RateLimitReply.GRANTED, remaining: 0, resetMs: 0, life, grant });
/** A charge of a counter that keeps its life as numbers (life's µs 1764470000123456). */
const numbered = (lifeNumber: number, given: number, grant: number): GrantedReply => ({
  verdict: RateLimitReply.GRANTED_AS_NUMBERS,
  remaining: 0,
  resetMs: 0,
  lifeAt: 1_764_470_000_123_456,
  lifeNumber,
  given,
  grant,
});
const spec = (algorithm: 'fw' | 'sw' | 'sc' | 'tb', permits: number) => ({ algorithm, limit: 10, windowMs: 1000, permits });

describe('grantText', () => {
  it('writes a fixed window grant as <life>[+<g>]:<c>:<permits>, without the block mark', () => {
    expect(grantText(spec('fw', 3), granted('17644700001234561', 4), 99)).toBe('17644700001234561:4:3');
    expect(grantText(spec('sc', 1), granted('17644700001234561+2!', 0), 99)).toBe('17644700001234561+2:0:1');
  });

  it('writes a token bucket grant from its numbers: life, g once given back, the call clock and the units left (which may be below 0)', () => {
    expect(grantText(spec('tb', 2), numbered(2, 0, -500), 1_764_470_000_123)).toBe('17644700001234562:2:1764470000123:-500');
    expect(grantText(spec('tb', 1), numbered(12, 3000, 0), 99)).toBe('176447000012345612+3000:1:99:0');
  });

  it('writes a sliding window seq as a letter for its digit count, then its digits', () => {
    expect(grantText(spec('sw', 1), numbered(3, 0, 7), 99)).toBe('17644700001234563:a7');
    expect(grantText(spec('sw', 1), numbered(3, 0, 1234), 99)).toBe('17644700001234563:d1234');
  });

  it('names no grant when nothing was charged', () => {
    for (const algorithm of ['fw', 'sc', 'sw', 'tb'] as const) expect(grantText(spec(algorithm, 1), granted('', 0), 99)).toBe('');
  });
});
