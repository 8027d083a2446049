import type { RedisKeys } from '../redis/keys.js';

/** A queue's keys, named as its scripts take them (every delay-queue script takes all four). */
export interface QueueKeys {
  /** zset: id -> runAt ms */
  readonly scheduled: string;
  /** zset: id -> lease deadline ms */
  readonly inFlight: string;
  /** zset: id -> ms it died */
  readonly dead: string;
  /** hash: each message's fields (message-fields.lua) */
  readonly data: string;
}

export function queueKeys(keys: RedisKeys, queue: string): QueueKeys {
  return { scheduled: keys.build('dqs', queue), inFlight: keys.build('dqf', queue), dead: keys.build('dqd', queue), data: keys.build('dqm', queue) };
}

/** A queue's recurring schedules (recurring-set.lua), in its hash slot. */
export function schedulesKey(keys: RedisKeys, queue: string): string {
  return keys.build('dqrs', queue);
}
