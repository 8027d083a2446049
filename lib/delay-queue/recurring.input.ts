import { assertKnownOptions, describeValue, numberError } from '../validation.js';
import { assertName, MAX_NAME_BYTES, resolveTime, serializePayload } from './delay-queue.input.js';
import { cronOf, type TickRule } from './recurring-times.js';

/** A schedule's spec as stored and as schedules() shows it: its times in ms. */
export interface StoredSpec extends TickRule {
  payload: unknown;
  limit?: number;
}

const OPTIONS = ['cron', 'tz', 'everyMs', 'payload', 'startAt', 'endAt', 'limit'];
/** '@' and a tick's ms: what a tick's message id adds to the schedule's name. */
const TICK_SUFFIX_BYTES = 17;

/** schedule()'s arguments checked: the spec as stored, each tick's payload (JSON) and its limit. */
export function resolveSchedule(name: unknown, spec: unknown): { spec: StoredSpec; json: string; payload: string } {
  assertName(name, 'name');
  const bytes = Buffer.byteLength(name);
  if (bytes > MAX_NAME_BYTES - TICK_SUFFIX_BYTES) {
    throw new RangeError(`name must be at most ${MAX_NAME_BYTES - TICK_SUFFIX_BYTES} bytes (a tick's id adds '@<ms>'), got ${bytes}`);
  }
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new TypeError(`spec must be an object { cron, tz? } or { everyMs }, with payload?, startAt?, endAt?, limit?; got ${describeValue(spec)}`);
  }
  assertKnownOptions(spec, OPTIONS, 'spec');
  const { cron, tz, everyMs, payload, startAt, endAt, limit } = spec as Record<string, unknown>;
  if ((cron === undefined) === (everyMs === undefined)) throw new TypeError('spec must give exactly one of cron and everyMs');
  const stored: StoredSpec = { payload: payload ?? null };
  if (cron !== undefined) {
    stored.cron = resolveCron(cron);
    stored.tz = resolveZone(tz);
    try {
      cronOf(stored.cron, stored.tz);
    } catch (error) {
      throw new TypeError(`spec.cron is not a valid cron expression: ${(error as Error).message}; got ${describeValue(cron)}`);
    }
  } else {
    if (tz !== undefined) throw new TypeError('spec.tz goes with cron: everyMs counts real time');
    if (typeof everyMs !== 'number' || !Number.isSafeInteger(everyMs) || everyMs < 1) {
      throw new (numberError(everyMs))(`spec.everyMs must be a whole number of ms >= 1, got ${describeValue(everyMs)}`);
    }
    stored.everyMs = everyMs;
  }
  if (startAt !== undefined) stored.startAt = resolveTime(startAt, 'spec.startAt');
  if (endAt !== undefined) stored.endAt = resolveTime(endAt, 'spec.endAt');
  if (stored.startAt !== undefined && stored.endAt !== undefined && stored.endAt < stored.startAt) {
    throw new RangeError(`spec.endAt must not be before spec.startAt, got ${stored.endAt} < ${stored.startAt}`);
  }
  if (limit !== undefined) {
    if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
      throw new (numberError(limit))(`spec.limit must be a whole number of runs >= 1, got ${describeValue(limit)}`);
    }
    stored.limit = limit;
  }
  const json = serializePayload(stored.payload, 'spec.payload');
  return { spec: stored, json: JSON.stringify(stored), payload: json };
}

/** A stored spec read back (the scripts hand it over as text). */
export function parseStoredSpec(json: string): StoredSpec {
  return JSON.parse(json) as StoredSpec;
}

function resolveCron(cron: unknown): string {
  if (typeof cron !== 'string') throw new TypeError(`spec.cron must be a string of 5 or 6 fields, got ${describeValue(cron)}`);
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new TypeError(`spec.cron must have 5 fields (minute to weekday) or 6 (seconds first), got ${describeValue(cron)}`);
  }
  return fields.join(' ');
}

function resolveZone(tz: unknown): string {
  if (tz === undefined) return 'UTC';
  if (typeof tz !== 'string' || tz === '') throw new TypeError(`spec.tz must be an IANA time zone name, got ${describeValue(tz)}`);
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    throw new RangeError(`spec.tz must be an IANA time zone name (like 'America/New_York'), got ${describeValue(tz)}`);
  }
}
