import type { ExpiringHashOptions } from '../redis-limit.options.js';
import type { ExpiryMode } from './expiring-hash.types.js';

/** The mode new hashes get: 'native' when the server has HPEXPIRE (unless the option says 'index'). */
export async function detectExpiryMode(
  hasCommand: (command: string) => Promise<boolean>,
  option: Required<ExpiringHashOptions>['mode'],
): Promise<ExpiryMode> {
  if (option === 'index') return 'index';
  const supported = await hasCommand('HPEXPIRE');
  if (option === 'native' && !supported) {
    throw new TypeError("RedisLimitModule: expiringHash.mode 'native' needs HPEXPIRE (Redis >= 7.4), which this server lacks");
  }
  return supported ? 'native' : 'index';
}
