// Invariant checks over soak-run logs. Pure: the soak runner gathers the logs, these only judge them.
// Every timestamp is an interval, not an instant, because the app only knows a decision happened
// between sending a request and reading its reply; a check flags only what certainly happened, so
// a violation here is a real bug, never scheduling noise.

/** A grant seen by the app: the decision happened at some instant in [start, end] (ms, epoch clock shared with Redis). */
export interface Grant {
  key: string;
  start: number;
  end: number;
}
export interface Violation {
  invariant: string;
  detail: string;
}

// A broken limiter under a 200k-grant soak would fail thousands of times over; the first few
// details say what went wrong, the count says how badly.
const MAX_DETAILS = 20;

class Violations {
  readonly list: Violation[] = [];
  private total = 0;

  constructor(private readonly invariant: string) {}

  add(detail: string): void {
    this.total += 1;
    if (this.total <= MAX_DETAILS) this.list.push({ invariant: this.invariant, detail });
  }

  done(): Violation[] {
    if (this.total > MAX_DETAILS) {
      this.list.push({ invariant: this.invariant, detail: `${this.total} violations in all, ${this.total - MAX_DETAILS} not listed` });
    }
    return this.list;
  }
}

function byKey<T extends { key: string }>(grants: T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const g of grants) {
    const group = groups.get(g.key);
    if (group) group.push(g);
    else groups.set(g.key, [g]);
  }
  return groups;
}

/** First index in `sorted` (ascending by `value`) whose value is >= x. */
function lowerBound<T>(sorted: T[], x: number, value: (item: T) => number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (value(sorted[mid]!) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Per aligned window index, the grants (of one key) certainly inside it. */
export function fixedWindowCounts(grants: Grant[], windowMs: number): Map<number, number> {
  const counts = new Map<number, number>();
  for (const g of grants) {
    // A grant whose bracket touches a boundary may have been counted by either window.
    const w = Math.floor((g.start - 1) / windowMs);
    if (Math.floor((g.end + 1) / windowMs) === w) counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  return counts;
}

/** Fixed window of `limit` per aligned window [k*windowMs, (k+1)*windowMs) (Redis server time). Counts, per key and window, only grants whose whole [start-1, end+1] lies inside one window (no false alarms from clock granularity); more than `limit` such grants in one window is a violation. */
export function checkFixedWindow(grants: Grant[], limit: number, windowMs: number): Violation[] {
  const out = new Violations('fixed-window');
  for (const [key, group] of byKey(grants)) {
    const windows = [...fixedWindowCounts(group, windowMs)].filter(([, n]) => n > limit).sort(([a], [b]) => a - b);
    for (const [w, n] of windows) {
      out.add(`key ${key}: ${n} grants certainly inside window [${w * windowMs}, ${(w + 1) * windowMs}), limit ${limit}`);
    }
  }
  return out.done();
}

/** Sliding window: at most `limit` grants in any span shorter than windowMs. A set of grants is certainly inside such a span when max(end) - min(start) < windowMs - 2 (2 ms slack for clock granularity). Violation if more than `limit` grants, per key, certainly fall in one such span. */
export function checkSlidingWindow(grants: Grant[], limit: number, windowMs: number): Violation[] {
  const out = new Violations('sliding-window');
  const span = windowMs - 2;
  for (const [key, group] of byKey(grants)) {
    const sorted = [...group].sort((a, b) => a.start - b.start);
    // The largest certain set whose earliest start is s holds every grant with start >= s and
    // end < s + span, so trying each distinct start as s finds any violation.
    let reportedUntil = -Infinity;
    for (let i = 0; i < sorted.length; i++) {
      const s = sorted[i]!.start;
      if (i > 0 && sorted[i - 1]!.start === s) continue; // same anchor as the previous one
      if (s < reportedUntil) continue; // one report per overloaded span, not one per grant in it
      let count = 0;
      let maxEnd = s;
      for (let j = i; j < sorted.length && sorted[j]!.start < s + span; j++) {
        const end = sorted[j]!.end;
        if (end < s + span) {
          count += 1;
          if (end > maxEnd) maxEnd = end;
        }
      }
      if (count > limit) {
        out.add(`key ${key}: ${count} grants certainly within [${s}, ${maxEnd}] (${maxEnd - s} ms < ${windowMs} ms window), limit ${limit}`);
        reportedUntil = s + span;
      }
    }
  }
  return out.done();
}

/** Token bucket / funnel: starts full with `capacity` tokens, refilled at capacity / refillMs per ms, so over any interval [a, b] at most capacity + ceil(capacity * (b - a + 2) / refillMs) grants (2 ms slack). For each key and each pair of grants i (earliest start) and j, the grants whose [start, end] lies within [start_i, end_j] certainly happened inside it; more than the bound is a violation. Only spans up to `horizonMs` (default 2 * refillMs) need checking. */
export function checkTokenBucket(grants: Grant[], capacity: number, refillMs: number, horizonMs = 2 * refillMs): Violation[] {
  const out = new Violations('token-bucket');
  const bound = (ms: number) => capacity + Math.ceil((capacity * (ms + 2)) / refillMs);
  for (const [key, group] of byKey(grants)) {
    const byStart = [...group].sort((a, b) => a.start - b.start);
    const byEnd = [...group].sort((a, b) => a.end - b.end);
    let reportedUntil = -Infinity;
    for (let i = 0; i < byStart.length; i++) {
      const a = byStart[i]!.start;
      if (i > 0 && byStart[i - 1]!.start === a) continue;
      if (a <= reportedUntil) continue;
      // Walking ends upward from a, the grants inside [a, end] only grow; the bound grows too,
      // so each end must be tried, but only within the horizon.
      let count = 0;
      for (let j = lowerBound(byEnd, a, (g) => g.end); j < byEnd.length; j++) {
        const g = byEnd[j]!;
        if (g.end - a > horizonMs) break;
        if (g.start >= a) count += 1;
        const next = byEnd[j + 1];
        if (next && next.end === g.end) continue; // count every grant sharing this end first
        if (count > bound(g.end - a)) {
          out.add(
            `key ${key}: ${count} grants certainly within [${a}, ${g.end}] (${g.end - a} ms), bound ${bound(g.end - a)} for capacity ${capacity} per ${refillMs} ms`,
          );
          reportedUntil = g.end;
          break;
        }
      }
    }
  }
  return out.done();
}

/** A MaxPending slot: reserved by a request in [reservedStart, reservedEnd]; expires ttlMs after its reservation (server time, so certainly not before reservedStart + ttlMs); releaseStart, when a release (delete) was attempted, is when that request began. The slot is certainly held over [reservedEnd, min(reservedStart + ttlMs, releaseStart ?? Infinity)). */
export interface Slot {
  owner: string;
  reservedStart: number;
  reservedEnd: number;
  ttlMs: number;
  releaseStart?: number;
}
/** Violation if at any instant more than `max` slots of one owner are certainly held (sweep line over the certain intervals; an interval that is empty, end <= start, counts for nothing). Report the owner, the instant and the count. */
export function checkMaxPending(slots: Slot[], max: number): Violation[] {
  const out = new Violations('max-pending');
  const byOwner = new Map<string, Array<[number, number]>>();
  for (const s of slots) {
    const start = s.reservedEnd;
    const end = Math.min(s.reservedStart + s.ttlMs, s.releaseStart ?? Infinity);
    // A release begun before the reservation returned may have run first: nothing is certain.
    if (end <= start) continue;
    let events = byOwner.get(s.owner);
    if (!events) byOwner.set(s.owner, (events = []));
    events.push([start, 1], [end, -1]);
  }
  for (const [owner, events] of byOwner) {
    // Intervals are half-open: at one instant, ends apply before starts.
    events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let held = 0;
    let over: { at: number; count: number; peak: number } | undefined;
    for (let i = 0; i < events.length;) {
      const t = events[i]![0];
      for (; i < events.length && events[i]![0] === t; i++) held += events[i]![1];
      if (held > max) {
        if (!over) over = { at: t, count: held, peak: held };
        else over.peak = Math.max(over.peak, held);
      } else if (over) {
        // One report per stretch over the limit, however many slots come and go within it.
        out.add(`owner ${owner}: ${over.count} slots certainly held at ${over.at} (peak ${over.peak} until ${t}), max ${max}`);
        over = undefined;
      }
    }
    if (over) out.add(`owner ${owner}: ${over.count} slots certainly held at ${over.at} (peak ${over.peak}, never released), max ${max}`);
  }
  return out.done();
}

/** Delay queue delivery: `enqueued` = ids whose enqueue call succeeded; `uncertain` = ids whose enqueue call failed (they may or may not be in the queue); `handled` = one entry per completed handler run, with the consumer process that ran it; `crashed` = consumer processes that were killed with SIGKILL. Violations: an enqueued id never handled ("lost"); an id handled that was never enqueued nor uncertain ("unknown"); an id handled more than once unless at least one of its handling records came from a crashed process ("duplicate"). Also return figures. */
export interface Handled {
  id: string;
  consumer: string;
}
/** Figures count ids, not handler runs: `handled` is the number of distinct ids handled at least once. */
export function checkDelivery(
  enqueued: Iterable<string>,
  uncertain: Iterable<string>,
  handled: Handled[],
  crashed: Iterable<string>,
  /** Ids whose acknowledgement a consumer gave up on (redis-limit.queue.unacknowledged: an outage
   * outlasted the lease): delivered again by design, once per time it was given up. */
  unacknowledged: Iterable<string> = [],
): { violations: Violation[]; handled: number; lost: number; duplicatesAfterCrash: number; duplicatesUnacknowledged: number; duplicatesWithoutCrash: number } {
  const lostOut = new Violations('lost');
  const unknownOut = new Violations('unknown');
  const duplicateOut = new Violations('duplicate');
  const enqueuedSet = new Set(enqueued);
  const uncertainSet = new Set(uncertain);
  const crashedSet = new Set(crashed);
  const givenUp = new Map<string, number>();
  for (const id of unacknowledged) givenUp.set(id, (givenUp.get(id) ?? 0) + 1);
  const runs = new Map<string, string[]>();
  for (const h of handled) {
    const consumers = runs.get(h.id);
    if (consumers) consumers.push(h.consumer);
    else runs.set(h.id, [h.consumer]);
  }
  let lost = 0;
  for (const id of enqueuedSet) {
    if (runs.has(id)) continue;
    lost += 1;
    lostOut.add(`id ${id} enqueued but never handled`);
  }
  let duplicatesAfterCrash = 0;
  let duplicatesUnacknowledged = 0;
  let duplicatesWithoutCrash = 0;
  for (const [id, consumers] of runs) {
    if (!enqueuedSet.has(id) && !uncertainSet.has(id)) unknownOut.add(`id ${id} handled but never enqueued`);
    if (consumers.length < 2) continue;
    // A consumer killed after its handler ran but before its ack: redelivery is at-least-once by design.
    if (consumers.some((c) => crashedSet.has(c))) {
      duplicatesAfterCrash += 1;
    } else if (consumers.length <= 1 + (givenUp.get(id) ?? 0)) {
      duplicatesUnacknowledged += 1;
    } else {
      duplicatesWithoutCrash += 1;
      duplicateOut.add(`id ${id} handled ${consumers.length} times (by ${consumers.join(', ')}) with no crash to explain it`);
    }
  }
  return {
    violations: [...lostOut.done(), ...unknownOut.done(), ...duplicateOut.done()],
    handled: runs.size,
    lost,
    duplicatesAfterCrash,
    duplicatesUnacknowledged,
    duplicatesWithoutCrash,
  };
}

/** Outage answers: every request answered by failMode (503 for 'closed', an unchecked pass for 'open') took at most boundMs, from arrival to response finish. */
export interface Answer {
  route: string;
  start: number;
  end: number;
  failMode: boolean;
}
export function checkOutageLatency(answers: Answer[], boundMs: number): { violations: Violation[]; failModeAnswers: number; maxMs: number; p99Ms: number } {
  const out = new Violations('outage-latency');
  const durations: number[] = [];
  for (const a of answers) {
    // Answers that reached Redis are not what the fail mode promises to bound.
    if (!a.failMode) continue;
    const ms = a.end - a.start;
    durations.push(ms);
    if (ms > boundMs) out.add(`${a.route}: fail-mode answer took ${ms} ms (from ${a.start}), bound ${boundMs} ms`);
  }
  durations.sort((a, b) => a - b);
  const n = durations.length;
  return {
    violations: out.done(),
    failModeAnswers: n,
    maxMs: n ? durations[n - 1]! : 0,
    p99Ms: n ? durations[Math.ceil(0.99 * n) - 1]! : 0, // nearest rank
  };
}

/** A /login grant (countIf counts failures only): `failed` answers stay charged; a success's grant
 * is given back, certainly by `refundedBy` when that is known (the refund's answer), else maybe never.
 * `by`: the process that answered it. */
export interface CountedGrant extends Grant {
  failed: boolean;
  refundedBy?: number;
  by?: string;
}
/** A /login refusal; `cached`: answered from `by`'s refusal cache, not by Redis. */
export interface CountRefusal extends Grant {
  cached?: boolean;
  by?: string;
}
/** A request whose charge is unknown: sent, but answered by failMode (503), so Redis may have run it
 * late (a paused server runs what it queued when it resumes) up to `until`. */
export interface Uncertain {
  key: string;
  start: number;
  until: number;
}
/**
 * countIf on a sliding window of `limit` per windowMs, counting failures only. Two checks, per key:
 * - 'count-if': no span shorter than the window certainly holds more than `limit` granted failures
 *   (checkSlidingWindow over the failed grants: the successes' grants come back, never theirs);
 * - 'count-if-refusal': a refusal [start, end] is a violation when, at every instant it may have
 *   been decided, certainly fewer than `limit` permits were charged: counting every grant that may
 *   lie in the window then and may still be charged (a failure; a success whose refund is not
 *   certainly done by `start`) and every uncertain request that may have been run in it. A refusal
 *   from the refusal cache repeats one Redis made earlier; a refund forgets it in its own process at
 *   once, in another when the pub/sub message arrives: such a refund counts as seen `invalidationMs`
 *   after it was done.
 */
export function checkCountIf(
  grants: CountedGrant[],
  refusals: CountRefusal[],
  uncertain: Uncertain[],
  limit: number,
  windowMs: number,
  invalidationMs = 0,
): Violation[] {
  const failed = checkSlidingWindow(
    grants.filter((g) => g.failed),
    limit,
    windowMs,
  ).map((v) => ({ ...v, invariant: 'count-if' }));
  const out = new Violations('count-if-refusal');
  const grantsBy = byKey(grants);
  const uncertainBy = byKey(uncertain);
  for (const r of refusals) {
    // an entry at τ counts for a decision at d when d - windowMs < τ <= d, for some d in [start, end]
    const mayCount = (first: number, last: number) => first <= r.end + 2 && last > r.start - windowMs - 2;
    let charged = 0;
    for (const g of grantsBy.get(r.key) ?? []) {
      if (!mayCount(g.start, g.end)) continue;
      if (g.failed || g.refundedBy === undefined) charged += 1;
      else if (g.refundedBy + (r.cached === true && g.by !== r.by ? invalidationMs : 0) >= r.start) charged += 1;
    }
    for (const u of uncertainBy.get(r.key) ?? []) if (mayCount(u.start, u.until)) charged += 1;
    if (charged < limit) out.add(`key ${r.key}: refused in [${r.start}, ${r.end}] with at most ${charged} permits charged in its window, limit ${limit}`);
  }
  return [...failed, ...out.done()];
}

/**
 * blockMs: a refusal [start, end] that set a lockout in Redis (Redis's clock, at or after `start`)
 * refuses its key until at least start + blockMs. Violation: a grant of that key certainly decided
 * after the refusal answered and certainly before start + blockMs - 2 (the 2 ms slack of the
 * other checks, for clock granularity).
 */
export function checkLockout(grants: Grant[], lockouts: Grant[], blockMs: number): Violation[] {
  const out = new Violations('block-ms');
  const grantsBy = new Map([...byKey(grants)].map(([key, group]) => [key, [...group].sort((a, b) => a.start - b.start)]));
  for (const r of lockouts) {
    const group = grantsBy.get(r.key) ?? [];
    const until = r.start + blockMs - 2;
    for (let i = lowerBound(group, r.end, (g) => g.start); i < group.length && group[i]!.start < until; i++) {
      const g = group[i]!;
      if (g.start > r.end && g.end < until) {
        out.add(
          `key ${r.key}: granted in [${g.start}, ${g.end}], ${(g.end - r.start).toFixed(0)} ms after a refusal in [${r.start}, ${r.end}] that locked it out for ${blockMs} ms`,
        );
      }
    }
  }
  return out.done();
}

/**
 * failMode 'local' with localDivisor on a fixed window of `limit`: each process grants at most
 * ceil(limit / divisor) per aligned window on its own clock, beside what Redis grants (checked
 * with checkFixedWindow over Redis's grants). `byProcess`: each process's local grants.
 */
export function checkLocalGrants(byProcess: Record<string, Grant[]>, limit: number, divisor: number, windowMs: number): Violation[] {
  const local = Math.max(1, Math.ceil(limit / divisor));
  return Object.entries(byProcess).flatMap(([name, grants]) =>
    checkFixedWindow(grants, local, windowMs).map((v) => ({ invariant: 'local-fail-mode', detail: `${name}: ${v.detail}` })),
  );
}

/** The refusal cache answered in every process: `hits` per process (RedisLimitEvents counters). */
export function checkCacheHits(hits: Record<string, number>): Violation[] {
  return Object.entries(hits)
    .filter(([, n]) => !(n > 0))
    .map(([name]) => ({ invariant: 'refusal-cache', detail: `${name}: no refusal came from the refusal cache` }));
}

/** rateLimit.adaptive: each adaptive limit a RetryLater reported lies in [1, `limit`], and at least
 * one was reported (else the soak never exercised it). */
export function checkAdaptiveLimits(reported: number[], limit: number): Violation[] {
  const out: Violation[] = [...new Set(reported.filter((n) => !(Number.isInteger(n) && n >= 1 && n <= limit)))].map((n) => ({
    invariant: 'adaptive-limit',
    detail: `an adaptive limit of ${n}, outside [1, ${limit}]`,
  }));
  if (reported.length === 0) out.push({ invariant: 'coverage', detail: 'no RetryLater with pauseKey reported an adaptive limit' });
  return out;
}

/** A handler run of a consumer with concurrencyPerKey: its key, and when it started and ended (ms). */
export interface Run {
  key: string;
  start: number;
  end: number;
}

/** concurrencyPerKey: no key ever has more than `limit` runs at once (a run that ends in the ms
 * another starts does not overlap it). Returns the violations and the most at once seen. */
export function checkConcurrency(runs: Run[], limit: number): { violations: Violation[]; most: number } {
  const violations: Violation[] = [];
  let most = 0;
  const byKey = new Map<string, Run[]>();
  for (const run of runs) byKey.set(run.key, [...(byKey.get(run.key) ?? []), run]);
  for (const [key, list] of byKey) {
    const edges = list.flatMap((r) => [
      { at: r.start, step: 1 },
      { at: r.end, step: -1 },
    ]);
    edges.sort((a, b) => a.at - b.at || a.step - b.step);
    let running = 0;
    let reported = false;
    for (const edge of edges) {
      running += edge.step;
      most = Math.max(most, running);
      if (running > limit && !reported) {
        reported = true;
        violations.push({ invariant: 'concurrency-per-key', detail: `${key}: ${running} handlers at once at ${edge.at}, limit ${limit}` });
      }
    }
  }
  return { violations, most };
}

/**
 * A recurring schedule's ticks that must each have run: every `everyMs` from `first` to `last`
 * (its first tick, and the last that ran), but those missed while no consumer ran (each missed
 * range [from, to) a consumer reported; the tick at `to` ran in their place). Checked with
 * checkDelivery: one missing is a skipped tick, one run that is not among them a tick replayed.
 */
export function expectedTicks(name: string, first: number, last: number, everyMs: number, missed: [number, number][]): string[] {
  const ids: string[] = [];
  for (let tick = first; tick <= last; tick += everyMs) {
    if (!missed.some(([from, to]) => tick >= from && tick < to)) ids.push(`${name}@${tick}`);
  }
  return ids;
}
