import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  type CountedGrant,
  type Grant,
  type Slot,
  checkAdaptiveLimits,
  checkCacheHits,
  checkConcurrency,
  checkCountIf,
  checkDelivery,
  checkLocalGrants,
  checkLockout,
  checkFixedWindow,
  checkMaxPending,
  checkOutageLatency,
  checkSlidingWindow,
  checkTokenBucket,
  expectedTicks,
} from '../soak/invariants.js';

// The soak checks are only worth trusting if they can fail: each is shown passing a valid log and
// catching a broken one.

const at = (key: string, start: number, end = start): Grant => ({ key, start, end });
const times = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));

describe('checkFixedWindow', () => {
  const limit = 3;
  const windowMs = 1000;

  it('flags limit + 1 grants certainly inside one aligned window', () => {
    const v = checkFixedWindow(
      times(limit + 1, (i) => at('a', 1100 + i * 10, 1105 + i * 10)),
      limit,
      windowMs,
    );
    expect(v).toHaveLength(1);
    expect(v[0]!.invariant).toBe('fixed-window');
    expect(v[0]!.detail).toContain('[1000, 2000)');
  });

  it('ignores a grant that straddles a boundary or may have landed in the next window', () => {
    const inside = times(limit, (i) => at('a', 1100 + i, 1100 + i));
    expect(checkFixedWindow([...inside, at('a', 1998, 2003)], limit, windowMs)).toEqual([]); // straddles
    expect(checkFixedWindow([...inside, at('a', 1997, 1999)], limit, windowMs)).toEqual([]); // end + 1 reaches 2000
    expect(checkFixedWindow([...inside, at('a', 1000, 1005)], limit, windowMs)).toEqual([]); // start - 1 is in the previous one
    expect(checkFixedWindow([...inside, at('a', 2100)], limit, windowMs)).toEqual([]); // next window
  });

  it('counts each key on its own', () => {
    const grants = [...times(limit, (i) => at('a', 1100 + i)), ...times(limit, (i) => at('b', 1100 + i))];
    expect(checkFixedWindow(grants, limit, windowMs)).toEqual([]);
  });

  it('keeps the report bounded, with a count line', () => {
    const grants = times(50, (w) => times(limit + 1, (i) => at('a', w * windowMs + 100 + i))).flat();
    const v = checkFixedWindow(grants, limit, windowMs);
    expect(v).toHaveLength(21);
    expect(v[20]!.detail).toMatch(/^50 violations in all/);
  });
});

describe('checkSlidingWindow', () => {
  const limit = 4;
  const windowMs = 1000;

  it('flags limit + 1 grants within windowMs - 10', () => {
    const v = checkSlidingWindow(
      times(limit + 1, (i) => at('a', 5000 + i * ((windowMs - 10) / limit))),
      limit,
      windowMs,
    );
    expect(v).toHaveLength(1);
    expect(v[0]!.invariant).toBe('sliding-window');
  });

  it('passes limit + 1 grants spread over more than windowMs', () => {
    expect(
      checkSlidingWindow(
        times(limit + 1, (i) => at('a', 5000 + i * ((windowMs + 10) / limit))),
        limit,
        windowMs,
      ),
    ).toEqual([]);
  });

  it('passes when wide brackets make the span uncertain', () => {
    const grants = [...times(limit, (i) => at('a', 5000 + i)), at('a', 5010, 5000 + windowMs)];
    expect(checkSlidingWindow(grants, limit, windowMs)).toEqual([]);
  });

  it('passes grants of different keys in one span', () => {
    expect(
      checkSlidingWindow(
        times(limit + 1, (i) => at(`k${i % 2}`, 5000 + i)),
        limit,
        windowMs,
      ),
    ).toEqual([]);
  });

  // A correct sliding limiter, run on exact instants: admits t when fewer than `limit` admitted
  // instants lie in (t - windowMs, t]. Each grant is then bracketed by 0-3 ms, as the app sees it.
  const arrivals = fc.record({
    limit: fc.integer({ min: 1, max: 8 }),
    windowMs: fc.integer({ min: 20, max: 400 }),
    arrivals: fc.array(
      fc.record({
        key: fc.constantFrom('a', 'b'),
        gap: fc.integer({ min: 0, max: 60 }),
        brackets: fc.tuple(fc.double({ min: 0, max: 3, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })),
        twin: fc.tuple(fc.double({ min: 0, max: 3, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })),
      }),
      { maxLength: 200 },
    ),
  });
  const bracket = (key: string, t: number, [width, offset]: [number, number]): Grant => ({
    key,
    start: t - width * offset,
    end: t - width * offset + width,
  });
  function admitted(limit: number, windowMs: number, input: { key: string; gap: number }[]) {
    const byKey = new Map<string, number[]>();
    const out: { key: string; t: number; index: number }[] = [];
    let t = 1_700_000_000_000;
    input.forEach(({ key, gap }, index) => {
      t += gap;
      const seen = byKey.get(key) ?? [];
      byKey.set(key, seen);
      if (seen.filter((s) => s > t - windowMs).length < limit) {
        seen.push(t);
        out.push({ key, t, index });
      }
    });
    return out;
  }

  it('never flags a correct limiter, whatever the brackets (property)', () => {
    fc.assert(
      fc.property(arrivals, ({ limit, windowMs, arrivals }) => {
        const grants = admitted(limit, windowMs, arrivals).map(({ key, t, index }) => bracket(key, t, arrivals[index]!.brackets));
        expect(checkSlidingWindow(grants, limit, windowMs)).toEqual([]);
      }),
    );
  });

  it('flags a limiter that admits each request twice, when enough land in one window (property)', () => {
    let caught = 0;
    fc.assert(
      fc.property(arrivals, ({ limit, windowMs, arrivals }) => {
        const ok = admitted(limit, windowMs, arrivals);
        const doubled = ok.flatMap(({ key, t, index }) => [bracket(key, t, arrivals[index]!.brackets), bracket(key, t, arrivals[index]!.twin)]);
        // Brackets widen a span by up to 6 ms and the check keeps 2 ms slack: m exact instants within
        // windowMs - 9 (integers) are certainly within one window, and doubled they are 2m grants.
        let most = 0;
        for (const g of ok) {
          const m = ok.filter((h) => h.key === g.key && h.t >= g.t && h.t - g.t <= windowMs - 9).length;
          most = Math.max(most, m);
        }
        const v = checkSlidingWindow(doubled, limit, windowMs);
        if (2 * most > limit) {
          caught += 1;
          expect(v.length).toBeGreaterThan(0);
        }
      }),
    );
    expect(caught).toBeGreaterThan(0); // the generator does reach the interesting case
  });
});

describe('checkTokenBucket', () => {
  const capacity = 5;
  const refillMs = 1000; // one token per 200 ms

  it('passes a full bucket drained at once, then the refill rate honoured', () => {
    const burst = times(capacity, (i) => at('a', 10_000 + i * 0.1, 10_001 + i * 0.1));
    const steady = times(20, (i) => at('a', 10_200 + i * 200, 10_201 + i * 200));
    expect(checkTokenBucket([...burst, ...steady], capacity, refillMs)).toEqual([]);
  });

  it('flags capacity + 2 grants at once', () => {
    const v = checkTokenBucket(
      times(capacity + 2, () => at('a', 10_000, 10_001)),
      capacity,
      refillMs,
    );
    expect(v).toHaveLength(1);
    expect(v[0]!.invariant).toBe('token-bucket');
  });

  it('flags a refill faster than the rate', () => {
    const burst = times(capacity, () => at('a', 10_000));
    const fast = times(10, (i) => at('a', 10_100 + i * 100)); // twice the rate
    expect(checkTokenBucket([...burst, ...fast], capacity, refillMs).length).toBeGreaterThan(0);
  });

  it('checks spans only up to the horizon', () => {
    // One grant per 150 ms against a 200 ms refill: the excess outgrows the slack only after ~2.5 s.
    const grants = times(100, (i) => at('a', 10_000 + i * 150));
    expect(checkTokenBucket(grants, capacity, refillMs)).toEqual([]);
    expect(checkTokenBucket(grants, capacity, refillMs, 10_000).length).toBeGreaterThan(0);
  });

  it('never flags a correct bucket (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 10, max: 500 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.double({ min: 0, max: 3, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })), {
          maxLength: 200,
        }),
        (cap, refill, input) => {
          let tokens = cap;
          let last = 0;
          let t = 0;
          const grants: Grant[] = [];
          for (const [gap, width, offset] of input) {
            t += gap;
            tokens = Math.min(cap, tokens + ((t - last) * cap) / refill);
            last = t;
            if (tokens >= 1) {
              tokens -= 1;
              grants.push({ key: 'a', start: t - width * offset, end: t - width * offset + width });
            }
          }
          expect(checkTokenBucket(grants, cap, refill)).toEqual([]);
        },
      ),
    );
  });
});

describe('checkMaxPending', () => {
  const max = 2;
  const slot = (owner: string, reservedStart: number, reservedEnd: number, ttlMs: number, releaseStart?: number): Slot =>
    releaseStart === undefined ? { owner, reservedStart, reservedEnd, ttlMs } : { owner, reservedStart, reservedEnd, ttlMs, releaseStart };

  it('flags max + 1 overlapping certain intervals, with owner, instant and count', () => {
    const v = checkMaxPending([slot('u', 0, 5, 1000), slot('u', 10, 15, 1000), slot('u', 20, 25, 1000)], max);
    expect(v).toHaveLength(1);
    expect(v[0]!.invariant).toBe('max-pending');
    expect(v[0]!.detail).toContain('owner u');
    expect(v[0]!.detail).toContain('3 slots certainly held at 25');
  });

  it('passes when a release or the expiry ends one slot as the next begins', () => {
    const released = [slot('u', 0, 5, 1000), slot('u', 10, 15, 1000, 100), slot('u', 90, 100, 1000)];
    expect(checkMaxPending(released, max)).toEqual([]);
    const expired = [slot('u', 0, 5, 1000), slot('u', 10, 15, 90), slot('u', 95, 100, 1000)];
    expect(checkMaxPending(expired, max)).toEqual([]);
  });

  it('counts nothing for a release begun before the reservation returned', () => {
    // The third slot's release began at 20, before its reservation answered at 30: empty interval.
    const v = checkMaxPending([slot('u', 0, 5, 1000), slot('u', 10, 15, 1000), slot('u', 10, 30, 1000, 20)], max);
    expect(v).toEqual([]);
  });

  it('counts each owner on its own', () => {
    const slots = [slot('u', 0, 5, 1000), slot('u', 10, 15, 1000), slot('w', 0, 5, 1000), slot('w', 10, 15, 1000)];
    expect(checkMaxPending(slots, max)).toEqual([]);
  });
});

describe('checkDelivery', () => {
  it('passes when every enqueued id is handled once', () => {
    const r = checkDelivery(
      ['1', '2'],
      ['3'],
      [
        { id: '1', consumer: 'c1' },
        { id: '2', consumer: 'c2' },
      ],
      [],
    );
    expect(r).toEqual({ violations: [], handled: 2, lost: 0, duplicatesAfterCrash: 0, duplicatesUnacknowledged: 0, duplicatesWithoutCrash: 0 });
  });

  it('flags a lost id', () => {
    const r = checkDelivery(['1', '2'], [], [{ id: '1', consumer: 'c1' }], []);
    expect(r.lost).toBe(1);
    expect(r.violations).toEqual([{ invariant: 'lost', detail: expect.stringContaining('id 2') }]);
  });

  it('flags a duplicate with no crash to explain it', () => {
    const r = checkDelivery(
      ['1'],
      [],
      [
        { id: '1', consumer: 'c1' },
        { id: '1', consumer: 'c2' },
      ],
      ['c3'],
    );
    expect(r.duplicatesWithoutCrash).toBe(1);
    expect(r.violations.map((v) => v.invariant)).toEqual(['duplicate']);
  });

  it('allows, and counts, a duplicate after a crashed consumer', () => {
    const r = checkDelivery(
      ['1'],
      [],
      [
        { id: '1', consumer: 'c1' },
        { id: '1', consumer: 'c2' },
      ],
      ['c1'],
    );
    expect(r).toEqual({ violations: [], handled: 1, lost: 0, duplicatesAfterCrash: 1, duplicatesUnacknowledged: 0, duplicatesWithoutCrash: 0 });
  });

  it('allows a second delivery per acknowledgement given up, and no more', () => {
    const twice = [
      { id: '1', consumer: 'c1' },
      { id: '1', consumer: 'c1' },
    ];
    expect(checkDelivery(['1'], [], twice, [], ['1'])).toEqual({
      violations: [],
      handled: 1,
      lost: 0,
      duplicatesAfterCrash: 0,
      duplicatesUnacknowledged: 1,
      duplicatesWithoutCrash: 0,
    });
    // another id's given-up ack explains nothing here, and one given up explains one more only
    expect(checkDelivery(['1'], [], twice, [], ['2']).violations.map((v) => v.invariant)).toEqual(['duplicate']);
    expect(checkDelivery(['1'], [], [...twice, { id: '1', consumer: 'c2' }], [], ['1']).violations.map((v) => v.invariant)).toEqual(['duplicate']);
  });

  it('flags an id never enqueued, but not an uncertain one', () => {
    const r = checkDelivery(
      ['1'],
      ['2'],
      [
        { id: '1', consumer: 'c' },
        { id: '2', consumer: 'c' },
        { id: '9', consumer: 'c' },
      ],
      [],
    );
    expect(r.violations).toEqual([{ invariant: 'unknown', detail: expect.stringContaining('id 9') }]);
  });
});

describe('checkOutageLatency', () => {
  it('passes fail-mode answers within the bound, ignoring answers that reached Redis', () => {
    const r = checkOutageLatency(
      [
        { route: '/a', start: 0, end: 40, failMode: true },
        { route: '/a', start: 0, end: 5000, failMode: false },
      ],
      50,
    );
    expect(r).toEqual({ violations: [], failModeAnswers: 1, maxMs: 40, p99Ms: 40 });
  });

  it('flags a fail-mode answer above the bound', () => {
    const answers = times(200, (i) => ({ route: '/a', start: i, end: i + 10, failMode: true }));
    answers.push({ route: '/b', start: 0, end: 80, failMode: true });
    const r = checkOutageLatency(answers, 50);
    expect(r.violations).toEqual([{ invariant: 'outage-latency', detail: expect.stringContaining('/b') }]);
    expect(r.maxMs).toBe(80);
    expect(r.p99Ms).toBe(10);
    expect(r.failModeAnswers).toBe(201);
  });
});

describe('checkCountIf', () => {
  const limit = 3;
  const windowMs = 1000;
  const failure = (start: number): CountedGrant => ({ key: 'a', start, end: start + 2, failed: true });
  const success = (start: number, refundedBy?: number): CountedGrant => ({
    key: 'a',
    start,
    end: start + 2,
    failed: false,
    ...(refundedBy === undefined ? {} : { refundedBy }),
  });

  it('passes failures at the limit beside refunded successes, and a refusal once they fill the window', () => {
    const grants = [failure(5000), success(5010, 5015), success(5020, 5025), failure(5100), failure(5200), success(5300, 5304)];
    expect(checkCountIf(grants, [at('a', 5400, 5402)], [], limit, windowMs)).toEqual([]);
  });

  it('flags more failures granted in one window than the limit', () => {
    const v = checkCountIf(
      times(limit + 1, (i) => failure(5000 + i * 100)),
      [],
      [],
      limit,
      windowMs,
    );
    expect(v.map((x) => x.invariant)).toEqual(['count-if']);
  });

  it('flags a refusal while the failures in its window are under the limit and the successes are refunded', () => {
    const grants = [failure(5000), failure(5100), success(5200, 5210), success(5300, 5310)];
    const v = checkCountIf(grants, [at('a', 5400, 5402)], [], limit, windowMs);
    expect(v).toEqual([{ invariant: 'count-if-refusal', detail: expect.stringContaining('at most 2 permits charged') }]);
  });

  it('counts a success whose refund was not certainly done, a failure of another window not, and a 503 that may have run', () => {
    const base = [failure(5000), failure(5100)];
    const refusal = [at('a', 5400, 5402)];
    expect(checkCountIf([...base, success(5300, 5401)], refusal, [], limit, windowMs)).toEqual([]); // refund answered after the refusal began
    expect(checkCountIf([...base, success(5300)], refusal, [], limit, windowMs)).toEqual([]); // refund never answered
    expect(checkCountIf([...base, failure(4300)], refusal, [], limit, windowMs)).toHaveLength(1); // out of the window
    expect(checkCountIf(base, refusal, [{ key: 'a', start: 5150, until: 5900 }], limit, windowMs)).toEqual([]);
    expect(checkCountIf(base, refusal, [{ key: 'b', start: 5150, until: 5900 }], limit, windowMs)).toHaveLength(1);
  });

  it("lets another process' refusal cache hear a refund late, by invalidationMs, and its own not", () => {
    // hog soak, 600 s: w1's cache refused 3 ms after w2's refund was done
    const grants = [failure(5000), failure(5100), { ...success(5380, 5397), by: 'w2' }];
    const cached = (by: string) => [{ ...at('a', 5400, 5401), cached: true, by }];
    expect(checkCountIf(grants, cached('w1'), [], limit, windowMs, 250)).toEqual([]);
    expect(checkCountIf(grants, cached('w2'), [], limit, windowMs, 250)).toHaveLength(1);
    expect(checkCountIf(grants, [{ ...at('a', 5400, 5401), by: 'w1' }], [], limit, windowMs, 250)).toHaveLength(1); // Redis's own
    expect(checkCountIf(grants, [{ ...at('a', 5700, 5701), cached: true, by: 'w1' }], [], limit, windowMs, 250)).toHaveLength(1); // long after
  });
});

describe('checkLockout', () => {
  const blockMs = 2000;

  it('passes grants after the lockout, or begun before its refusal answered', () => {
    const lockout = [at('k', 10_000, 10_005)];
    const grants = [at('k', 10_003, 10_006), at('k', 11_999, 12_001), at('k', 12_100), at('j', 10_500)];
    expect(checkLockout(grants, lockout, blockMs)).toEqual([]);
  });

  it('flags a grant of the key certainly inside the lockout', () => {
    const v = checkLockout([at('k', 11_000, 11_002)], [at('k', 10_000, 10_005)], blockMs);
    expect(v).toEqual([{ invariant: 'block-ms', detail: expect.stringContaining('key k') }]);
  });

  it('keeps 2 ms of slack at the lockout end', () => {
    expect(checkLockout([at('k', 11_997, 11_998)], [at('k', 10_000, 10_005)], blockMs)).toEqual([]);
    expect(checkLockout([at('k', 11_996, 11_997)], [at('k', 10_000, 10_005)], blockMs)).toHaveLength(1);
  });
});

describe('checkLocalGrants', () => {
  it('passes ceil(limit / divisor) local grants per process per window', () => {
    const each = times(3, (i) => at('local', 1100 + i * 10));
    expect(checkLocalGrants({ w1: each, w2: each }, 5, 2, 1000)).toEqual([]);
  });

  it('flags a process granting more than its share in one window', () => {
    const v = checkLocalGrants({ w1: times(3, (i) => at('local', 1100 + i * 10)), w2: times(4, (i) => at('local', 1100 + i * 10)) }, 5, 2, 1000);
    expect(v).toEqual([{ invariant: 'local-fail-mode', detail: expect.stringMatching(/^w2: .*4 grants/) }]);
  });
});

describe('checkCacheHits', () => {
  it('passes when every process answered from its cache, and flags one that never did', () => {
    expect(checkCacheHits({ w1: 3, w2: 1 })).toEqual([]);
    expect(checkCacheHits({ w1: 3, w2: 0 })).toEqual([{ invariant: 'refusal-cache', detail: 'w2: no refusal came from the refusal cache' }]);
  });
});

describe('checkAdaptiveLimits', () => {
  it('passes limits within [1, limit], and flags one outside, or none reported', () => {
    expect(checkAdaptiveLimits([25, 12, 1, 50], 50)).toEqual([]);
    expect(checkAdaptiveLimits([0, 25, 51, 51], 50)).toEqual([
      { invariant: 'adaptive-limit', detail: 'an adaptive limit of 0, outside [1, 50]' },
      { invariant: 'adaptive-limit', detail: 'an adaptive limit of 51, outside [1, 50]' },
    ]);
    expect(checkAdaptiveLimits([], 50)).toEqual([{ invariant: 'coverage', detail: 'no RetryLater with pauseKey reported an adaptive limit' }]);
  });
});

describe('checkConcurrency', () => {
  it('counts runs at once per key: touching runs do not overlap; one above the limit is flagged once per key', () => {
    const run = (key: string, start: number, end: number) => ({ key, start, end });
    const held = [run('t1', 0, 10), run('t1', 5, 20), run('t1', 10, 30), run('t2', 0, 100), run('t2', 50, 60)];
    expect(checkConcurrency(held, 2)).toEqual({ violations: [], most: 2 });
    const over = [...held, run('t1', 6, 8), run('t1', 7, 9)];
    expect(checkConcurrency(over, 2)).toEqual({
      violations: [{ invariant: 'concurrency-per-key', detail: 't1: 3 handlers at once at 6, limit 2' }],
      most: 4,
    });
  });
});

describe('expectedTicks', () => {
  it('every tick from the first to the last, but those in a missed range; a skipped or replayed tick is caught', () => {
    expect(expectedTicks('t', 1000, 2000, 250, [])).toEqual(['t@1000', 't@1250', 't@1500', 't@1750', 't@2000']);
    // 1250 and 1500 were missed: 1750 ran in their place
    const due = expectedTicks('t', 1000, 2000, 250, [[1250, 1750]]);
    expect(due).toEqual(['t@1000', 't@1750', 't@2000']);
    const ran = (ids: string[]) => ids.map((id) => ({ id, consumer: 'c1' }));
    expect(checkDelivery(due, [], ran(due), []).violations).toEqual([]);
    // one skipped, and one replayed from the missed range
    expect(checkDelivery(due, [], ran(['t@1000', 't@1500', 't@2000']), []).violations.map((v) => v.invariant)).toEqual(['lost', 'unknown']);
  });
});
