import type { ScriptAccess } from '../redis/redis-connection.js';
import { QueueReply } from '../redis/replies.js';
import type { QueueKeys } from './queue-keys.js';
import { parseStoredSpec } from './recurring.input.js';
import { latestTick, nextTick, type TickRule } from './recurring-times.js';
import type { WakeCommand } from './wake-ups.js';

/** A tick first claimed later than this, with its next tick past too, was missed while nothing
 * ran (no consumer claimed it when due): the latest tick runs in its place, once, instead of every
 * missed one. A consumer that is only slow (a busy machine) claims well within it and skips
 * nothing; a tick claimed again (its consumer died before it advanced the schedule) was claimed
 * in time once, so the ticks after it run in turn. */
export const MISSED_AFTER_MS = 5000;
/** Rounds of "the spec changed, compute again" one claim's ticks get; the rest come back when
 * their leases run out. */
const ROUNDS = 3;

export interface RecurringTicksDeps {
  redis: ScriptAccess;
  keys: QueueKeys & { schedules: string };
  wakeUp: { channel: string; command: () => WakeCommand | Promise<WakeCommand> };
  /** A claimed tick was dropped for the latest: ticks from `from` up to `to` were missed. */
  missed: (schedule: string, from: number, to: number) => void;
}

/**
 * A consumer's side of recurring schedules: before a claimed tick's handler runs, its schedule is
 * advanced (recurring-advance.lua) with the next tick computed here from the schedule's spec,
 * which this keeps per schedule and version; Redis says when it is stale and hands the new one.
 */
export class RecurringTicks {
  private readonly specs = new Map<string, { version: number; rule: TickRule }>();

  constructor(private readonly deps: RecurringTicksDeps) {}

  /**
   * Advances the schedules of claimed ticks (`now`: the claim's server time); resolves the ids
   * whose handlers run. The others were dropped for a later tick, or their claims lost them, or
   * their specs kept changing: those come back when their leases run out.
   */
  async advance(now: number, ticks: readonly { id: string; token: number }[]): Promise<Set<string>> {
    const run = new Set<string>();
    const publish = await this.deps.wakeUp.command();
    let pending = ticks;
    for (let round = 0; round < ROUNDS && pending.length > 0; round++) {
      const rows = pending.map((tick) => this.row(tick, now));
      const { verdicts } = await this.deps.redis.scripts.call('recurringAdvance', {
        keys: this.deps.keys,
        args: { wakeChannel: this.deps.wakeUp.channel, publish, ticks: rows },
      });
      const stale: { id: string; token: number }[] = [];
      verdicts.forEach(({ verdict, version, spec }, i) => {
        const tick = pending[i]!;
        if (verdict === QueueReply.RUN) run.add(tick.id);
        else if (verdict === QueueReply.DROPPED) {
          const { name, tick: from } = scheduleOf(tick.id);
          this.deps.missed(name, from, Number(rows[i]!.latest));
        } else if (verdict === QueueReply.STALE) {
          this.specs.set(scheduleOf(tick.id).name, { version, rule: parseStoredSpec(spec) });
          stale.push(tick);
        }
      });
      pending = stale;
    }
    return run;
  }

  /** The advance script's row for a tick: its next tick and, if ticks were missed, the latest. */
  private row({ id, token }: { id: string; token: number }, now: number) {
    const { name, tick } = scheduleOf(id);
    const known = this.specs.get(name);
    if (!known) return { id, token, version: 0, next: '' as const, latest: '' as const };
    const next = nextTick(known.rule, tick);
    const missed = token === 1 && next !== null && next <= now && now - tick > MISSED_AFTER_MS;
    return { id, token, version: known.version, next: next ?? ('' as const), latest: missed ? latestTick(known.rule, now, next) : ('' as const) };
  }
}

/** A tick's message id, '<name>@<tick ms>', read back. */
export function scheduleOf(id: string): { name: string; tick: number } {
  const at = id.lastIndexOf('@');
  return { name: id.slice(0, at), tick: Number(id.slice(at + 1)) };
}
