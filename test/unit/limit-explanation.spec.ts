import { describe, expect, it } from '@jest/globals';
import { countersOf, explainCounter, PROBE_LIMIT } from '../../lib/rate-limit/limit-explanation.js';
import { counterKind, parseCounterKind, type LimitSpec } from '../../lib/rate-limit/policy.js';

const decision = (remaining: number, retryAfterMs = 0, resetMs = 0) => ({ allowed: retryAfterMs === 0, limit: 0, remaining, retryAfterMs, resetMs });

describe('parseCounterKind', () => {
  it('reads back every kind counterKind writes, and nothing else', () => {
    for (const kind of ['fw', 'sw', 'sc', 'tb', 'fn'] as const) {
      const spec: LimitSpec = { kind, algorithm: kind === 'fn' ? 'tb' : kind, limit: 5, windowMs: 60_000 };
      expect(parseCounterKind(counterKind(spec))).toEqual({ kind, windowMs: 60_000 });
    }
    // the sliding window's 0.2 layout is another kind now; junk is no kind
    expect([parseCounterKind('sw.1000'), parseCounterKind('fw'), parseCounterKind('zz.1000'), parseCounterKind('fw.1e3')]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe('countersOf', () => {
  const login = [
    { at: 'A.login: @RateLimit(#1)', algorithm: 'fixed-window' as const, limit: 2, windowMs: 1000 },
    { at: 'A.otp: @RateLimit(#1)', algorithm: 'sliding-window' as const, windowMs: undefined, limit: 3 },
  ];

  it('joins the kinds used with those declared, each with its declared limit, or why it is unknown', () => {
    expect(countersOf(['sw5.90000', 'fw4.1000', 'tb2.5000'], login)).toEqual([
      { spec: { kind: 'fw', algorithm: 'fw', windowMs: 1000 }, limit: 2 },
      { spec: { kind: 'sw', algorithm: 'sw', windowMs: 90_000 }, limit: undefined, unknown: 'tier' },
      { spec: { kind: 'tb', algorithm: 'tb', windowMs: 5000 }, limit: undefined, unknown: 'undeclared' },
    ]);
    // declared but never used: listed all the same
    expect(countersOf([], login.slice(0, 1))).toEqual([{ spec: { kind: 'fw', algorithm: 'fw', windowMs: 1000 }, limit: 2 }]);
  });

  it("applies the key's own override before the name's, on the window it is for", () => {
    const own = { limit: 7, windowMs: 1000, name: 'login', key: 'ada', expiresAt: 123 };
    const named = { limit: 9, windowMs: 1000 };
    expect(countersOf(['fw4.1000'], login.slice(0, 1), own, named)).toEqual([
      { spec: { kind: 'fw', algorithm: 'fw', windowMs: 1000 }, limit: 7, override: { limit: 7, windowMs: 1000, forKey: true, expiresAt: 123 } },
    ]);
    expect(countersOf(['fw4.1000'], login.slice(0, 1), undefined, named)[0]!.override).toEqual({ limit: 9, windowMs: 1000, forKey: false });
    // another window's override does not apply; one whose window is not known here keeps each counter's
    expect(countersOf(['fw4.1000'], login.slice(0, 1), undefined, { limit: 9, windowMs: 2000 })[0]!.limit).toBe(2);
    expect(countersOf(['fw4.1000'], [], undefined, { limit: 9, windowMs: 0 })[0]!.override).toEqual({ limit: 9, windowMs: 1000, forKey: false });
  });
});

describe('explainCounter', () => {
  const fw = { spec: { kind: 'fw' as const, algorithm: 'fw' as const, windowMs: 1000 }, limit: 5 };

  it('says used of its limit, a refusal or a lockout, and when it is full again', () => {
    expect(explainCounter(fw, { decision: decision(5) })).toBe('fixed-window, 1000 ms window: 0 of 5 used.');
    expect(explainCounter(fw, { decision: decision(2, 0, 400) })).toBe('fixed-window, 1000 ms window: 3 of 5 used; back to full in 400 ms.');
    expect(explainCounter(fw, { decision: decision(0, 400, 400) })).toBe(
      'fixed-window, 1000 ms window: 5 of 5 used; refusing for 400 ms; back to full in 400 ms.',
    );
    expect(explainCounter(fw, { decision: decision(0, 9000, 9000), lockedOut: true })).toBe(
      'fixed-window, 1000 ms window: 5 of 5 used; locked out for 9000 ms more; back to full in 9000 ms.',
    );
  });

  it('names an override, the refusal cache, a funnel, and a limit it does not know', () => {
    const overridden = { ...fw, override: { limit: 5, windowMs: 1000, forKey: true, expiresAt: Date.UTC(2026, 10, 28, 12) } };
    expect(explainCounter(overridden, { decision: decision(5), cachedForMs: 30 })).toBe(
      'fixed-window, 1000 ms window: 0 of 5 used; an override for this key is in force: 5 per 1000 ms until 2026-11-28T12:00:00.000Z; ' +
        'this process refuses it from its refusal cache for 30 ms more, without asking Redis.',
    );
    const funnel = { spec: { kind: 'fn' as const, algorithm: 'tb' as const, windowMs: 2000 }, limit: 4 };
    expect(explainCounter(funnel, { decision: decision(1, 0, 1500) })).toBe('funnel, 2000 ms to leak: 3 of 4 used; back to full in 1500 ms.');
    const tier = { spec: { kind: 'sw' as const, algorithm: 'sw' as const, windowMs: 1000 }, limit: undefined, unknown: 'tier' as const };
    expect(explainCounter(tier, { decision: decision(PROBE_LIMIT - 2, 0, 700), probeLimit: PROBE_LIMIT })).toBe(
      'sliding-window, 1000 ms window: 2 of a limit decided per request (a user tier) used; back to full in 700 ms.',
    );
    const bucket = { spec: { kind: 'tb' as const, algorithm: 'tb' as const, windowMs: 1000 }, limit: undefined, unknown: 'undeclared' as const };
    expect(explainCounter(bucket, {})).toBe(
      'token-bucket, 1000 ms window: a limit this process does not declare, without which how much of it is used cannot be read.',
    );
  });
});
