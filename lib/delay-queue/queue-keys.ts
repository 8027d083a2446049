import type { RedisKeys } from '../redis/keys.js';

/** A queue's keys, in the order its scripts take them: schedule, in flight, dead, messages. */
export function queueKeys(keys: RedisKeys, queue: string): string[] {
  return [keys.build('dqs', queue), keys.build('dqf', queue), keys.build('dqd', queue), keys.build('dqm', queue)];
}
