import { Cron } from 'croner';

/** When a recurring schedule ticks: a cron in a time zone, or every `everyMs` from `startAt` (the
 * epoch when omitted, so schedules of one interval tick together), within [startAt, endAt]. */
export interface TickRule {
  cron?: string;
  tz?: string;
  everyMs?: number;
  startAt?: number;
  endAt?: number;
}

/** Croner's parse of a pattern in a zone, kept: a schedule's next tick is asked for at every tick. */
const parsed = new Map<string, Cron>();
const CACHED_PATTERNS = 1000;

/** The pattern parsed (croner throws on a bad one); `paused`: it never runs anything itself. */
export function cronOf(pattern: string, tz: string): Cron {
  const key = `${tz} ${pattern}`;
  let cron = parsed.get(key);
  if (!cron) {
    // domAndDow false (croner's default, said here): day of month and day of week match either,
    // as Vixie cron reads them
    cron = new Cron(pattern, { timezone: tz, paused: true, domAndDow: false });
    if (parsed.size >= CACHED_PATTERNS) parsed.delete(parsed.keys().next().value!);
    parsed.set(key, cron);
  }
  return cron;
}

/** The rule's first tick strictly after `after` (ms), or null when it has none (past `endAt`). A
 * cron follows its zone's wall clock across DST as croner reads it: a time the clock skips runs
 * when the clock jumps (02:30 on a spring-forward night runs at 03:00), and a time it repeats
 * runs once, at its first occurrence; patterns that match every hour keep to real time. */
export function nextTick(rule: TickRule, after: number): number | null {
  const from = rule.startAt === undefined ? after : Math.max(after, rule.startAt - 1);
  let tick: number | null;
  if (rule.everyMs !== undefined) {
    const anchor = rule.startAt ?? 0;
    tick = from < anchor ? anchor : anchor + (Math.floor((from - anchor) / rule.everyMs) + 1) * rule.everyMs;
  } else {
    tick =
      cronOf(rule.cron!, rule.tz ?? 'UTC')
        .nextRun(new Date(from))
        ?.getTime() ?? null;
  }
  return tick === null || (rule.endAt !== undefined && tick > rule.endAt) ? null : tick;
}

/** The rule's latest tick at or before `at`, given `from`, a tick at or before it. */
export function latestTick(rule: TickRule, at: number, from: number): number {
  if (rule.endAt !== undefined) at = Math.min(at, rule.endAt);
  let tick: number | undefined;
  if (rule.everyMs !== undefined) {
    tick = from + Math.floor((at - from) / rule.everyMs) * rule.everyMs;
  } else {
    tick = cronOf(rule.cron!, rule.tz ?? 'UTC')
      .previousRuns(1, new Date(at + 1))[0]
      ?.getTime();
  }
  return tick === undefined || tick < from ? from : tick;
}
