import { Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Cluster, Redis } from 'ioredis';
import { RedisLimitError, RedisScriptError } from '../errors.js';
import type { RedisLimitEvents } from '../observability/redis-limit-events.js';
import type { ResolvedOptions } from '../redis-limit.options.js';
import { clockOf, type Clock } from './clock.js';
import { createClient, isCluster, reconnectAbortedAttempts, selectedDatabase, waitUntilReady } from './client.js';
import { RedisKeys } from './keys.js';
import { ScriptRunner, type RedisClient, type ScriptCall, type ScriptName, type ScriptReply } from './scripts.js';

/** How long start-up waits for Redis before going on without it (guards then apply failMode). */
const STARTUP_WAIT_MS = 2000;

// Narrow views of the connection. The module hands the whole connection to the services it makes;
// what they build takes only the parts it uses, so what a part depends on can be read from its
// signature (and a test can hand it a stand-in with just those parts).

/** Runs scripts and names keys: all most Redis-facing code needs. */
export interface ScriptAccess {
  readonly scripts: ScriptRunner;
  readonly keys: RedisKeys;
}

/** The client itself, for commands no script wraps. */
export interface ClientAccess {
  readonly client: RedisClient;
  /** A Redis Cluster: every call's keys must share one slot. */
  readonly cluster: boolean;
}

/** The outage log: a loop or guard reports whether Redis answered, and one warning per outage follows. */
export interface OutageReports {
  reportFailure(error: Error): void;
  reportSuccess(): void;
}

/** Connections of their own for SUBSCRIBE. */
export interface Subscriptions {
  subscriberConnection(sharded?: boolean): Redis | Cluster;
}

/**
 * The module's connection: options, client, key builder and script runner in one place, plus the
 * outage log shared by every guard (one warning per outage, not one per request). The module
 * makes it (see redis-limit.module.ts) from options it has checked: infrastructure imports no
 * feature, and only the types of the options and of the events it reports to.
 */
export class RedisConnection implements ScriptAccess, ClientAccess, OutageReports, Subscriptions, OnModuleInit, OnApplicationShutdown {
  readonly client: RedisClient;
  /** A Redis Cluster: every call's keys must share one slot. */
  readonly cluster: boolean;
  readonly keys: RedisKeys;
  readonly scripts: ScriptRunner;
  /** What the module's timers and caches go by: the system's, or the test clock of forTesting. */
  readonly clock: Clock;
  private readonly owned: boolean;
  private readonly logger = new Logger('RedisLimit');
  private outage = false;
  private readonly recoveryListeners: (() => void)[] = [];
  private readonly commands = new Map<string, Promise<boolean>>();

  constructor(
    /** Checked, with their defaults (resolveOptions). */
    readonly options: ResolvedOptions,
    /** Counters and events: everything that holds the connection reports through it. */
    readonly events: RedisLimitEvents,
  ) {
    const { client, owned } = createClient(this.options.redis, this.options.commandTimeoutMs);
    this.client = client;
    this.cluster = isCluster(client);
    this.owned = owned;
    this.clock = clockOf(client);
    this.keys = new RedisKeys(this.options.keyPrefix);
    this.scripts = new ScriptRunner(client, this.options.commandTimeoutMs);
    // ioredis prints every connection error unless someone listens; the outage log speaks for us.
    if (owned) {
      client.on('error', (error: Error) => this.reportFailure(error));
      client.on('ready', () => this.reportSuccess());
    }
    // a restarted server has lost its scripts: load them before the traffic returns
    client.on('ready', () => void this.preloadScripts());
  }

  async onModuleInit(): Promise<void> {
    await waitUntilReady(this.client, STARTUP_WAIT_MS);
    if (this.client.status !== 'ready') {
      this.reportFailure(new Error(`not ready after ${STARTUP_WAIT_MS} ms (status ${this.client.status})`));
      return;
    }
    await this.assertDatabase();
    await this.preloadScripts();
  }

  /**
   * ioredis SELECTs the database a URL names when it connects, and carries on in database 0 if
   * that is refused (an ACL without SELECT): this app would then share counters with every app
   * of database 0. Asked again here, a refusal fails start-up instead.
   */
  private async assertDatabase(): Promise<void> {
    const db = selectedDatabase(this.client);
    if (db === 0) return;
    try {
      await this.scripts.bounded(this.client.call('SELECT', db), 'SELECT');
    } catch (error) {
      if (!(error instanceof RedisScriptError)) return; // unreachable now: guards apply failMode
      const reason = (error.cause as Error).message;
      // start-up fails, so no shutdown hook will close what we opened
      if (this.owned) this.client.disconnect();
      throw new Error(
        `RedisLimitModule: SELECT ${db} was refused (${reason}): the connection would use database 0. Grant SELECT (aclRules does) or connect without a database number`,
      );
    }
  }

  /** Best effort: a script that is not loaded still runs (EVALSHA falls back to EVAL). */
  private async preloadScripts(): Promise<void> {
    try {
      await this.scripts.preload();
    } catch {
      // the next call reports the outage, if it is one
    }
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.owned) return;
    // ended by ioredis rather than by us, it may be about to connect again (see client.ts)
    if (this.client.status === 'end') return this.client.disconnect();
    try {
      // resolve once the socket is closed, not merely when Redis has answered QUIT
      const ended = new Promise((resolve) => this.client.once('end', resolve));
      await this.scripts.bounded(Promise.all([ended, this.client.quit()]), 'QUIT');
    } catch {
      // no answer in time: disconnect below drops the socket
    }
    // also after a clean QUIT: only disconnect() closes a Sentinel client's failover-detector
    // connections to the sentinels (ioredis 6), which would otherwise keep the process alive
    this.client.disconnect();
  }

  /**
   * Whether the server knows `command`, asked once with COMMAND INFO rather than guessed from a
   * version string (Valkey 8 reports a Redis-compatible version yet lacks HPEXPIRE; a cluster's
   * nodes are expected to agree). Rejects at once while Redis is unreachable (and asks again next
   * time); a server that refuses to say (an ACL without COMMAND) counts as not knowing it.
   * Unbounded: callers bound it.
   */
  hasCommand(command: string): Promise<boolean> {
    let known = this.commands.get(command);
    if (known === undefined) {
      const info = this.client.call('COMMAND', 'INFO', command) as Promise<unknown[]>;
      known = info
        .then(([entry]) => Array.isArray(entry))
        .catch((error: Error) => {
          if (error.name === 'ReplyError') return false;
          this.commands.delete(command);
          throw error;
        });
      this.commands.set(command, known);
    }
    return known;
  }

  /** Forgets what hasCommand learnt of `command`, to ask again: the server behind the connection
   * may have changed since (a failover to an older one, a rolling downgrade). */
  forgetCommand(command: string): void {
    this.commands.delete(command);
  }

  /**
   * Runs a keyless script on every master (the one server outside a cluster), each answering for
   * itself: for what a cluster's nodes need not agree on while it is upgraded node by node, such as
   * a command that is new. Bounded like a script call; [] while a cluster knows no master yet.
   */
  askEveryMaster<N extends ScriptName>(name: N, call: ScriptCall<N>): Promise<ScriptReply<N>[]> {
    const masters = this.cluster ? (this.client as Cluster).nodes('master') : [this.client as Redis];
    return this.scripts.callEach(masters, name, call);
  }

  /**
   * A connection of its own for SUBSCRIBE (DelayQueue wake-ups, refusal-cache invalidations): a
   * duplicate of the client that, unlike it, queues commands until connected and retries them, and
   * reports its connection errors as outages. `sharded`: a cluster's sharded subscribers.
   *
   * Off a cluster the caller subscribes again on every 'ready': ioredis would, but leaves that
   * command's promise unhandled (ioredis#2187, in no release yet), so a refused SUBSCRIBE, or a
   * close while it is on its way, was an unhandled rejection. A cluster's subscriber handles its own.
   */
  subscriberConnection(sharded = false): Redis | Cluster {
    const override = { enableOfflineQueue: true, maxRetriesPerRequest: null };
    const subscriber = this.cluster
      ? (this.client as Cluster).duplicate(undefined, { ...override, shardedSubscribers: sharded })
      : (this.client as Redis).duplicate({ ...override, autoResubscribe: false });
    if (!this.cluster && (subscriber as Redis).options.sentinels) reconnectAbortedAttempts(subscriber as Redis);
    subscriber.on('error', (error: Error) => this.reportFailure(new RedisLimitError(error.message, 'REDIS_UNAVAILABLE')));
    return subscriber;
  }

  reportFailure(error: Error): void {
    if (this.outage) return;
    this.outage = true;
    this.logger.warn(`Redis unavailable: ${error.message}`);
    this.events.redisDown(error);
  }

  reportSuccess(): void {
    if (!this.outage) return;
    this.outage = false;
    this.logger.log('Redis available again');
    this.events.redisUp();
    for (const listener of this.recoveryListeners) listener();
  }

  /** Calls `listener` (synchronously: keep it quick, never throwing) each time reportSuccess ends
   * an outage: Redis answers again (for a client of our own, as soon as it has reconnected). */
  onRecovery(listener: () => void): void {
    this.recoveryListeners.push(listener);
  }
}
