import type { RedisLimitModuleExtras, RedisLimitModuleOptions } from './redis-limit.options.js';
import { describeValue } from './validation.js';

/** `RedisLimitModule.forTesting`'s options: forRoot's (but `redis`: there is no Redis), and
 * `limits`. */
export type RedisLimitTestingOptions = Omit<Partial<RedisLimitModuleOptions>, 'redis'> &
  RedisLimitModuleExtras & {
    /** 'enforce' (default): every limit counts as on Redis. 'off': every rate limit and funnel
     * grants, uncharged, and a consumer's `rateLimit` paces nothing (an app's own e2e tests meet
     * no 429 of ours); @MaxPending and @MaxConcurrent caps, which are the app's own rules, still
     * hold.
     * @default 'enforce' */
    limits?: 'enforce' | 'off';
  };

/** forTesting's own options, checked when it is called; the rest are forRoot's. */
export function splitTestingOptions(options: RedisLimitTestingOptions): { limitsOff: boolean; rest: Omit<RedisLimitTestingOptions, 'limits'> } {
  const { limits = 'enforce', ...rest } = options;
  if (limits !== 'enforce' && limits !== 'off') {
    throw new TypeError(`RedisLimitModule.forTesting: limits must be 'enforce' or 'off', got ${describeValue(limits)}`);
  }
  if ('redis' in rest && (rest as { redis?: unknown }).redis !== undefined) {
    throw new TypeError(
      'RedisLimitModule.forTesting: redis is not an option here (the module runs on its in-memory engine); use forRoot to test against a Redis',
    );
  }
  return { limitsOff: limits === 'off', rest };
}
