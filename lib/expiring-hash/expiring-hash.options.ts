import { assertTimerMs, describeValue, numberError } from '../validation.js';

/** `RedisLimitModuleOptions.expiringHash`: ExpiringHashService's expiry and sweep. */
export interface ExpiringHashOptions {
  /** 'native' uses the server's field expiry (HPEXPIRE: Redis >= 7.4, Valkey >= 9), 'index' the
   * library's own; 'auto' picks native when the server has HPEXPIRE (asked once with COMMAND INFO).
   * @default 'auto'
   * @throws TypeError `expiringHash.mode` when anything else. */
  mode?: 'auto' | 'native' | 'index';
  /** The least gap, ms, between two sweeps of one registry shard by this process (a sweep removes
   * expired fields nobody reads and delivers their notifications). The sweeper sleeps until the
   * earliest due field it knows of and is woken over pub/sub by an earlier write, so at rest it
   * costs about one call per 4.5 s. 0 turns this process's sweeper off (others still sweep and
   * notify). It starts on the process's first ExpiringHashService call.
   * @default 1000
   * @throws TypeError / RangeError `expiringHash.sweepIntervalMs` when not an integer from 0 to
   * 2,147,483,647. */
  sweepIntervalMs?: number;
  /** The sweep registry is split over this many keys (cluster slots). Every process must use the
   * same number.
   * @default 16
   * @throws TypeError / RangeError `expiringHash.sweepShards` when not an integer from 1 to 16,384. */
  sweepShards?: number;
}

/** Injects ExpiringHashService's options, checked (the module provides them). */
export const EXPIRING_HASH_OPTIONS = Symbol('RedisLimitExpiringHashOptions');

export function resolveExpiringHashOptions(options: ExpiringHashOptions = {}): Required<ExpiringHashOptions> {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`RedisLimitModule: expiringHash must be an object, got ${String(options)}`);
  }
  const { mode = 'auto', sweepIntervalMs = 1000, sweepShards = 16 } = options;
  if (!['auto', 'native', 'index'].includes(mode)) {
    throw new TypeError(`RedisLimitModule: expiringHash.mode must be 'auto', 'native' or 'index', got ${describeValue(mode)}`);
  }
  assertTimerMs(sweepIntervalMs, 'an integer >= 0', 'RedisLimitModule: expiringHash.sweepIntervalMs');
  if (!Number.isSafeInteger(sweepShards) || sweepShards < 1 || sweepShards > 16384) {
    throw new (numberError(sweepShards))(`RedisLimitModule: expiringHash.sweepShards must be an integer from 1 to 16384, got ${sweepShards}`);
  }
  return { mode, sweepIntervalMs, sweepShards };
}
