import fc from 'fast-check';
import type { StackedLimit } from '../../lib/index.js';
import { LocalLimiter } from '../../lib/rate-limit/local/local-limiter.js';
import type { OwedCharge } from '../../lib/rate-limit/local/local-owed.js';
import { decideStacked } from '../harness/local-stack.js';
import { modelOf, type Kind, type LimitConfig, type LimitModel } from '../harness/rate-limit-models.js';

// failMode 'local' hands over: what a counter owes Redis when it answers again is what Redis's own
// counter (the declared limit, not the divided one) would still hold of the local grants, had it
// made them: the reference models (test/harness/rate-limit-models.ts) penalized at each grant's
// time say how much that is. Each grant is owed once: a hand-over takes what it charges.

const KINDS: Kind[] = ['fixed-window', 'sliding-window', 'token-bucket', 'funnel'];
const T0 = 2_000_000_000_000;

const asStacked = ({ kind, limit, windowMs }: LimitConfig, permits = 1): StackedLimit =>
  kind === 'funnel'
    ? { key: 'k', scope: 's', permits, funnel: { capacity: limit, leakingDurationMs: windowMs } }
    : { key: 'k', scope: 's', permits, policy: { limit, windowMs, algorithm: kind } };

/** What each counter owes (its key: its policy's kind), from a hand-over's charges. */
const owedOf = (charges: OwedCharge[]) => charges.map(({ counter, permits }) => ({ key: counter.target.key, permits }));

type Move = { kind: 'grant'; permits: number } | { kind: 'advance'; ms: number } | { kind: 'handOver' };

const moveArb: fc.Arbitrary<Move> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('grant' as const), permits: fc.integer({ min: 1, max: 4 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 90_000 })) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('handOver' as const) }) },
);

describe('what failMode local owes Redis', () => {
  it.each(KINDS)('%s: what a Redis counter of the declared limit would still hold of the local grants, once', (kind) => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.oneof(fc.constantFrom(1_000, 60_000), fc.integer({ min: 1, max: 60_000 })),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 60_000 }),
        fc.array(moveArb, { minLength: 1, maxLength: 80 }),
        (limit, windowMs, divisor, offset, moves) => {
          const config: LimitConfig = { kind, limit, windowMs };
          const local = new LocalLimiter(divisor);
          let now = T0 + offset;
          // Redis's counter, had it seen the grants made since the last hand-over
          let redis: LimitModel = modelOf(config, now);
          for (const move of moves) {
            if (move.kind === 'advance') {
              now += move.ms;
              redis.advance(move.ms);
            } else if (move.kind === 'grant') {
              if (decideStacked(local, [asStacked(config, move.permits)], now).allowed) redis.penalize(move.permits);
            } else {
              const owed = limit - redis.decide(1, false).remaining;
              expect(owedOf(local.owed.take(now))).toEqual(owed > 0 ? [{ key: 'k', permits: owed }] : []);
              expect(local.owed.take(now)).toEqual([]);
              redis = modelOf(config, now);
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  const policy = (algorithm: 'fixed-window' | 'sliding-window' | 'token-bucket'): StackedLimit['policy'] => ({ limit: 6, windowMs: 60_000, algorithm });
  const w = Math.ceil(T0 / 60_000) * 60_000;

  it('a fixed window that ended owes nothing; one still running owes its grants', () => {
    const local = new LocalLimiter(3);
    expect(decideStacked(local, [{ key: 'fw', policy: policy('fixed-window'), permits: 2 }], w + 59_000).allowed).toBe(true);
    expect(owedOf(local.owed.take(w + 59_999))).toEqual([{ key: 'fw', permits: 2 }]);
    expect(decideStacked(local, [{ key: 'fw', policy: policy('fixed-window'), permits: 2 }], w + 59_000).allowed).toBe(false); // its local counter stays
    expect(decideStacked(local, [{ key: 'fw', policy: policy('fixed-window'), permits: 2 }], w + 60_000).allowed).toBe(true);
    expect(owedOf(local.owed.take(w + 120_000))).toEqual([]);
    expect(local.owed.size).toBe(0);
  });

  it('a sliding window owes the grants younger than its window; a bucket refilled since owes nothing', () => {
    const local = new LocalLimiter(3);
    expect(decideStacked(local, [{ key: 'sw', policy: policy('sliding-window') }], w).allowed).toBe(true);
    expect(decideStacked(local, [{ key: 'sw', policy: policy('sliding-window') }], w + 30_000).allowed).toBe(true);
    // 6 a minute: a token back each 10 s (Redis's rate, not the divided one): full again at w + 20 s
    expect(decideStacked(local, [{ key: 'tb', policy: policy('token-bucket'), permits: 2 }], w).allowed).toBe(true);
    expect(owedOf(local.owed.take(w + 60_000))).toEqual([{ key: 'sw', permits: 1 }]);
  });

  it('a bucket owes what has not refilled yet at the declared rate', () => {
    const local = new LocalLimiter(3);
    expect(decideStacked(local, [{ key: 'tb', policy: policy('token-bucket'), permits: 2 }], w).allowed).toBe(true);
    expect(owedOf(local.owed.take(w + 9_999))).toEqual([{ key: 'tb', permits: 2 }]);
    expect(decideStacked(local, [{ key: 'tb2', policy: policy('token-bucket'), permits: 2 }], w).allowed).toBe(true);
    expect(owedOf(local.owed.take(w + 10_000))).toEqual([{ key: 'tb2', permits: 1 }]);
  });

  it('a charge that did not reach Redis is owed again: as it was, or added to what was granted since', () => {
    const local = new LocalLimiter(1);
    const sw: StackedLimit = { key: 'sw', policy: policy('sliding-window') };
    expect(decideStacked(local, [{ ...sw, permits: 2 }], w).allowed).toBe(true);
    const [charge] = local.owed.take(w + 1_000);
    local.owed.restore(charge!.counter, w + 2_000);
    expect(owedOf(local.owed.take(w + 59_999))).toEqual([{ key: 'sw', permits: 2 }]); // as it was: ages out at w + 60 s

    expect(decideStacked(local, [{ ...sw, permits: 1 }], w + 1_000).allowed).toBe(true);
    const [again] = local.owed.take(w + 1_000);
    expect(decideStacked(local, [{ ...sw, permits: 1 }], w + 2_000).allowed).toBe(true); // granted while the charge was out
    local.owed.restore(again!.counter, w + 3_000);
    expect(owedOf(local.owed.take(w + 3_000))).toEqual([{ key: 'sw', permits: 2 }]);
  });

  it('holds at most maxKeys counters, the least recently granted dropped first', () => {
    const local = new LocalLimiter(1, 3);
    for (const key of ['a', 'b', 'c', 'd']) expect(decideStacked(local, [{ key, policy: policy('fixed-window') }], w).allowed).toBe(true);
    expect(local.owed.size).toBe(3);
    expect(owedOf(local.owed.take(w)).map((c) => c.key)).toEqual(['b', 'c', 'd']);
  });
});
