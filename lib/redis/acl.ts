import { assertKeyPrefix } from './keys.js';
import { describeValue } from '../validation.js';

/**
 * Everything the library sends, directly or from inside its scripts (Redis checks a script's
 * commands against the caller's ACL too). Grouped by why.
 */
const COMMANDS = [
  // scripts: run by sha, sent whole on NOSCRIPT, loaded on every master at (re)connect
  'evalsha',
  'eval',
  'script|load',
  // asked once: does the server have HPEXPIRE / SPUBLISH (a refusal counts as no)
  'command|info',
  // ioredis: the ready check (waits out LOADING after a restart), the names it gives its cluster
  // subscriber connections (and yours, with connectionName), a clean close
  'info',
  'client|setname',
  'quit',
  // the database a URL or the db option names: refused, ioredis would carry on in database 0
  'select',
  // Redis Cluster clients: the ready check, the slot map, and redirects while a slot migrates
  'cluster|info',
  'cluster|slots',
  'asking',
  // the dashboard's Redis health (latency)
  'ping',
  // DelayQueue wake-ups: published from scripts, heard by one subscriber connection
  'publish',
  'subscribe',
  'unsubscribe',
  'spublish',
  'ssubscribe',
  'sunsubscribe',
  // inside the scripts
  'time',
  'type',
  'del',
  'pexpire',
  'pexpireat',
  'pexpiretime',
  'pttl',
  'persist',
  'get',
  'set',
  'setrange',
  'hget',
  'hmget',
  'hgetall',
  'hset',
  'hdel',
  'hlen',
  'hincrby',
  // the kinds of counter each limit's scope has used (resetLimit)
  'sadd',
  'smembers',
  'zadd',
  'zrem',
  'zscore',
  'zcard',
  'zcount',
  'zrange',
  'zrangebyscore',
  'zremrangebyscore',
];

/** ExpiringHash native mode (Redis >= 7.4): a server without them refuses to name them in an ACL. */
const FIELD_EXPIRY_COMMANDS = ['hpexpireat', 'hpexpiretime'];
/** Native-mode writes in one command where the server has it (Redis >= 8.0); likewise refused by older servers. */
const HSETEX_COMMANDS = ['hsetex'];

export interface AclOptions {
  /** The module's keyPrefix. Default 'rl:'. */
  keyPrefix?: string;
  /** Also grant the field-expiry commands of ExpiringHash native mode (Redis >= 7.4). Default false. */
  fieldExpiry?: boolean;
  /** Also grant HSETEX (Redis >= 8.0), so native-mode writes set a field and its expiry in one
   * command; without it they take HSET then HPEXPIREAT. Needs fieldExpiry. Default false. */
  hsetex?: boolean;
}

/**
 * The ACL rules of a Redis user that can do what this library needs and nothing else: its
 * commands, on keys and channels under its key prefix. For `ACL SETUSER <name> on ><password>
 * ...rules`, or a `user` line in redis.conf / users.acl.
 */
export function aclRules(options: AclOptions = {}): string[] {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`aclRules options must be an object { keyPrefix?, fieldExpiry?, hsetex? }, got ${describeValue(options)}`);
  }
  const { keyPrefix = 'rl:', fieldExpiry = false, hsetex = false } = options;
  // the prefixes RedisLimitModule takes, and not '': rules for every key would not be least privilege
  if (keyPrefix === '') throw new TypeError('keyPrefix must be a non-empty string, got ""');
  assertKeyPrefix(keyPrefix);
  if (typeof fieldExpiry !== 'boolean') throw new TypeError(`fieldExpiry must be a boolean, got ${describeValue(fieldExpiry)}`);
  if (typeof hsetex !== 'boolean') throw new TypeError(`hsetex must be a boolean, got ${describeValue(hsetex)}`);
  // HSETEX serves native mode only, which needs the field-expiry commands anyway
  if (hsetex && !fieldExpiry) throw new TypeError('hsetex: true needs fieldExpiry: true (HSETEX serves ExpiringHash native mode only)');
  // a prefix is matched literally: glob characters in it are escaped
  const pattern = `${keyPrefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
  const commands = [...COMMANDS, ...(fieldExpiry ? FIELD_EXPIRY_COMMANDS : []), ...(hsetex ? HSETEX_COMMANDS : [])];
  return ['resetkeys', `~${pattern}`, 'resetchannels', `&${pattern}`, '-@all', ...commands.map((c) => `+${c}`)];
}
