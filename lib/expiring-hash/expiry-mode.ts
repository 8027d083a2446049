import { RedisScriptError } from '../errors.js';
import { HashReply } from '../redis/replies.js';
import type { ScriptReply } from '../redis/scripts.js';
import type { ExpiringHashOptions } from './expiring-hash.options.js';
import type { ExpiryMode } from './expiring-hash.types.js';

/** The mode new hashes get: 'native' when the server has HPEXPIRE (unless the option says 'index'). */
export async function detectExpiryMode(hasCommand: (command: string) => Promise<boolean>, option: Required<ExpiringHashOptions>['mode']): Promise<ExpiryMode> {
  if (option === 'index') return 'index';
  const supported = await hasCommand('HPEXPIRE');
  if (option === 'native' && !supported) {
    throw new TypeError("RedisLimitModule: expiringHash.mode 'native' needs HPEXPIRE (Redis >= 7.4), which this server lacks");
  }
  return supported ? 'native' : 'index';
}

/**
 * Whether native-mode writes may set a field and its expiry with one HSETEX: every master has it
 * (Redis >= 8.0) and lets this user run it on our keys (hsetex-probe.lua). Otherwise they take
 * HSET then HPEXPIREAT, which works wherever native mode does: a script error counts as no, a
 * server that cannot answer now rejects (asked again next time), and undefined means a cluster
 * listed no master yet (also asked again).
 */
export async function detectHsetex(askEveryMaster: () => Promise<ScriptReply<'hashHsetexProbe'>[]>): Promise<boolean | undefined> {
  let answers: ScriptReply<'hashHsetexProbe'>[];
  try {
    answers = await askEveryMaster();
  } catch (error) {
    if (error instanceof RedisScriptError) return false;
    throw error;
  }
  return answers.length === 0 ? undefined : answers.every((answer) => answer === HashReply.HSETEX_ALLOWED);
}
