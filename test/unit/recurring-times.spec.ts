import { describe, expect, it } from '@jest/globals';
import { latestTick, nextTick } from '../../lib/delay-queue/recurring-times.js';

const at = (iso: string) => new Date(iso).getTime();
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
/** The rule's ticks after `from`, `count` of them. */
const ticks = (rule: Parameters<typeof nextTick>[0], from: string, count: number) => {
  const out: (string | null)[] = [];
  let t: number | null = at(from);
  for (let i = 0; i < count && t !== null; i++) out.push(iso((t = nextTick(rule, t))));
  return out;
};

describe('nextTick', () => {
  it('02:30 daily in America/New_York across both 2026 DST changes runs as a local cron would', () => {
    const nightly = { cron: '30 2 * * *', tz: 'America/New_York' };
    // spring forward, 8 March: 02:30 does not exist that night; it runs as the clock jumps (03:00 EDT)
    expect(ticks(nightly, '2026-03-06T12:00:00Z', 4)).toEqual([
      '2026-03-07T07:30:00.000Z', // 02:30 EST
      '2026-03-08T07:00:00.000Z', // 03:00 EDT
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
      '2026-03-10T06:30:00.000Z',
    ]);
    // fall back, 1 November: 02:30 comes once (01:00-02:00 repeats, not 02:30)
    expect(ticks(nightly, '2026-10-30T12:00:00Z', 3)).toEqual(['2026-10-31T06:30:00.000Z', '2026-11-01T07:30:00.000Z', '2026-11-02T07:30:00.000Z']);
    // a time in the repeated hour runs once, at its first occurrence (01:30 EDT)
    expect(ticks({ cron: '30 1 * * *', tz: 'America/New_York' }, '2026-10-31T12:00:00Z', 2)).toEqual(['2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
    // a pattern for every half hour keeps to real time through the repeated hour
    expect(ticks({ cron: '*/30 * * * *', tz: 'America/New_York' }, '2026-11-01T04:50:00Z', 5)).toEqual([
      '2026-11-01T05:00:00.000Z',
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T06:00:00.000Z',
      '2026-11-01T06:30:00.000Z',
      '2026-11-01T07:00:00.000Z',
    ]);
  });

  it('6 fields count seconds; the default zone is UTC', () => {
    expect(ticks({ cron: '*/20 * * * * *' }, '2026-01-01T00:00:01.500Z', 3)).toEqual([
      '2026-01-01T00:00:20.000Z',
      '2026-01-01T00:00:40.000Z',
      '2026-01-01T00:01:00.000Z',
    ]);
    expect(ticks({ cron: '0 9 * * 1' }, '2026-11-29T00:00:00Z', 1)).toEqual(['2026-11-30T09:00:00.000Z']);
  });

  it('an interval counts from startAt, else the epoch; nothing before startAt or after endAt', () => {
    expect(nextTick({ everyMs: 1000 }, 5_500)).toBe(6_000);
    expect(nextTick({ everyMs: 1000 }, 6_000)).toBe(7_000);
    expect(nextTick({ everyMs: 1000, startAt: 250 }, 5_500)).toBe(6_250);
    expect(nextTick({ everyMs: 1000, startAt: 9_000 }, 5_500)).toBe(9_000);
    expect(nextTick({ everyMs: 1000, endAt: 6_999 }, 6_000)).toBeNull();
    expect(nextTick({ everyMs: 1000, endAt: 7_000 }, 6_000)).toBe(7_000);
    expect(iso(nextTick({ cron: '0 * * * *', startAt: at('2026-05-01T10:30:00Z') }, at('2026-01-01T00:00:00Z')))).toBe('2026-05-01T11:00:00.000Z');
    expect(nextTick({ cron: '0 * * * *', endAt: at('2026-05-01T10:30:00Z') }, at('2026-05-01T10:00:00Z'))).toBeNull();
  });
});

describe('latestTick', () => {
  it('the latest tick at or before a time, not before the given one, not after endAt', () => {
    expect(latestTick({ everyMs: 200 }, 10_150, 2_000)).toBe(10_000);
    expect(latestTick({ everyMs: 200 }, 10_200, 2_000)).toBe(10_200);
    expect(latestTick({ everyMs: 200, endAt: 5_000 }, 10_150, 2_000)).toBe(5_000);
    expect(iso(latestTick({ cron: '30 2 * * *', tz: 'America/New_York' }, at('2026-03-09T12:00:00Z'), at('2026-03-01T07:30:00Z')))).toBe(
      '2026-03-09T06:30:00.000Z',
    );
    expect(latestTick({ everyMs: 200 }, 1_000, 1_000)).toBe(1_000);
  });
});
