import { failureDelayMs, retryDelayMs } from '../../lib/delay-queue/backoff.js';

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

describe('failureDelayMs', () => {
  const doubling = { backoffMs: 1000, maxBackoffMs: 60_000, backoff: undefined, jitter: false };
  const noReport = (problem: string) => {
    throw new Error(`reported: ${problem}`);
  };

  it('is the doubling without a backoff function or jitter', () => {
    expect([1, 2, 3, 7, 8].map((attempt) => failureDelayMs(attempt, new Error('x'), doubling, noReport))).toEqual([1000, 2000, 4000, 60_000, 60_000]);
  });

  it("takes the backoff function's answer, with the attempt and the error, rounded up and capped by maxBackoffMs", () => {
    const seen: [number, unknown][] = [];
    const error = new Error('upstream 503');
    const backoff = (attempt: number, cause: unknown) => (seen.push([attempt, cause]), attempt === 1 ? 250.2 : 10 ** 9);
    const options = { ...doubling, backoff };
    expect(failureDelayMs(1, error, options, noReport)).toBe(251);
    expect(failureDelayMs(2, error, options, noReport)).toBe(60_000);
    expect(seen).toEqual([
      [1, error],
      [2, error],
    ]);
  });

  it('falls back to the doubling, and says why, when the backoff function throws or answers no finite number >= 0', () => {
    for (const backoff of [() => -1, () => NaN, () => Infinity, () => '5' as never, () => undefined as never]) {
      const reports: string[] = [];
      expect(failureDelayMs(3, null, { ...doubling, backoff }, (p) => reports.push(p))).toBe(4000);
      expect(reports).toEqual([expect.stringMatching(/^backoff returned \S+, not a finite number >= 0$/)]);
    }
    const reports: string[] = [];
    const throwing = () => {
      throw new TypeError('bad');
    };
    expect(failureDelayMs(1, null, { ...doubling, backoff: throwing }, (p) => reports.push(p))).toBe(1000);
    expect(reports).toEqual(['backoff threw TypeError: bad']);
  });

  it('with jitter, draws a whole number uniformly from [wait / 2, wait]', () => {
    const options = { ...doubling, jitter: true };
    // attempt 2: a wait of 2000
    expect(failureDelayMs(2, null, options, noReport, () => 0)).toBe(1000);
    expect(failureDelayMs(2, null, options, noReport, () => 0.999_999_999)).toBe(2000);
    expect(failureDelayMs(2, null, options, noReport, () => 0.5)).toBe(1500);
    // odd waits, and 0
    expect(failureDelayMs(1, null, { ...options, backoff: () => 3 }, noReport, () => 0)).toBe(2);
    expect(failureDelayMs(1, null, { ...options, backoff: () => 0 }, noReport, () => 0.9)).toBe(0);
    const draws = Array.from({ length: 2000 }, () => failureDelayMs(2, null, options, noReport));
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(1000);
    expect(Math.max(...draws)).toBeLessThanOrEqual(2000);
    expect(draws.every(Number.isInteger)).toBe(true);
    // both halves of the range are drawn from
    expect(draws.filter((d) => d < 1500).length).toBeGreaterThan(500);
    expect(draws.filter((d) => d > 1500).length).toBeGreaterThan(500);
  });
});
