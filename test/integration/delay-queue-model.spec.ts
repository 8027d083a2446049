import fc from 'fast-check';
import { DelayQueueService } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { QueueReply } from '../../lib/redis/replies.js';
import type { ScriptName } from '../../lib/redis/scripts.js';
import { withLimiterApp } from '../harness/limiter-app.js';

// The DelayQueue scripts against a state machine, at explicit times (the scripts' test hook):
// each id is scheduled (runAt), in flight (lease deadline, claim token), dead, or gone. Random
// enqueues, claims (some for a rate-limited consumer), admissions of claimed messages (start,
// deferral by a fixed-window counter, or a wait for a slot of a cap per key), slot releases, acks, lease renewals, fails (admissions, acks, renewals
// and fails sometimes from a stale claim), cancels, reschedules, dead-set pages, retries and
// purges of the dead (by id and all) and clock steps on a small pool of ids, so duplicates,
// redeliveries and ties happen; deaths trim the dead set by age and count. A deferred claim, and
// a rate-limited claim whose lease runs out before any admission, is no attempt: the attempt a
// claim reports is claims - non-attempts. Some claims bound the queue's global concurrency: one
// that leaves due messages because the queue is full marks the hash ('w'), and the first ack,
// failure or deferral clears it. Every reply and, after
// every step, the sizes must agree; at the end of a run the sets and the data hash must be
// exactly the model.
//
// Ties: claims order due messages by time, then by id bytewise (the sorted sets' order, which
// also decides which of several equal-time messages a limited claim takes). Leases run out
// lazily: a message past its deadline is still in flight, and can be acked, renewed or failed,
// until a claim hands it on. An ack, renewal or failure names the attempt it comes from and
// changes nothing unless that is the message's latest delivery.

type Where = 'scheduled' | 'inFlight' | 'dead';

interface Message {
  where: Where;
  /** runAt, lease deadline or time of death (ms): its score in the set it is in. */
  at: number;
  payload: string;
  /** Claims since it was enqueued: the lease token. A dead message brought back keeps them. */
  claims: number;
  /** Claims that were no attempt. */
  skipped: number;
  /** A rate-limited claim awaits its admission. */
  pending: boolean;
  error?: string | undefined;
  /** 'r:': the runAt of its last claim. */
  ranAt?: number | undefined;
  /** 'y:': why it was last given back to wait: code, due time, Redis key. */
  why?: string | undefined;
  /** 'c:': the trace context it was enqueued in ('' when untraced). */
  context: string;
}

/** The fixed-window counter admissions charge, in one window (see RATE_WINDOW_MS). */
interface RateKey {
  used: number;
  /** The due time last given to one of its deferred messages. */
  paced?: number;
}

const byTimeThenId = ([a, x]: [string, Message], [b, y]: [string, Message]) => x.at - y.at || (a < b ? -1 : a > b ? 1 : 0);

class QueueModel {
  readonly messages = new Map<string, Message>();
  readonly rateKeys = new Map<string, RateKey>();
  /** Per concurrency key: the slots (id -> the token of the claim admitted), and the messages
   * waiting for one (id -> the due time their wait gave them). */
  readonly slots = new Map<string, Map<string, number>>();
  readonly waitingFor = new Map<string, Map<string, number>>();
  /** 'w': a claim found the queue full; the wake-up it names goes out when a slot frees. */
  waiting: string | null = null;
  /** 'f': the queue's claims so far, each claim's fence. */
  fences = 0;

  private ordered(where: Where): [string, Message][] {
    return [...this.messages].filter(([, m]) => m.where === where).sort(byTimeThenId);
  }

  enqueue(id: string, payload: string, runAt: number, context: string): [number, number] {
    const m = this.messages.get(id);
    if (m && m.where !== 'dead') return [QueueReply.ALREADY_QUEUED, m.at];
    // new, or dead and starting afresh: attempt 1 next, with a token no earlier claim had, and
    // the new enqueuer's trace (none if untraced)
    const claims = m?.claims ?? 0;
    this.messages.set(id, { where: 'scheduled', at: runAt, payload, claims, skipped: claims, pending: false, context });
    return [QueueReply.SCHEDULED, runAt];
  }

  claim(now: number, limit: number, visibilityMs: number, admitting: boolean, global: number | null, wakeUp: string): (string | number)[] {
    // leases that ran out are due again now, at most `limit` of them per claim; one never
    // admitted was no attempt
    const expired = this.ordered('inFlight').filter(([, m]) => m.at <= now);
    for (const [, m] of expired.slice(0, limit)) {
      m.where = 'scheduled';
      m.at = now;
      if (m.pending) Object.assign(m, { pending: false, skipped: m.skipped + 1 });
    }
    const asked = limit;
    if (global !== null) limit = Math.min(limit, global - this.size()[1]!);
    const claimed: (string | number)[] = [];
    for (const [id, m] of this.ordered('scheduled')
      .filter(([, m]) => m.at <= now)
      .slice(0, Math.max(0, limit))) {
      m.claims += 1;
      m.pending = admitting;
      m.ranAt = m.at;
      this.fences += 1;
      claimed.push(id, m.payload, m.at, m.claims - m.skipped, m.claims, this.fences, '', m.context);
      m.where = 'inFlight';
      m.at = now + visibilityMs;
    }
    const heads = (where: Where) => this.ordered(where).map(([, m]) => m.at);
    if (global !== null && limit < asked && heads('scheduled').some((at) => at <= now)) {
      // full: the next chance without a wake-up is the earliest lease deadline
      this.waiting = wakeUp;
      return [now, Math.min(...heads('inFlight')), ...claimed];
    }
    if (expired.length > 0) this.waiting = null;
    const next = [...heads('scheduled'), ...heads('inFlight')];
    return [now, next.length > 0 ? Math.min(...next) : QueueReply.NOTHING_DUE, ...claimed];
  }

  private holds(id: string, attempt: number): boolean {
    const m = this.messages.get(id);
    return m?.where === 'inFlight' && m.claims === attempt;
  }

  /**
   * Admissions at `now`: with `rated`, by fixed-window counters of `limit` in one window of
   * `windowMs`; with `cap` > 0, at most `cap` slots per concurrency key (a message waiting for one
   * is due after PARK_MS). `held`: id, token, rate key, concurrency key.
   */
  admit(now: number, rated: boolean, limit: number, windowMs: number, cap: number, held: [string, number, string, string, string, string][]): number[] {
    // slots held per key, counted once per call (as admit.lua does)
    const counted = new Map<string, number>();
    return held.map(([id, token, key, slotKey, counterRedisKey, slotsRedisKey]) => {
      if (!this.holds(id, token)) return QueueReply.LEASE_LOST;
      const m = this.messages.get(id)!;
      m.pending = false;
      const slots = this.slots.get(slotKey) ?? new Map<string, number>();
      this.slots.set(slotKey, slots);
      if (cap > 0) {
        if (!counted.has(slotKey)) {
          for (const [holder, held] of slots) if (!this.holds(holder, held)) slots.delete(holder);
          counted.set(slotKey, slots.size);
        }
        if (counted.get(slotKey)! >= cap) {
          const due = now + PARK_MS;
          Object.assign(m, { where: 'scheduled', at: due, skipped: m.skipped + 1, why: `c ${due} ${slotsRedisKey}` });
          const waiting = this.waitingFor.get(slotKey) ?? new Map<string, number>();
          this.waitingFor.set(slotKey, waiting.set(id, due));
          this.waiting = null;
          return QueueReply.WAITING;
        }
      }
      const counter = this.rateKeys.get(key) ?? { used: 0 };
      if (rated) {
        this.rateKeys.set(key, counter);
        if (counter.used + 1 > limit) {
          let due = now + Math.max(1, (Math.floor(now / windowMs) + 1) * windowMs - now);
          if (counter.paced !== undefined && counter.paced + windowMs / limit > due) due = Math.ceil(counter.paced + windowMs / limit);
          counter.paced = due;
          Object.assign(m, { where: 'scheduled', at: due, skipped: m.skipped + 1, why: `r ${due} ${counterRedisKey}` });
          this.waiting = null;
          return due;
        }
        counter.used += 1;
      }
      if (cap > 0) {
        slots.set(id, token);
        this.waitingFor.get(slotKey)?.delete(id);
        counted.set(slotKey, counted.get(slotKey)! + 1);
      }
      return QueueReply.ADMITTED;
    });
  }

  /** A handler of (id, token) with a slot of `slotKey` ended: 1 when a waiting message is due now. */
  release(now: number, id: string, token: number, slotKey: string): number {
    const slots = this.slots.get(slotKey);
    if (slots?.get(id) === token) slots.delete(id);
    const waiting = this.waitingFor.get(slotKey) ?? new Map<string, number>();
    for (let i = 0; i < 16; i++) {
      const [first] = [...waiting].sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0));
      if (!first) return 0;
      waiting.delete(first[0]);
      const m = this.messages.get(first[0]);
      if (m?.where === 'scheduled' && m.at === first[1]) {
        if (m.at > now) m.at = now;
        return 1;
      }
    }
    return 0;
  }

  ack(pairs: [string, number][]): number {
    const acked = pairs.filter(([id, attempt]) => this.holds(id, attempt) && this.messages.delete(id)).length;
    if (acked > 0) this.waiting = null;
    return acked;
  }

  renew(now: number, visibilityMs: number, pairs: [string, number][]): string[] {
    const lost: string[] = [];
    for (const [id, attempt] of pairs) {
      if (this.holds(id, attempt)) this.messages.get(id)!.at = now + visibilityMs;
      else lost.push(id);
    }
    return lost;
  }

  fail(now: number, id: string, backoffMs: number, error: string, attempt: number, trim: Trim): number {
    const m = this.messages.get(id);
    if (!m || !this.holds(id, attempt)) return QueueReply.LEASE_LOST;
    m.error = error;
    m.pending = false;
    this.waiting = null;
    if (backoffMs < 0) {
      m.where = 'dead';
      m.at = now;
      // the oldest go: past retention, and beyond the newest maxDead; at most `batch` of them
      const dead = this.ordered('dead');
      const aged = Math.min(dead.filter(([, d]) => d.at < now - trim.retentionMs).length, trim.batch);
      const excess = dead.length - trim.maxDead;
      const doomed = excess > aged ? Math.min(excess, trim.batch) : aged;
      for (const [gone] of dead.slice(0, doomed)) this.messages.delete(gone);
      return QueueReply.DIED;
    }
    m.where = 'scheduled';
    m.at = now + backoffMs;
    return m.at;
  }

  cancel(id: string): number {
    return this.messages.get(id)?.where === 'scheduled' && this.messages.delete(id) ? QueueReply.CANCELLED : QueueReply.NOT_CANCELLED;
  }

  reschedule(id: string, runAt: number): number {
    const m = this.messages.get(id);
    if (m?.where !== 'scheduled') return QueueReply.NOT_SCHEDULED;
    m.at = runAt;
    return runAt;
  }

  /** A page after the cursor (time of death, id), oldest first: more?, then six per message. */
  deadPage(after: [number, string] | null, limit: number): (string | number | null)[] {
    const [at, id] = after ?? [-Infinity, ''];
    const rest = this.ordered('dead').filter(([k, m]) => m.at > at || (m.at === at && k > id));
    const page = rest.slice(0, limit).flatMap(([k, m]) => [k, String(m.at), m.payload, m.claims - m.skipped, m.error ?? '', m.ranAt ?? null]);
    return [rest.length > limit ? QueueReply.MORE : QueueReply.LAST_PAGE, ...page];
  }

  /** The dead ids a retry or purge takes: those named that are dead, or the oldest up to `bound`. */
  private deadBatch(ids: string[] | null, limit: number, bound: number): string[] {
    if (ids) return ids.filter((k) => this.messages.get(k)?.where === 'dead');
    return this.ordered('dead')
      .filter(([, m]) => m.at <= bound)
      .slice(0, limit)
      .map(([k]) => k);
  }

  retryDead(now: number, ids: string[] | null, limit: number): number[] {
    const moved = this.deadBatch(ids, limit, now);
    for (const k of moved) {
      const m = this.messages.get(k)!;
      Object.assign(m, { where: 'scheduled', at: now, skipped: m.claims, pending: false, error: undefined, ranAt: undefined, why: undefined });
    }
    return [moved.length, this.size()[2]!, now];
  }

  purgeDead(now: number, ids: string[] | null, limit: number): number[] {
    const gone = this.deadBatch(ids, limit, now);
    gone.forEach((k) => this.messages.delete(k));
    return [gone.length, this.size()[2]!, now];
  }

  size(): number[] {
    const count = (where: Where) => [...this.messages.values()].filter((m) => m.where === where).length;
    return [count('scheduled'), count('inFlight'), count('dead')];
  }

  /** size.lua's reply when asked for the messages overdue by `afterMs` at `now`. */
  sizeWithOverdue(now: number, afterMs: number): number[] {
    const overdue = [...this.messages.values()].filter((m) => m.where === 'scheduled' && m.at < now - afterMs).length;
    return [...this.size(), overdue];
  }
}

/** A runAt `at` ms from now (may be past), or a delay: the two forms the scripts take. */
type When = { at: number } | { delayMs: number };

/** What a death trims: fail.lua's ARGV[6..8]. */
interface Trim {
  retentionMs: number;
  maxDead: number;
  batch: number;
}

/** An id, and the attempt an ack or renewal names (null: its latest delivery, when it has one). */
type Held = { id: number; attempt: number | null };

type Op =
  | { kind: 'enqueue'; id: number; when: When; traced: boolean }
  /** admitting: for a rate-limited consumer, whose claimed messages await admission */
  | { kind: 'claim'; limit: number; visibilityMs: number; admitting: boolean; global: number | null }
  /** each held message charged to rate key k0 or k1 (the key index), `limit` starts per window
   * (when `rated`), and taking a slot of concurrency key s0 or s1 (`slot`), `cap` each (when > 0) */
  | { kind: 'admit'; held: (Held & { key: number; slot: number })[]; rated: boolean; limit: number; cap: number }
  /** the handler of a held message with a slot of s0 or s1 ended */
  | { kind: 'release'; held: Held; slot: number }
  | { kind: 'ack'; held: Held[] }
  | { kind: 'renew'; held: Held[]; visibilityMs: number }
  /** id null: one in flight (when there is one) as its latest attempt, so deaths are common;
   * attempt null: the latest */
  | { kind: 'fail'; id: number | null; backoffMs: number; attempt: number | null; trim: Trim }
  | { kind: 'cancel'; id: number }
  | { kind: 'reschedule'; id: number; when: When }
  | { kind: 'advance'; ms: number }
  /** after: a cursor `ms` from now (may be past) and an id, or null for the first page */
  | { kind: 'dead'; after: { ms: number; id: number } | null; limit: number }
  /** ids null: the oldest `limit` that died by now */
  | { kind: 'retryDead'; ids: number[] | null; limit: number }
  | { kind: 'purgeDead'; ids: number[] | null; limit: number };

/** Admissions count in one fixed window: the run's clock (2e12 plus at most minutes) never
 * leaves it, and the counters' real-time expiry (a window) never comes during a run. */
const RATE_WINDOW_MS = 1_000_000_000;
const RATE_KIND = `dqr.fw4.${RATE_WINDOW_MS}`;
/** How long a message waiting for a slot stays back (admit.lua's parkMs): long runs see waits
 * run out, and the waiting sets' real-time expiry (as long) never comes during a run. */
const PARK_MS = 600_000;

// ids whose bytewise order is not their length order, to pin down how ties are broken
const IDS = ['a', 'b', 'c', 'aa', 'ab', 'b1', 'm10', 'm9'];
const id = fc.integer({ min: 0, max: IDS.length - 1 });
const heldList = fc.array(fc.record({ id, attempt: fc.option(fc.integer({ min: 1, max: 4 })) }), { minLength: 1, maxLength: 3 });
const when: fc.Arbitrary<When> = fc.oneof(
  // a few fixed offsets so equal runAts (ties) are common
  fc.record({ at: fc.oneof(fc.constantFrom(0, 20, 100), fc.integer({ min: -50, max: 300 })) }),
  fc.record({ delayMs: fc.oneof(fc.constantFrom(0, 20, 100), fc.integer({ min: 0, max: 300 })) }),
);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('enqueue' as const), id, when, traced: fc.boolean() }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('claim' as const),
      limit: fc.integer({ min: 1, max: 5 }),
      visibilityMs: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1_000, max: 30_000 })),
      admitting: fc.boolean(),
      global: fc.option(fc.integer({ min: 1, max: 3 })),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('admit' as const),
      held: fc.array(
        fc.record({
          id,
          attempt: fc.option(fc.integer({ min: 1, max: 4 }), { freq: 4 }),
          key: fc.integer({ min: 0, max: 1 }),
          slot: fc.integer({ min: 0, max: 1 }),
        }),
        { minLength: 1, maxLength: 3 },
      ),
      rated: fc.boolean(),
      limit: fc.integer({ min: 1, max: 3 }),
      cap: fc.constantFrom(0, 1, 2),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      held: fc.record({ id, attempt: fc.option(fc.integer({ min: 1, max: 4 }), { freq: 4 }) }),
      slot: fc.integer({ min: 0, max: 1 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('ack' as const), held: heldList }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('renew' as const),
      held: heldList,
      visibilityMs: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1_000, max: 30_000 })),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('fail' as const),
      id: fc.option(id, { freq: 2 }),
      // deaths often, so the dead set fills and is trimmed
      backoffMs: fc.oneof({ weight: 3, arbitrary: fc.constant(-1) }, fc.constant(0), fc.integer({ min: 0, max: 300 })),
      attempt: fc.option(fc.integer({ min: 1, max: 4 })),
      trim: fc.record({
        // steps of 20 and 100 ms are common (see `advance`): so are deaths exactly at the cutoff
        retentionMs: fc.oneof(fc.constantFrom(20, 100, 120), fc.integer({ min: 1, max: 500 }), fc.constant(7 * 24 * 3_600_000)),
        maxDead: fc.integer({ min: 0, max: 4 }),
        batch: fc.integer({ min: 1, max: 3 }),
      }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const), id }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('reschedule' as const), id, when }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(fc.constantFrom(0, 20, 100), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 400 }), fc.integer({ min: 0, max: 5_000 })),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('dead' as const),
      // cursors at the times deaths happen (steps of 0, 20, 100 ms are common), so ties are too
      after: fc.option(fc.record({ ms: fc.oneof(fc.constantFrom(0, -20, -100), fc.integer({ min: -600, max: 0 })), id })),
      limit: fc.integer({ min: 1, max: 4 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constantFrom('retryDead' as const, 'purgeDead' as const),
      ids: fc.option(fc.uniqueArray(id, { minLength: 1, maxLength: 3 })),
      limit: fc.integer({ min: 1, max: 3 }),
    }),
  },
);

describe('DelayQueue scripts agree with a state-machine model', () => {
  const ctx = withLimiterApp();
  let run = 0;

  it('on random operation sequences', async () => {
    const connection = ctx.app.moduleRef.get(RedisConnection);
    const service = ctx.app.moduleRef.get(DelayQueueService);
    // the service's own (private) key and wake-up helpers, so the keys, channel and publish
    // command are exactly what it passes (PUBLISH standalone, SPUBLISH on a cluster)
    const wakeUps = service['wakeUps'];
    const publish = await wakeUps.publishCommand();

    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 150, size: 'max' }), async (ops) => {
        const queue = `mq${(run += 1)}`;
        // the service's keys, in the order the scripts take them
        const { scheduled, inFlight, dead, data } = service['keys'](queue);
        const keys = [scheduled, inFlight, dead, data];
        const channel = wakeUps.channel(queue);
        const call = (script: ScriptName, args: (string | number)[]) => connection.scripts.run(script, keys, args);
        // only the explicit `now` counts: nothing in a queue expires
        let now = 2_000_000_000_000;
        const model = new QueueModel();
        const runAt = (w: When) => ('at' in w ? now + w.at : now + w.delayMs);
        const timeArgs = (w: When) => ('at' in w ? [now + w.at, 0] : ['', w.delayMs]);
        // the attempt named: as given (maybe stale), or the latest delivery (maybe none yet: 1)
        const attemptOf = (target: string, given: number | null) => given ?? Math.max(1, model.messages.get(target)?.claims ?? 1);
        const rateKeys = ['k0', 'k1'].map(
          (name) => [connection.keys.build(RATE_KIND, queue, name), connection.keys.build(`p${RATE_KIND}`, queue, name)] as const,
        );
        const slotKeys = ['s0', 's1'].map((name) => [
          connection.keys.build('dqc', queue, name),
          connection.keys.build('dqcw', queue, name),
          connection.keys.build('dqch', queue, name),
        ]);
        const pairs = (held: Held[]) => held.map(({ id: i, attempt }): [string, number] => [IDS[i]!, attemptOf(IDS[i]!, attempt)]);

        for (const [step, o] of ops.entries()) {
          if (o.kind === 'advance') {
            now += o.ms;
          } else if (o.kind === 'enqueue') {
            const payload = JSON.stringify({ step });
            const context = o.traced ? `00-${String(step).padStart(32, '0')}-${'1'.repeat(16)}-01` : '';
            const reply = await call('queueEnqueue', [now, IDS[o.id]!, payload, ...timeArgs(o.when), channel, publish, '', context]);
            expect(reply).toEqual(model.enqueue(IDS[o.id]!, payload, runAt(o.when), context));
          } else if (o.kind === 'claim') {
            const reply = await call('queueClaim', [now, o.limit, o.visibilityMs, '', '', o.global ?? '', o.admitting ? 1 : '', channel, publish]);
            expect(reply).toEqual(model.claim(now, o.limit, o.visibilityMs, o.admitting, o.global, `${publish} ${channel}`));
          } else if (o.kind === 'admit') {
            const held = o.held.map(({ id: i, attempt, key, slot }): [string, number, string, string, string, string] => [
              IDS[i]!,
              attemptOf(IDS[i]!, attempt),
              `k${key}`,
              `s${slot}`,
              rateKeys[key]![0],
              slotKeys[slot]![0]!,
            ]);
            const flows = o.held.flatMap(({ key, slot }) => [...rateKeys[key]!, ...slotKeys[slot]!]);
            const reply = await connection.scripts.run(
              'queueAdmit',
              [...keys, ...flows],
              [now, o.rated ? 'fw' : '-', o.limit, RATE_WINDOW_MS, '0', o.cap, PARK_MS, ...held.flatMap(([i, t]) => [i, t])],
            );
            expect(reply).toEqual(model.admit(now, o.rated, o.limit, RATE_WINDOW_MS, o.cap, held));
          } else if (o.kind === 'release') {
            const target = IDS[o.held.id]!;
            const token = attemptOf(target, o.held.attempt);
            const [slots, waiting] = slotKeys[o.slot]!;
            const reply = await connection.scripts.run('queueSlotRelease', [scheduled, slots!, waiting!], [now, target, token]);
            expect(reply).toBe(model.release(now, target, token, `s${o.slot}`));
          } else if (o.kind === 'ack') {
            const held = pairs(o.held);
            expect(await call('queueAck', held.flat())).toBe(model.ack(held));
          } else if (o.kind === 'renew') {
            const held = pairs(o.held);
            expect(await call('queueRenew', [now, o.visibilityMs, ...held.flat()])).toEqual(model.renew(now, o.visibilityMs, held));
          } else if (o.kind === 'fail') {
            const inFlight = [...model.messages].find(([, m]) => m.where === 'inFlight')?.[0];
            const target = o.id === null ? (inFlight ?? IDS[0]!) : IDS[o.id]!;
            const attempt = attemptOf(target, o.id === null ? null : o.attempt);
            const error = `Error: step ${step}`;
            const { retentionMs, maxDead, batch } = o.trim;
            const reply = await call('queueFail', [now, target, o.backoffMs, error, attempt, retentionMs, maxDead, batch]);
            expect(reply).toBe(model.fail(now, target, o.backoffMs, error, attempt, o.trim));
          } else if (o.kind === 'dead') {
            const after: [number, string] | null = o.after && [now + o.after.ms, IDS[o.after.id]!];
            const reply = await call('queuePage', after ? ['d', ...after, o.limit] : ['d', '', '', o.limit]);
            expect(reply).toEqual(model.deadPage(after, o.limit));
          } else if (o.kind === 'retryDead') {
            const ids = o.ids?.map((i) => IDS[i]!) ?? [];
            expect(await call('queueRetryDead', [now, channel, publish, o.limit, '', ...ids])).toEqual(model.retryDead(now, o.ids && ids, o.limit));
          } else if (o.kind === 'purgeDead') {
            const ids = o.ids?.map((i) => IDS[i]!) ?? [];
            expect(await call('queuePurgeDead', [now, o.limit, '', ...ids])).toEqual(model.purgeDead(now, o.ids && ids, o.limit));
          } else if (o.kind === 'cancel') {
            expect(await call('queueCancel', [IDS[o.id]!])).toBe(model.cancel(IDS[o.id]!));
          } else {
            const reply = await call('queueReschedule', [now, IDS[o.id]!, ...timeArgs(o.when), channel, publish]);
            expect(reply).toBe(model.reschedule(IDS[o.id]!, runAt(o.when)));
          }
          // overdue by 0 ms: everything due before now and not claimed (claim takes what is due at now)
          expect(await call('queueSize', [now, 0])).toEqual(model.sizeWithOverdue(now, 0));
          expect(await call('queueSize', [now, 1000])).toEqual(model.sizeWithOverdue(now, 1000));
          expect(await connection.client.hget(keys[3]!, 'w')).toBe(model.waiting);
        }

        // nothing left over: the sets' scores and every data field ('p:', 'a:', 'e:', 'd:', 'u:',
        // 'r:', 'y:', 'c:')
        const client = connection.client;
        const scores = async (key: string) => {
          const flat = await client.zrange(key, '0', '-1', 'WITHSCORES');
          return Object.fromEntries(flat.flatMap((v, i) => (i % 2 === 0 ? [[v, Number(flat[i + 1])]] : [])));
        };
        const expected = (where: Where) => Object.fromEntries([...model.messages].filter(([, m]) => m.where === where).map(([k, m]) => [k, m.at]));
        expect(await scores(keys[0]!)).toEqual(expected('scheduled'));
        expect(await scores(keys[1]!)).toEqual(expected('inFlight'));
        expect(await scores(keys[2]!)).toEqual(expected('dead'));
        const fields: Record<string, string> = {};
        for (const [k, m] of model.messages) {
          fields[`p:${k}`] = m.payload;
          if (m.claims > 0) fields[`a:${k}`] = String(m.claims);
          if (m.skipped > 0) fields[`d:${k}`] = String(m.skipped);
          if (m.pending) fields[`u:${k}`] = String(m.claims);
          if (m.error !== undefined) fields[`e:${k}`] = m.error;
          if (m.ranAt !== undefined) fields[`r:${k}`] = String(m.ranAt);
          if (m.why !== undefined) fields[`y:${k}`] = m.why;
          if (m.context !== '') fields[`c:${k}`] = m.context;
        }
        // each concurrency key's slots and waiting messages
        for (const [i, [slots, waiting]] of slotKeys.entries()) {
          expect(await client.hgetall(slots!)).toEqual(Object.fromEntries([...(model.slots.get(`s${i}`) ?? [])].map(([k, t]) => [k, String(t)])));
          expect(await scores(waiting!)).toEqual(Object.fromEntries(model.waitingFor.get(`s${i}`) ?? []));
        }
        if (model.waiting !== null) fields['w'] = model.waiting;
        if (model.fences > 0) fields['f'] = String(model.fences);
        expect(await client.hgetall(keys[3]!)).toEqual(fields);
      }),
      { numRuns: 50 },
    );
  });
});
