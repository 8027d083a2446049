import fc from 'fast-check';
import type { StackedLimit } from '../../lib/index.js';
import { LocalLimiter } from '../../lib/rate-limit/local/local-limiter.js';
import { decideStacked } from '../harness/local-stack.js';
import { modelOf, type Kind, type LimitConfig, type LimitModel, type Verdict } from '../harness/rate-limit-models.js';

// failMode 'local' decides in process memory what Redis's scripts decide: the same reference
// models (test/harness/rate-limit-models.ts) with each limit divided by localDivisor, rounded up.
// Random consumes of stacks of one or two limits and clock steps (onto window ends and onto the
// retryAfterMs or resetMs just promised); every field of every decision must agree exactly.

const KINDS: Kind[] = ['fixed-window', 'sliding-window', 'sliding-window-counter', 'token-bucket', 'funnel'];
const T0 = 2_000_000_000_000;

const limitArb = fc.record({
  kind: fc.constantFrom(...KINDS),
  limit: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 6 }), fc.integer({ min: 7, max: 40 })),
  windowMs: fc.oneof(fc.constantFrom(1_000, 60_000), fc.integer({ min: 1, max: 60_000 })),
});

type Move =
  /** raw permits per limit: 0 is the whole declared limit, others wrap into 1..limit */
  | { kind: 'consume'; raw: number[] }
  | { kind: 'advance'; ms: number }
  | { kind: 'boundary'; of: number; offset: number }
  | { kind: 'wait'; of: number; what: 'retryAfterMs' | 'resetMs'; offset: number };

const moveArb: fc.Arbitrary<Move> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({ kind: fc.constant('consume' as const), raw: fc.array(fc.integer({ min: 0, max: 45 }), { minLength: 2, maxLength: 2 }) }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 90_000 })) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('boundary' as const), of: fc.nat(1), offset: fc.integer({ min: -1, max: 1 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      of: fc.nat(1),
      what: fc.constantFrom('retryAfterMs' as const, 'resetMs' as const),
      offset: fc.integer({ min: -1, max: 1 }),
    }),
  },
);

const asStacked = ({ kind, limit, windowMs }: LimitConfig, scope: string, permits: number): StackedLimit =>
  kind === 'funnel'
    ? { key: 'k', scope, permits, funnel: { capacity: limit, leakingDurationMs: windowMs } }
    : { key: 'k', scope, permits, policy: { limit, windowMs, algorithm: kind } };

/** Runs `moves` on a LocalLimiter and on one model per limit (its limit divided), comparing. */
function agree(limits: LimitConfig[], divisor: number, offset: number, moves: Move[]): void {
  const local = new LocalLimiter(divisor);
  let now = T0 + offset;
  const divided = limits.map((c) => Math.max(1, Math.ceil(c.limit / divisor)));
  const models: LimitModel[] = limits.map((c, i) => modelOf({ ...c, limit: divided[i]! }, now));
  const last: Verdict[] = limits.map(() => ({ allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 0 }));
  const advance = (ms: number) => {
    now += ms;
    for (const m of models) m.advance(ms);
  };

  for (const move of moves) {
    if (move.kind === 'advance') advance(move.ms);
    else if (move.kind === 'boundary') {
      const w = limits[move.of % limits.length]!.windowMs;
      advance(Math.max(0, (Math.floor(now / w) + 1) * w + move.offset - now));
    } else if (move.kind === 'wait') advance(Math.max(0, last[move.of % limits.length]![move.what] + move.offset));
    else {
      // permits are drawn up to the declared limit: above the divided one, a refusal for a window
      const permits = limits.map((c, i) => (move.raw[i] === 0 ? c.limit : ((move.raw[i]! - 1) % c.limit) + 1));
      const verdicts = models.map((m, i): Verdict => {
        if (permits[i]! <= divided[i]!) return m.decide(permits[i]!, false);
        return { ...m.decide(divided[i]!, false), allowed: false, retryAfterMs: limits[i]!.windowMs };
      });
      const allowed = verdicts.every((v) => v.allowed);
      const expected = allowed ? models.map((m, i) => m.decide(permits[i]!, true)) : verdicts;

      const result = decideStacked(
        local,
        limits.map((c, i) => asStacked(c, `s${i}`, permits[i]!)),
        now,
      );
      expect(result.allowed).toBe(allowed);
      expect(result.decisions).toEqual(expected.map((v, i) => ({ ...v, limit: divided[i] })));
      expect(result.retryAfterMs).toBe(Math.max(...expected.map((v) => v.retryAfterMs)));
      expected.forEach((v, i) => (last[i] = v));
    }
  }
}

const moves = fc.array(moveArb, { minLength: 1, maxLength: 120 });
const start = fc.integer({ min: 0, max: 60_000 });
const divisorArb = fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 5 }));

describe('LocalLimiter agrees with the reference models', () => {
  it.each(KINDS)('%s, its limit divided by localDivisor', (kind) => {
    fc.assert(
      fc.property(limitArb, divisorArb, start, moves, (limit, divisor, offset, sequence) => agree([{ ...limit, kind }], divisor, offset, sequence)),
      { numRuns: 150 },
    );
  });

  it('stacks of two limits: all or nothing, each limit as its own model', () => {
    fc.assert(
      fc.property(fc.tuple(limitArb, limitArb), divisorArb, start, moves, (pair, divisor, offset, sequence) => agree(pair, divisor, offset, sequence)),
      { numRuns: 200 },
    );
  });
});

describe('LocalLimiter', () => {
  const policy = (algorithm: 'fixed-window' | 'sliding-window' | 'token-bucket', limit = 5) => ({ limit, windowMs: 60_000, algorithm });
  const at = (key: string, permits = 1, scope?: string): StackedLimit => ({ key, scope, permits, policy: policy('fixed-window', 1) });
  const granted = (local: LocalLimiter, stack: StackedLimit[], now: number) => decideStacked(local, stack, now).allowed;

  it.each(['fixed-window', 'sliding-window', 'token-bucket'] as const)('%s grants ceil(limit / localDivisor) in a window, then refuses', (algorithm) => {
    const local = new LocalLimiter(2);
    const statuses = Array.from({ length: 5 }, () => granted(local, [{ key: 'k', policy: policy(algorithm) }], T0));
    expect(statuses).toEqual([true, true, true, false, false]);
    const refused = decideStacked(local, [{ key: 'k', policy: policy(algorithm) }], T0);
    expect(refused.decisions[0]).toMatchObject({ allowed: false, limit: 3, remaining: 0 });
    expect(refused.retryAfterMs).toBeGreaterThan(0);
  });

  it('a sliding-window grant counts until exactly windowMs after it, and no longer', () => {
    const local = new LocalLimiter(1);
    const sw = (permits = 1): StackedLimit => ({ key: 'k', permits, policy: policy('sliding-window', 2) });
    expect([granted(local, [sw()], T0), granted(local, [sw()], T0 + 10)]).toEqual([true, true]);
    expect(decideStacked(local, [sw()], T0 + 59_999).decisions[0]).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1 });
    expect(decideStacked(local, [sw(2)], T0 + 60_000).decisions[0]).toMatchObject({ allowed: false, remaining: 1, retryAfterMs: 10 });
    expect(decideStacked(local, [sw()], T0 + 60_000).decisions[0]).toMatchObject({ allowed: true, remaining: 0, resetMs: 60_000 });
  });

  it('a divisor above the limit still leaves 1; more permits than the divided limit wait a window', () => {
    const local = new LocalLimiter(10);
    expect(decideStacked(local, [{ key: 'k', policy: policy('sliding-window', 3) }], T0).decisions[0]).toMatchObject({ allowed: true, limit: 1 });
    const big = decideStacked(local, [{ key: 'j', permits: 2, policy: policy('sliding-window', 3) }], T0);
    expect(big).toEqual({ allowed: false, retryAfterMs: 60_000, decisions: [{ allowed: false, limit: 1, remaining: 1, retryAfterMs: 60_000, resetMs: 0 }] });
  });

  it('counters are told apart as in Redis: by key, scope, algorithm and window; a funnel is not a bucket', () => {
    const local = new LocalLimiter(1);
    expect(granted(local, [at('a')], T0)).toBe(true);
    expect(granted(local, [at('a')], T0)).toBe(false);
    expect(granted(local, [at('a', 1, 'other')], T0)).toBe(true);
    expect(granted(local, [at('b')], T0)).toBe(true);
    expect(granted(local, [{ key: 'a', policy: { limit: 1, windowMs: 30_000, algorithm: 'fixed-window' } }], T0)).toBe(true);
    expect(granted(local, [{ key: 'a', policy: { limit: 1, windowMs: 60_000, algorithm: 'token-bucket' } }], T0)).toBe(true);
    expect(granted(local, [{ key: 'a', funnel: { capacity: 1, leakingDurationMs: 60_000 } }], T0)).toBe(true);
  });

  it('holds at most maxKeys counters, dropping the least recently used (a refused key counts as used)', () => {
    const local = new LocalLimiter(1, 3);
    for (const key of ['a', 'b', 'c']) expect(granted(local, [at(key)], T0)).toBe(true);
    expect(granted(local, [at('a')], T0)).toBe(false); // a is now the most recently used
    expect(granted(local, [at('d')], T0)).toBe(true); // drops b
    expect(local.size).toBe(3);
    expect(granted(local, [at('a')], T0)).toBe(false);
    expect(granted(local, [at('c')], T0)).toBe(false);
    expect(granted(local, [at('b')], T0)).toBe(true); // forgotten
    expect(local.size).toBe(3);
  });

  it('drops a counter once it holds nothing a fresh one would not: window over, grants aged out, bucket full', () => {
    const local = new LocalLimiter(1);
    const w = Math.ceil(T0 / 60_000) * 60_000;
    const fw = at('fw');
    const sw: StackedLimit = { key: 'sw', policy: policy('sliding-window') };
    const tb: StackedLimit = { key: 'tb', permits: 3, policy: policy('token-bucket') };
    // refuses for 10 minutes once charged: stacked with it, a counter is looked at, not charged
    const blocker: StackedLimit = { key: 'z', policy: { limit: 1, windowMs: 600_000, algorithm: 'token-bucket' } };
    expect([granted(local, [fw], w), granted(local, [sw], w + 10), granted(local, [tb], w + 20), granted(local, [blocker], w)]).toEqual([
      true,
      true,
      true,
      true,
    ]);
    for (const limit of [fw, sw, tb]) expect(granted(local, [limit, blocker], w + 35_000)).toBe(false);
    expect(local.size).toBe(4);

    // the window ended at w + 60 s, the grant aged out at w + 60.01 s, 3 of 5 tokens a minute
    // were back at w + 36.02 s
    const later = w + 60_010;
    expect(decideStacked(local, [fw, blocker], later).decisions[0]).toEqual({ allowed: true, limit: 1, remaining: 1, retryAfterMs: 0, resetMs: 0 });
    expect(decideStacked(local, [sw, blocker], later).decisions[0]).toEqual({ allowed: true, limit: 5, remaining: 5, retryAfterMs: 0, resetMs: 0 });
    expect(decideStacked(local, [tb, blocker], later).decisions[0]).toEqual({ allowed: true, limit: 5, remaining: 5, retryAfterMs: 0, resetMs: 0 });
    expect(local.size).toBe(1);
  });
});
