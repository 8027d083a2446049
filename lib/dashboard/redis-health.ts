import type { Cluster, Redis } from 'ioredis';
import type { ClientAccess } from '../redis/redis-connection.js';

export interface RedisHealth {
  mode: 'standalone' | 'cluster' | 'sentinel';
  /** Redis answered this app instance's PING just now (an error reply counts: it answered). */
  up: boolean;
  /** 'redis' or 'valkey', and its version, from INFO server (of one master on a cluster). */
  server?: string;
  version?: string;
  /** One PING's round trip from this app instance, in ms. */
  pingMs?: number;
  /** Why some of the figures above are missing (e.g. an ACL without `ping`). */
  error?: string;
}

/** How the module reaches Redis, and how well: what the dashboard's header shows. */
export async function redisHealth(redis: ClientAccess): Promise<RedisHealth> {
  const client = redis.client;
  const mode = redis.cluster ? 'cluster' : (client as Redis).options.sentinels ? 'sentinel' : 'standalone';
  const [ping, info] = await Promise.allSettled([pingMs(client), serverInfo(redis)]);
  // once: a connection that is down fails both alike
  const errors = [...new Set([ping, info].flatMap((result) => (result.status === 'rejected' ? [(result.reason as Error).message] : [])))];
  return {
    mode,
    // an error reply (an ACL without `ping`) is a server that answers
    up: ping.status === 'fulfilled' || (ping.reason as Error).name === 'ReplyError',
    ...(info.status === 'fulfilled' ? info.value : {}),
    ...(ping.status === 'fulfilled' ? { pingMs: ping.value } : {}),
    ...(errors.length === 0 ? {} : { error: errors.join('; ') }),
  };
}

async function pingMs(client: Redis | Cluster): Promise<number> {
  const started = performance.now();
  await client.ping();
  return Math.round((performance.now() - started) * 100) / 100;
}

async function serverInfo(redis: ClientAccess): Promise<{ server: string; version: string | undefined }> {
  const node = redis.cluster ? (redis.client as Cluster).nodes('master')[0]! : (redis.client as Redis);
  const info = await node.info('server');
  const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
  const valkey = field('valkey_version');
  return { server: valkey === undefined ? 'redis' : 'valkey', version: valkey ?? field('redis_version') };
}
