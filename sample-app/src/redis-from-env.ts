import type { RedisLimitModuleOptions } from '../../lib/index.js';

/** `host:port,host:port` → ioredis node addresses. */
function addresses(list: string, variable: string): { host: string; port: number }[] {
  return list.split(',').map((entry) => {
    const match = /^\s*\[?([^\]]+?)\]?:(\d+)\s*$/.exec(entry);
    if (!match) throw new TypeError(`${variable}: expected host:port[,host:port...], got ${JSON.stringify(entry)}`);
    return { host: match[1]!, port: Number(match[2]) };
  });
}

/**
 * The sample app's Redis from its environment: REDIS_URL (one server), REDIS_CLUSTER_NODES (a
 * Redis Cluster's startup nodes) or REDIS_SENTINELS with REDIS_SENTINEL_NAME (a master behind
 * Sentinel). Undefined when none is set.
 */
export function redisFromEnv(env: NodeJS.ProcessEnv): RedisLimitModuleOptions['redis'] {
  const { REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS, REDIS_SENTINEL_NAME } = env;
  if (REDIS_CLUSTER_NODES) return { cluster: { nodes: addresses(REDIS_CLUSTER_NODES, 'REDIS_CLUSTER_NODES') } };
  if (REDIS_SENTINELS) {
    if (!REDIS_SENTINEL_NAME) throw new TypeError('REDIS_SENTINEL_NAME: the master name the sentinels watch is required with REDIS_SENTINELS');
    return { sentinels: addresses(REDIS_SENTINELS, 'REDIS_SENTINELS'), name: REDIS_SENTINEL_NAME };
  }
  return REDIS_URL || undefined;
}
