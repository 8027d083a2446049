// ioredis is a peer dependency: in an app these are the types of its own ioredis, 5 or 6, so a
// client it made is accepted as it is. Name them without type arguments (6's Redis<ReplyMapping>
// is not generic in 5).
import type { Cluster, ClusterNode, ClusterOptions, Redis, RedisOptions } from 'ioredis';
import { assertKeyPrefix } from './keys.js';
import { assertTimerMs, describeValue } from '../validation.js';

/** A Redis Cluster to connect to: ioredis' startup nodes and cluster options. */
export interface ClusterConfig {
  cluster: { nodes: ClusterNode[]; options?: ClusterOptions };
}

/** What the `redis` option names: a URL, ioredis options, a cluster to connect to, or a client. */
export type RedisTarget = string | RedisOptions | ClusterConfig | Redis | Cluster;

/** The connection's part of RedisLimitModuleOptions. */
export interface ConnectionModuleOptions {
  /** A redis:// URL (its database number is honoured), ioredis options (Sentinel too), a cluster
   * to connect to, or a client you own, of ioredis 5 or 6 (never closed by the module). An
   * unreachable server is no error: the app starts and guards apply `failMode`.
   * @default ioredis' defaults (localhost:6379)
   * @throws TypeError `redis` when a number, boolean, null, array or `''`; `redis.cluster.nodes`
   * when not a non-empty array. */
  redis?: RedisTarget;
  /** Prefix of every key the library writes; `''` is no prefix.
   * @default 'rl:'
   * @throws TypeError when not a string, or it holds `{`, `}` or a lone surrogate. */
  keyPrefix?: string;
  /** Upper bound in ms on every Redis call the library makes; a late answer is a RedisTimeoutError
   * (guards: `failMode`).
   * @default 500
   * @throws TypeError / RangeError when not an integer from 1 to 2,147,483,647. */
  commandTimeoutMs?: number;
}

/** The connection's options, checked, with their defaults. */
export interface ConnectionSettings {
  redis: RedisTarget | undefined;
  keyPrefix: string;
  commandTimeoutMs: number;
}

export const DEFAULT_COMMAND_TIMEOUT_MS = 500;

export function resolveConnectionOptions(options: ConnectionModuleOptions): ConnectionSettings {
  const { keyPrefix = 'rl:', commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS } = options;
  assertRedis(options.redis);
  assertKeyPrefix(keyPrefix, 'RedisLimitModule: keyPrefix');
  assertTimerMs(commandTimeoutMs, 'a positive integer', 'RedisLimitModule: commandTimeoutMs');
  return { redis: options.redis, keyPrefix, commandTimeoutMs };
}

/** The `redis` option's shape; ioredis checks the rest when it connects. Anything else would have
 * been taken for "no options" and connected to localhost:6379. */
function assertRedis(redis: unknown): void {
  if (redis === undefined) return;
  if (typeof redis === 'string') {
    if (redis.length === 0) throw new TypeError('RedisLimitModule: redis must be a non-empty URL, got ""');
    return;
  }
  if (typeof redis !== 'object' || redis === null || Array.isArray(redis)) {
    throw new TypeError(`RedisLimitModule: redis must be a URL, ioredis options, { cluster: { nodes } } or a client, got ${describeValue(redis)}`);
  }
  // a client (duck-typed, as createClient does) has a cluster() command method: not a config
  if (typeof (redis as { defineCommand?: unknown }).defineCommand === 'function') return;
  if ('cluster' in redis) {
    const cluster = redis.cluster;
    const nodes = typeof cluster === 'object' && cluster !== null ? (cluster as { nodes?: unknown }).nodes : undefined;
    if (!Array.isArray(nodes) || nodes.length === 0) {
      throw new TypeError(`RedisLimitModule: redis.cluster.nodes must be a non-empty array of startup nodes, got ${describeValue(nodes)}`);
    }
  }
}
