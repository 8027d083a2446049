import { Cluster, Redis } from 'ioredis';
import type { RedisClient } from './scripts.js';
import type { ClusterConfig, RedisTarget } from './connection.options.js';

export interface ClientHandle {
  client: RedisClient;
  /** True when the module created the client and must close it. */
  owned: boolean;
}

/**
 * Creates the client the options describe, with the app's own ioredis (5 or 6: a peer dependency,
 * so lib/ uses only what both have), or adopts the one given. Clients we create never queue
 * commands while disconnected: a request must fail fast (and apply failMode) rather than wait
 * behind an outage; they reconnect in the background with capped backoff.
 */
export function createClient(redis: RedisTarget | undefined, commandTimeoutMs: number): ClientHandle {
  if (isClient(redis)) return { client: redis, owned: false };
  const defaults = {
    enableOfflineQueue: false,
    // a command in flight when the connection drops fails at once, never sent again on the next
    // connection: Redis may have run it before the drop (a decision charged, its reply lost), and
    // a script that charges must not run twice
    maxRetriesPerRequest: 0,
    connectTimeout: Math.max(1000, commandTimeoutMs * 4),
    // a disconnect while Redis is unreachable must not leave a 2 s timer holding the process open
    disconnectTimeout: commandTimeoutMs,
    // capped at 1 s: after a Sentinel failover each attempt asks the sentinels for the master anew
    retryStrategy: (attempt: number) => Math.min(50 * 2 ** attempt, 1000),
  };
  if (isClusterConfig(redis)) {
    const { nodes, options = {} } = redis.cluster;
    const client = new Cluster(nodes, {
      enableOfflineQueue: false,
      clusterRetryStrategy: defaults.retryStrategy,
      ...options,
      redisOptions: { ...defaults, ...options.redisOptions },
    });
    return { client, owned: true };
  }
  if (typeof redis === 'string') return { client: new Redis(redis, defaults), owned: true };
  // behind Sentinel, follow +switch-master at once: a planned failover leaves the old master
  // writable for seconds, and counts written there are lost when it rejoins as a replica
  const sentinel = redis?.sentinels ? { failoverDetector: true } : {};
  const client = new Redis({ ...defaults, ...sentinel, ...redis });
  if (redis?.sentinels) reconnectAbortedAttempts(client);
  return { client, owned: true };
}

/**
 * Connects a Sentinel client of ours again when ioredis gave up on it without being asked to.
 * ioredis (5 and 6) does so when the client's failover detector hears +switch-master while a
 * reconnect attempt is still asking a sentinel where the master is (after the master died, say):
 * the detector's disconnect aborts that attempt, ioredis' reconnect timer swallows the rejection,
 * and the client stays in status 'end' for good, refusing every command. Here an 'end' that
 * follows a connect attempt which never reached a server is met with another attempt, after the
 * client's retryStrategy delay (none if it returns none). A client closed on purpose stays
 * closed: disconnect() is wrapped to note it (QUIT closes the socket first: never such an 'end').
 */
export function reconnectAbortedAttempts(client: Redis): void {
  let attempting = false;
  let closed = false;
  let attempts = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const disconnect = client.disconnect.bind(client);
  client.disconnect = (reconnect = false) => {
    if (!reconnect) {
      closed = true;
      clearTimeout(timer);
    }
    disconnect(reconnect);
  };
  client.on('connecting', () => (attempting = true));
  client.on('connect', () => (attempting = false));
  client.on('close', () => (attempting = false));
  client.on('ready', () => (attempts = 0));
  client.on('end', () => {
    if (!attempting || closed) return;
    attempting = false;
    const delay = client.options.retryStrategy?.(++attempts);
    if (typeof delay !== 'number') return;
    timer = setTimeout(() => {
      if (!closed && client.status === 'end') client.connect().catch(() => undefined);
    }, delay);
  });
}

/** The database a standalone or Sentinel client was asked for (a cluster has only 0). */
export function selectedDatabase(client: RedisClient): number {
  if (isCluster(client)) return 0;
  return (client as Redis).options.db ?? 0;
}

/** A Redis Cluster client (duck-typed, like isClient). */
export function isCluster(client: RedisClient): boolean {
  return typeof (client as { nodes?: unknown }).nodes === 'function';
}

function isClient(value: unknown): value is RedisClient {
  // Duck-typed: the app's ioredis may be another copy than ours, so instanceof would lie.
  const candidate = value as { defineCommand?: unknown; status?: unknown } | undefined;
  return typeof candidate?.defineCommand === 'function' && typeof candidate.status === 'string';
}

function isClusterConfig(value: unknown): value is ClusterConfig {
  return typeof value === 'object' && value !== null && 'cluster' in value;
}

/** Resolves when the client is ready or `ms` have passed, whichever is first; never rejects. */
export function waitUntilReady(client: RedisClient, ms: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  if (client.status === 'wait') client.connect().catch(() => undefined);
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      client.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    client.once('ready', done);
  });
}
