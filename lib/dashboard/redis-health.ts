import type { Cluster, Redis } from 'ioredis';
import type { RedisConnection } from '../redis/redis-connection.js';

export interface RedisHealth {
  mode: 'standalone' | 'cluster' | 'sentinel';
  /** 'redis' or 'valkey', and its version, from INFO server (of one master on a cluster). */
  server?: string;
  version?: string;
  /** One PING's round trip from this app instance, in ms. */
  pingMs?: number;
  /** Why the numbers above are missing. */
  error?: string;
}

/** How the module reaches Redis, and how well: what the dashboard's header shows. */
export async function redisHealth(redis: RedisConnection): Promise<RedisHealth> {
  const client = redis.client as Redis | Cluster;
  const mode = redis.cluster ? 'cluster' : (client as Redis).options.sentinels ? 'sentinel' : 'standalone';
  try {
    const started = performance.now();
    await client.ping();
    const pingMs = Math.round((performance.now() - started) * 100) / 100;
    const node = redis.cluster ? (client as Cluster).nodes('master')[0]! : (client as Redis);
    const info = await node.info('server');
    const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
    const valkey = field('valkey_version');
    return { mode, server: valkey === undefined ? 'redis' : 'valkey', version: valkey ?? field('redis_version'), pingMs };
  } catch (error) {
    return { mode, error: (error as Error).message };
  }
}
