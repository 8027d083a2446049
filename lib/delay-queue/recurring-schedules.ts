import type { ScriptAccess } from '../redis/redis-connection.js';
import { QueueReply } from '../redis/replies.js';
import type { ScheduleInfo } from './delay-queue.types.js';
import type { QueueKeys } from './queue-keys.js';
import type { StoredSpec } from './recurring.input.js';
import { nextTick } from './recurring-times.js';
import type { WakeUps } from './wake-ups.js';

/** Tries one schedule() gets when other calls keep replacing the same schedule meanwhile. */
const TRIES = 5;

type Keys = QueueKeys & { schedules: string };

/**
 * The operator's side of recurring schedules: create or replace one (its first tick computed
 * here from the spec and the server's clock, written only if nobody changed the schedule since it
 * was read), remove one, list them. The consumers advance them (RecurringTicks).
 */
export class RecurringSchedules {
  constructor(
    private readonly redis: ScriptAccess,
    private readonly wakeUps: WakeUps,
  ) {}

  async set(queue: string, keys: Keys, name: string, resolved: { spec: StoredSpec; json: string; payload: string }): Promise<number> {
    const { spec, json, payload } = resolved;
    for (let tries = 1; ; tries++) {
      const { now, schedules } = await this.redis.scripts.call('recurringList', { keys, args: { name } });
      const current = schedules[0];
      if (current?.spec === json) {
        // the same spec again (an app that schedules at every start): nothing changes
        if (current.nextRunAt !== null) return current.nextRunAt;
        throw finished(spec, current.runs);
      }
      const pending = current?.nextRunAt ?? null;
      // a pending tick already due runs as it is, and the new spec goes on after it: replacing a
      // schedule skips no tick that was due
      const first = nextTick(spec, pending !== null && pending <= now ? pending : now);
      if (first === null) throw new RangeError(`spec.endAt leaves no tick after now (${new Date(now).toISOString()}), got ${spec.endAt}`);
      const reply = await this.redis.scripts.call('recurringSet', {
        keys,
        args: {
          name,
          spec: json,
          payload,
          limit: spec.limit ?? '',
          first,
          expected: pending ?? '',
          wakeChannel: this.wakeUps.channel(queue),
          publish: await this.wakeUps.publishCommand(),
        },
      });
      if (reply !== QueueReply.CHANGED) return reply;
      if (tries === TRIES)
        throw new Error(`schedule ${JSON.stringify(name)} of queue ${JSON.stringify(queue)} kept changing under ${TRIES} tries to replace it`);
    }
  }

  async remove(keys: Keys, name: string): Promise<boolean> {
    return (await this.redis.scripts.call('recurringRemove', { keys, args: { name } })) === 1;
  }

  async list(queue: string, keys: Pick<Keys, 'schedules'>): Promise<ScheduleInfo[]> {
    const { schedules } = await this.redis.scripts.call('recurringList', { keys, args: {} });
    return schedules.map(({ name, spec, nextRunAt, runs }) => ({ queue, name, spec: JSON.parse(spec) as object, nextRunAt, runs }));
  }
}

/** The same spec again, once its runs or its time are over. */
function finished(spec: StoredSpec, runs: number): RangeError {
  if (spec.limit !== undefined && runs >= spec.limit) {
    return new RangeError(`spec.limit: the schedule has run ${runs} of ${spec.limit} times; unschedule it, or change the spec, to schedule it again`);
  }
  return new RangeError(`spec.endAt: the schedule has no tick left (it ended at ${spec.endAt}); unschedule it, or change the spec, to schedule it again`);
}
