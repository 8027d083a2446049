import fc from 'fast-check';
import type { RateLimitPolicy, StackedLimit } from '../../lib/index.js';
import { counterKind, funnelSpec, rateLimitSpec } from '../../lib/rate-limit/policy.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { decideOne } from '../harness/decide-one.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { modelOf, SlidingWindowModel, type Kind, type LimitConfig, type ModelGrant, type Verdict } from '../harness/rate-limit-models.js';

// Each algorithm, the funnel and stacks of two limits against reference models written from the
// documented semantics, at explicit times (the scripts' test hook): random consumes, peeks, resets,
// refunds (of any grant made before, once or again), penalties, blocks and clock steps, including
// steps landing exactly on window ends and on the retryAfterMs or resetMs just promised. Every
// field of every decision and every refund must agree exactly: the token bucket is whole numbers
// of 1/windowMs-token units, so no tolerance is needed anywhere. And, from Redis's answers alone:
// no window ever holds more granted permits than the limit allows (net of refunds), and no grant
// is given back more than it took.

/** A sliding window's grant member: four big-endian doubles (sliding-window.lua). */
function grantOf(member: Buffer): { seq: number; permits: number; total: number; at: number } {
  if (member.length !== 32) throw new Error(`a grant member of ${member.length} bytes`);
  return { seq: member.readDoubleBE(0), permits: member.readDoubleBE(8), total: member.readDoubleBE(16), at: member.readDoubleBE(24) };
}

/**
 * A sliding window's grant members in rank order, with their scores (ZRANGE ... WITHSCORES):
 * seqs increase, each total is the one before it plus the grant's permits, which the binary
 * search for retryAfterMs relies on, and each grant's time is its score. No member holds 0: a
 * grant given back whole is removed. The grants, decoded.
 */
function expectGrantMembers(flat: Buffer[]): ReturnType<typeof grantOf>[] {
  const grants = flat.filter((_, k) => k % 2 === 0).map(grantOf);
  expect(grants.filter((grant) => grant.permits === 0)).toEqual([]);
  let seq = 0;
  let total: number | undefined;
  // (one expect for the lot: a key can hold 20,000 members)
  const wrong = grants.filter((grant, k) => {
    const bad = grant.seq <= seq || (total !== undefined && grant.total !== total + grant.permits) || grant.at !== Number(flat[2 * k + 1]!.toString());
    seq = grant.seq;
    total = grant.total;
    return bad;
  });
  expect(wrong).toEqual([]);
  return grants;
}

function stacked({ kind, limit, windowMs, scope }: LimitConfig, key: string, permits: number): StackedLimit {
  return kind === 'funnel'
    ? { key, scope, permits, funnel: { capacity: limit, leakingDurationMs: windowMs } }
    : { key, scope, permits, policy: { limit, windowMs, algorithm: kind } };
}

/** reset() takes a policy only: a funnel's numbers as a token bucket, which is another key. */
function resetPolicy({ kind, limit, windowMs }: LimitConfig): RateLimitPolicy {
  return { limit, windowMs, algorithm: kind === 'funnel' ? 'token-bucket' : kind };
}

type Step =
  | { kind: 'consume'; permits: [number, number]; only: number | null }
  | { kind: 'peek'; permits: [number, number]; only: number | null }
  | { kind: 'reset'; of: number }
  | { kind: 'advance'; ms: number }
  /** permille of the first limit's window: crosses windows, refills fully */
  | { kind: 'windows'; permille: number }
  /** to the next end of a limit's window, give or take a ms or two */
  | { kind: 'boundary'; of: number; offset: number }
  /** the retryAfterMs or resetMs a limit last promised, give or take a ms */
  | { kind: 'wait'; of: number; what: 'retryAfterMs' | 'resetMs'; offset: number }
  /** one of the grants a limit made (any, refunded or not), `permits` of it (0: all) */
  | { kind: 'refund'; of: number; pick: number; permits: number }
  | { kind: 'penalize'; of: number; permits: number }
  /** for permille of the limit's window, and at least a second (see PERSIST below) */
  | { kind: 'block'; of: number; permille: number };

// 0 stands for the whole limit; others wrap into 1..limit
const permit = fc.oneof(fc.constant(0), fc.constant(1), fc.integer({ min: 1, max: 50 }));
const permitsOf = (raw: number, limit: number) => (raw === 0 ? limit : ((raw - 1) % limit) + 1);
const which = fc.constantFrom(0, 1);
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('consume' as const), permits: fc.tuple(permit, permit), only: fc.option(which) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('peek' as const), permits: fc.tuple(permit, permit), only: fc.option(which) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reset' as const), of: which }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 50 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('windows' as const), permille: fc.integer({ min: 0, max: 2500 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('boundary' as const), of: which, offset: fc.integer({ min: -2, max: 2 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      of: which,
      what: fc.constantFrom('retryAfterMs' as const, 'resetMs' as const),
      offset: fc.integer({ min: -1, max: 1 }),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('refund' as const), of: which, pick: fc.nat(), permits: permit }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('penalize' as const), of: which, permits: fc.integer({ min: 1, max: 100 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('block' as const), of: which, permille: fc.integer({ min: 0, max: 1500 }) }) },
);
const steps = fc.array(step, { minLength: 1, maxLength: 150, size: 'max' });

// windowMs >= 5 s: besides the PERSIST below, it keeps every TTL a script sets at >= 100 ms
const limitOf = (kind: Kind) =>
  fc.record({
    kind: fc.constant(kind),
    limit: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 5 }), fc.integer({ min: 6, max: 50 })),
    windowMs: fc.oneof(fc.constantFrom(5_000, 7_919, 59_999, 60_000), fc.integer({ min: 5_000, max: 60_000 })),
  });
const KINDS: Kind[] = ['fixed-window', 'sliding-window', 'sliding-window-counter', 'token-bucket', 'funnel'];
/** Where a run starts, after T0: anywhere within a window. */
const start = fc.integer({ min: 0, max: 60_000 });
/** A round number, far from the server clock (only `now` matters, see PERSIST below). */
const T0 = 2_000_000_000_000;

/**
 * What a limit promises, checked on the grants Redis made (net of what refunds gave back; a
 * reset starts afresh): a fixed window's window, and any sliding window's span of windowMs,
 * holds at most `limit` permits; a sliding window counter's aligned window at most `limit` and
 * its span of windowMs at most 2 × limit - 1; a bucket grants at most `limit` plus what refills
 * meanwhile between any two grants.
 */
function expectWithinLimit({ kind, limit, windowMs }: LimitConfig, grants: { at: number; permits: number; refunded: number; segment: number }[]): void {
  const net = (from: number, to: number, segment: number) =>
    grants.filter((g) => g.segment === segment && g.at >= from && g.at <= to).reduce((sum, g) => sum + g.permits - g.refunded, 0);
  const over: string[] = [];
  for (const first of grants) {
    for (const later of grants) {
      // (a window's or a span's first grant is enough; a bucket takes every pair)
      if (later.segment !== first.segment || later.at < first.at || (kind !== 'token-bucket' && kind !== 'funnel' && later !== first)) continue;
      let allowed: number;
      let held: number;
      if (kind === 'sliding-window-counter') {
        const start = Math.floor(first.at / windowMs) * windowMs;
        const aligned = net(start, start + windowMs - 1, first.segment);
        if (aligned > limit) over.push(`${aligned} > ${limit} in the window from ${start}`);
        [allowed, held] = [2 * limit - 1, net(first.at, first.at + windowMs - 1, first.segment)];
      } else if (kind === 'fixed-window') {
        const start = Math.floor(first.at / windowMs) * windowMs;
        [allowed, held] = [limit, net(start, start + windowMs - 1, first.segment)];
      } else if (kind === 'sliding-window') {
        [allowed, held] = [limit, net(first.at, first.at + windowMs - 1, first.segment)];
      } else {
        [allowed, held] = [limit + Math.floor((limit * (later.at - first.at)) / windowMs), net(first.at, later.at, first.segment)];
      }
      if (held > allowed) over.push(`${held} > ${allowed} from ${first.at} (to ${later.at})`);
    }
  }
  expect(over).toEqual([]);
}

/** The full runs on the default server (Redis 7, standalone); the other flavours, the cluster and
 * forTesting's in-memory engine run the same scripts, so half as many there find what differs. */
const globals = globalThis as { __REDIS_FLAVOR__?: string; __REDIS_TOPOLOGY__?: string };
const FULL = (globals.__REDIS_FLAVOR__ ?? 'redis7') === 'redis7' && (globals.__REDIS_TOPOLOGY__ ?? 'standalone') === 'standalone';
const runs = (n: number) => (FULL ? n : n / 2);

describe('rate limits agree with reference models', () => {
  const ctx = withLimiterApp();
  let run = 0;

  async function check(limits: LimitConfig[], offset: number, sequence: Step[]): Promise<void> {
    const { limiter, moduleRef } = ctx.app;
    const connection = moduleRef.get(RedisConnection);
    const key = `m${(run += 1)}`;
    const stateKey = (c: LimitConfig) => {
      const spec = c.kind === 'funnel' ? funnelSpec({ capacity: c.limit, leakingDurationMs: c.windowMs }) : rateLimitSpec(resetPolicy(c));
      return connection.keys.build(counterKind(spec), key, c.scope);
    };
    const stateKeys = limits.map(stateKey);
    let now = T0 + offset;
    const models = limits.map((c) => modelOf(c, now));
    /** Every grant each limit made, from Redis's answers, with the model's twin; a reset starts
     * a new segment (it forgets what was granted before it). */
    const grants: { id: string; twin: ModelGrant; at: number; permits: number; refunded: number; segment: number }[][] = limits.map(() => []);
    const segments = limits.map(() => 0);
    /** Pipelined right behind a script on its connection: the key kept from the real clock. A key
     * already gone stands for an empty counter only: a run where it held more is skipped. `kept`,
     * once the script has answered: a TTL means the script went out after the PERSIST (not in the
     * call's tick), and its expiry, as short as a ms, would race the rest of the run. */
    const keep = async (i: number) => {
      const [, ttl] = await Promise.all([connection.client.persist(stateKeys[i]!), connection.client.pttl(stateKeys[i]!)]);
      fc.pre(ttl !== -2 || models[i]!.decide(1, false).resetMs === 0);
    };
    /** After the model has taken the step: no TTL left on the key. Gone, it may stand for a key
     * the step left with under a second to live (a fixed window charged in its last ms gets a TTL
     * of 1 ms): on a busy server it can expire before the PERSIST behind it lands, and the run
     * cannot go on against the model, so it is skipped, as for a consume below. */
    const kept = async (i: number) => {
      const ttl = await connection.client.pttl(stateKeys[i]!);
      expect(ttl).toBeLessThan(0);
      const { resetMs } = models[i]!.decide(1, false);
      fc.pre(ttl !== -2 || resetMs === 0 || resetMs >= 1000);
    };
    const last: Verdict[] = limits.map(() => ({ allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 0 }));
    const advance = (ms: number) => {
      now += ms;
      for (const m of models) m.advance(ms);
    };
    const n = limits.length;

    for (const s of sequence) {
      if (s.kind === 'advance') advance(s.ms);
      else if (s.kind === 'windows') advance(Math.floor((limits[0]!.windowMs * s.permille) / 1000));
      else if (s.kind === 'boundary') {
        const w = limits[s.of % n]!.windowMs;
        advance(Math.max(0, (Math.floor(now / w) + 1) * w + s.offset - now));
      } else if (s.kind === 'wait') advance(Math.max(0, last[s.of % n]![s.what] + s.offset));
      else if (s.kind === 'reset') {
        const target = limits[s.of % n]!;
        await limiter.reset(key, resetPolicy(target));
        // reset forgets one state key: a funnel, or another scope, keeps its own
        const gone = connection.keys.build(counterKind(rateLimitSpec(resetPolicy(target))), key);
        stateKeys.forEach((k, i) => {
          if (k !== gone) return;
          models[i]!.reset();
          segments[i]! += 1;
        });
      } else if (s.kind === 'refund') {
        const i = s.of % n;
        const made = grants[i]!;
        if (made.length === 0) continue;
        const grant = made[s.pick % made.length]!;
        const permits = s.permits === 0 ? undefined : permitsOf(s.permits, limits[i]!.limit);
        const back = limiter.refundLimit(stacked(limits[i]!, key, 1), grant.id, permits, { now });
        const [given] = await Promise.all([back, keep(i)]);
        expect(given).toBe(models[i]!.refund(grant.twin, permits ?? limits[i]!.limit));
        await kept(i);
        grant.refunded += given;
        expect(grant.refunded).toBeLessThanOrEqual(grant.permits);
      } else if (s.kind === 'penalize') {
        const i = s.of % n;
        const permits = ((s.permits - 1) % (2 * limits[i]!.limit)) + 1;
        const penalized = limiter.penalizeLimit(stacked(limits[i]!, key, 1), permits, { now });
        const [decision] = await Promise.all([penalized, keep(i)]);
        const expected = models[i]!.penalize(permits);
        await kept(i);
        expect(decision).toEqual({ ...expected, limit: limits[i]!.limit });
        last[i] = expected;
      } else if (s.kind === 'block') {
        const i = s.of % n;
        const ms = Math.max(1000, Math.floor((limits[i]!.windowMs * s.permille) / 1000));
        await Promise.all([limiter.blockLimit(stacked(limits[i]!, key, 1), ms, { now }), keep(i)]);
        models[i]!.block(ms);
        await kept(i);
      } else {
        const peek = s.kind === 'peek';
        const chosen = s.only === null || n === 1 ? limits.map((_, i) => i) : [s.only % n];
        // a peek takes 1 permit whatever it is given
        const asked = chosen.map((i) => permitsOf(s.permits[i]!, limits[i]!.limit));
        const charged = peek ? chosen.map(() => 1) : asked;
        const verdicts = chosen.map((i, j) => models[i]!.decide(charged[j]!, false));
        const allowed = verdicts.every((v) => v.allowed);
        const expected = allowed && !peek ? chosen.map((i, j) => models[i]!.decide(charged[j]!, true)) : verdicts;

        // State keys expire on the server's real clock while decisions run at explicit times.
        // PERSIST, pipelined right behind the script on the same connection, takes the real clock
        // out; each script treats a stale key as a missing one, so keeping it changes no decision.
        const client = connection.client;
        const decided = limiter.decide(
          chosen.map((i, j) => stacked(limits[i]!, key, asked[j]!)),
          { now, peek },
        );
        // (PTTL, not EXISTS: the least-privilege ACL user has no EXISTS; -2 is a missing key)
        const kept = chosen.map((i) => Promise.all([client.persist(stateKeys[i]!), client.pttl(stateKeys[i]!)]));
        // a sliding window's entries (members scored by a time, oldest first): one per grant,
        // not per permit; those aged out stay until the next write
        const entries = chosen.map((i) =>
          models[i] instanceof SlidingWindowModel ? client.zrangebyscoreBuffer(stateKeys[i]!, 0, '(+inf', 'WITHSCORES') : Promise.resolve(null),
        );
        const [reply, ttls, stored] = await Promise.all([decided, Promise.all(kept), Promise.all(entries)]);

        expect(reply.allowed).toBe(allowed);
        // a grant id (opaque) exactly on the decisions that charged
        const ids = reply.decisions.map(({ grantId }) => grantId);
        expect(ids.map((id) => typeof id === 'string' && id.length > 0)).toEqual(chosen.map(() => allowed && !peek));
        expect(reply.decisions.map(({ grantId: _, ...d }) => d)).toEqual(expected.map((v, j) => ({ ...v, limit: limits[chosen[j]!]!.limit })));
        expect(reply.retryAfterMs).toBe(Math.max(...expected.map((v) => v.retryAfterMs)));
        chosen.forEach((i, j) => (last[i] = expected[j]!));
        if (allowed && !peek) {
          chosen.forEach((i, j) => {
            const twin = models[i]!.lastGrant!;
            grants[i]!.push({ id: reply.decisions[j]!.grantId!, twin, at: now, permits: asked[j]!, refunded: 0, segment: segments[i]! });
          });
        }
        chosen.forEach((i, j) => {
          const model = models[i]!;
          if (model instanceof SlidingWindowModel) {
            const members = expectGrantMembers(stored[j]!);
            const cutoff = now - limits[i]!.windowMs;
            const live = members.filter((grant) => grant.at > cutoff);
            // a grant removes what aged out, but for at most a slice (windowMs / 64) of it: the
            // counter is rewritten once its oldest is a slice behind (sw_rewrite)
            const slice = Math.max(1, Math.floor(limits[i]!.windowMs / 64));
            if (allowed && !peek) expect(members.filter((grant) => grant.at <= cutoff - slice)).toEqual([]);
            const permits = live.map((grant) => grant.permits);
            expect(permits.sort((a, b) => a - b)).toEqual(model.stored());
          }
        });
        if (allowed && !peek) {
          ttls.forEach(([, ttl], j) => {
            // a fixed window charged in its last ms may expire before the PERSIST lands: such a
            // run cannot go on against the model, so it is skipped
            fc.pre(ttl !== -2 || expected[j]!.resetMs >= 1000);
            // -1: kept; a TTL would mean the script ran after the PERSIST (not sent at once)
            expect(ttl).toBe(-1);
          });
        }
      }
    }
    limits.forEach((limit, i) => expectWithinLimit(limit, grants[i]!));
  }

  it.each(KINDS)('%s on random sequences', async (kind) => {
    await fc.assert(
      fc.asyncProperty(limitOf(kind), start, steps, (limit, offset, sequence) => check([limit], offset, sequence)),
      { numRuns: runs(40) },
    );
  });

  it('stacks of two limits: all or nothing, each limit as its own model', async () => {
    // the second limit has its own scope, or none when its key kind differs (a funnel next to
    // a token bucket on one key, say), which resets must then tell apart
    const pair = fc
      .tuple(fc.constantFrom(...KINDS).chain(limitOf), fc.constantFrom(...KINDS).chain(limitOf), fc.boolean())
      .map(([a, b, unscoped]): LimitConfig[] => [a, { ...b, scope: unscoped && a.kind !== b.kind ? undefined : 'second' }]);
    await fc.assert(
      fc.asyncProperty(pair, start, steps, (limits, offset, sequence) => check(limits, offset, sequence)),
      { numRuns: runs(60) },
    );
  });
});

// The retry time of a refused request on a key holding many small grants comes from a binary search
// over the grants' running totals (lua/rate-limit/sliding-window.lua), which refunds renumber:
// every answer must still be the exact one a walk over the grants gives.
describe('sliding window: exact retryAfterMs over many grants, refunds and ageing', () => {
  const ctx = withLimiterApp();
  const T0 = 2_000_000_000_000;
  const LIMIT = 30_000;
  const WINDOW_MS = 60_000;

  it('matches a walk over 20,000 grants, after refunds in the middle and after the oldest age out', async () => {
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const spec = rateLimitSpec({ limit: LIMIT, windowMs: WINDOW_MS });
    const key = connection.keys.build(counterKind(spec), 'many-grants');
    const args = [spec.algorithm, LIMIT, WINDOW_MS];
    // decide.lua's values for a stack of one limit, in its reply's order
    const decide = async (now: number, permits: number): Promise<(number | string)[]> => {
      const one = await decideOne(connection, key, spec, now, permits);
      return [one.stack, one.verdict, one.remaining, one.retryAfterMs, one.resetMs, one.grant];
    };
    const refund = (now: number, permits: number, grant: string) =>
      connection.scripts.run('rateLimitRefund', [key], [String(now), ...args, permits, grant]) as Promise<number[]>;

    /** The model: live grants oldest first, as the reference SlidingWindowModel keeps them. */
    let grants: { at: number; permits: number; id: string }[] = [];
    let now = T0;
    const advanceTo = (t: number) => {
      now = t;
      grants = grants.filter((g) => g.at + WINDOW_MS > now);
    };
    const used = () => grants.reduce((sum, g) => sum + g.permits, 0);
    const expectedRetry = (permits: number) => {
      let need = used() + permits - LIMIT;
      for (const g of grants) {
        need -= g.permits;
        if (need <= 0) return g.at + WINDOW_MS - now;
      }
      throw new Error('permits above the limit');
    };

    // three grants a ms (ties in score, across seqs of 1 to 5 digits), every 1000th of 5 permits
    const N = 20_000;
    for (let from = 0; from < N; from += 2_000) {
      const batch = Array.from({ length: 2_000 }, (_, j) => {
        const i = from + j;
        return { at: T0 + Math.floor(i / 3) * 2, permits: i % 1_000 === 999 ? 5 : 1 };
      });
      const replies = await Promise.all(batch.map((g) => decide(g.at, g.permits)));
      replies.forEach((reply, j) => {
        expect(reply[0]).toBe(1);
        grants.push({ ...batch[j]!, id: reply[5] as string });
      });
    }
    const byIndex = [...grants];

    /** Refused requests from one permit past what is left up to the whole limit. */
    const probe = async () => {
      const left = LIMIT - used();
      const asks = [1, 2, 3, 4, 5, 6, 100, 999, 1_000, 1_001, 4_321, 12_000, used() - 1, used()].map((k) => left + k).filter((p) => p > left && p <= LIMIT);
      const got = await Promise.all(asks.map((p) => decide(now, p).then((r) => ({ p, allowed: r[0], remaining: r[2], retry: r[3] }))));
      expect(got).toEqual(asks.map((p) => ({ p, allowed: 0, remaining: left, retry: expectedRetry(p) })));
      // a refusal writes nothing: grants that aged out stay until the next grant or refund
      expectGrantMembers(await ctx.app.raw.zrangebyscoreBuffer(key, 0, '(+inf', 'WITHSCORES'));
      const live = await ctx.app.raw.zrangebyscore(key, `(${now - WINDOW_MS}`, '(+inf');
      expect(live).toHaveLength(grants.length);
    };
    const giveBack = async (index: number, permits: number, expected = Math.min(permits, byIndex[index]!.permits)) => {
      const grant = byIndex[index]!;
      expect(await refund(now, permits, grant.id)).toEqual([expected]);
      if (expected === 0) return;
      grant.permits -= expected;
      if (grant.permits === 0) grants = grants.filter((g) => g !== grant);
    };

    advanceTo(T0 + Math.floor((N - 1) / 3) * 2 + 1);
    await probe();

    // in the middle, whole and in part; next to either end (each renumbers the shorter side)
    await giveBack(5_000, 1);
    await giveBack(8_999, 2);
    await giveBack(12_345, 1);
    await giveBack(10, 1);
    await giveBack(19_998, 1);
    await giveBack(19_999, 3);
    // each permit once: a whole refund again gives nothing, one in part gives the rest
    await giveBack(5_000, 1, 0);
    await giveBack(8_999, 1);
    await giveBack(8_999, 5, 2);
    await giveBack(8_999, 1, 0);
    await probe();

    // the oldest third ages out, to the ms; then grants whose totals were renumbered are refunded
    advanceTo(byIndex[6_000]!.at + WINDOW_MS);
    await probe();
    await giveBack(14_999, 4);
    await giveBack(7_000, 1);
    await giveBack(3_000, 1, 0);
    await probe();

    // new grants continue the totals after all that
    for (let i = 0; i < 5; i++) {
      const reply = await decide(now, 7);
      grants.push({ at: now, permits: 7, id: reply[5] as string });
    }
    await probe();
    advanceTo(byIndex[N - 2]!.at + WINDOW_MS - 1);
    await probe();
  });
});
