import { retryDelayMs } from '../../lib/delay-queue/backoff.js';

describe('retryDelayMs', () => {
  it('doubles backoffMs per attempt before it, up to maxBackoffMs', () => {
    const options = { backoffMs: 1000, maxBackoffMs: 3_600_000 };
    expect([1, 2, 3, 4, 12, 13].map((attempt) => retryDelayMs(attempt, options))).toEqual([1000, 2000, 4000, 8000, 2_048_000, 3_600_000]);
  });

  it('stays at the cap however large the attempt (no Infinity), and 0 stays 0 (no NaN)', () => {
    for (const attempt of [56, 1025, Number.MAX_SAFE_INTEGER]) {
      expect(retryDelayMs(attempt, { backoffMs: 1000, maxBackoffMs: 3_600_000 })).toBe(3_600_000);
      expect(retryDelayMs(attempt, { backoffMs: 0, maxBackoffMs: 3_600_000 })).toBe(0);
      expect(retryDelayMs(attempt, { backoffMs: 1, maxBackoffMs: Number.MAX_SAFE_INTEGER })).toBe(Number.MAX_SAFE_INTEGER);
    }
  });

  it('caps the first retry too', () => {
    expect(retryDelayMs(1, { backoffMs: 5000, maxBackoffMs: 1000 })).toBe(1000);
  });
});
