import type { RedisClient } from '../redis/scripts.js';
import type { ExpiringHashOptions } from '../redis-limit.options.js';
import type { ExpiryMode } from './expiring-hash.types.js';

/**
 * The mode new hashes get: 'native' when the server has HPEXPIRE (unless the option says
 * 'index'). Asked with COMMAND INFO, not guessed from a version string: Valkey 8 reports a
 * Redis-compatible version yet has no field expiry.
 */
export async function detectExpiryMode(
  client: RedisClient,
  option: Required<ExpiringHashOptions>['mode'],
): Promise<ExpiryMode> {
  if (option === 'index') return 'index';
  const [info] = (await client.call('COMMAND', 'INFO', 'HPEXPIRE')) as unknown[];
  const supported = Array.isArray(info);
  if (option === 'native' && !supported) {
    throw new TypeError("RedisLimitModule: expiringHash.mode 'native' needs HPEXPIRE (Redis >= 7.4), which this server lacks");
  }
  return supported ? 'native' : 'index';
}
