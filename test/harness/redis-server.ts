import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisMemoryServer } from 'redis-memory-server';
import { aclRules, type RedisLimitModuleOptions } from '../../lib/index.js';
import { FIELD_EXPIRY_FLAVORS, FLAVORS, redisServerBinary, type RedisFlavor } from './redis-binary.js';
import { MemoryNode } from './memory-node.js';
import { TestCluster } from './redis-cluster.js';

export interface StartOptions {
  /** Extra redis-server arguments, e.g. ['--appendonly', 'yes']. */
  args?: string[];
  /** Default: the jest project's `__REDIS_FLAVOR__` global, else REDIS_FLAVOR, else 'redis7'. */
  flavor?: RedisFlavor;
  /** Start a server of its own even when REDIS_URL is set: for tests that stop, pause or
   * otherwise disturb their server, which they must never do to one they did not start. */
  own?: boolean;
}

/** Standalone servers, a 3-master Redis Cluster (the jest `:cluster` projects), or forTesting's
 * in-memory engine (the `:memory` project). */
export type Topology = 'standalone' | 'cluster' | 'memory';

/** The topology this test process runs against (jest projects set it per project). */
export function currentTopology(): Topology {
  const topology = (globalThis as { __REDIS_TOPOLOGY__?: string }).__REDIS_TOPOLOGY__ ?? process.env['REDIS_TOPOLOGY'] ?? 'standalone';
  if (topology !== 'standalone' && topology !== 'cluster' && topology !== 'memory') {
    throw new Error(`REDIS_TOPOLOGY must be standalone, cluster or memory, got ${topology}`);
  }
  return topology;
}

/** The least-privilege user modules connect as in the jest projects that set `__REDIS_ACL__`
 * (raw clients a test inspects with stay the default user). Every test key prefix starts 'test:'. */
export const ACL_USER = { username: 'nrl-app', password: 'nrl-app-secret', keyPrefix: 'test:' };

function aclOn(): boolean {
  return (globalThis as { __REDIS_ACL__?: boolean }).__REDIS_ACL__ === true && !process.env['REDIS_URL'];
}

/** The server flavor this test process runs against (jest projects set it per project). */
export function currentFlavor(): RedisFlavor {
  const flavor = (globalThis as { __REDIS_FLAVOR__?: string }).__REDIS_FLAVOR__ ?? process.env['REDIS_FLAVOR'] ?? 'redis7';
  if (!FLAVORS.includes(flavor as RedisFlavor)) {
    throw new Error(`REDIS_FLAVOR must be one of ${FLAVORS.join(', ')}, got ${flavor}`);
  }
  return flavor as RedisFlavor;
}

/**
 * What a test runs against: one server or a cluster, behind the same face. `connection` is what
 * RedisLimitModule's `redis` option takes; `client()` a raw client to look at keys with.
 */
export type TestRedis = RedisNode | TestCluster | MemoryNode;

export const TestRedis = {
  /** A fresh server (or cluster, in the `:cluster` projects) for one test file or suite. */
  start(options: StartOptions = {}): Promise<TestRedis> {
    if (currentTopology() === 'memory') return MemoryNode.start();
    return currentTopology() === 'cluster' && !process.env['REDIS_URL']
      ? TestCluster.start({ flavor: options.flavor, args: options.args })
      : RedisNode.start(options);
  },
};

/**
 * A real redis-server on a free loopback port, started for one test file or suite and stopped
 * after it (redis-memory-server spawns it, and kills it if this process dies). With REDIS_URL
 * set, every handle points at that server instead and start/stop do nothing.
 */
export class RedisNode {
  readonly topology = 'standalone';
  private server: RedisMemoryServer | undefined;
  private running = false;

  private constructor(
    readonly host: string,
    readonly port: number,
    readonly external: boolean,
    private readonly args: string[],
    readonly flavor: RedisFlavor,
    /** Modules connect as ACL_USER. */
    readonly acl = false,
  ) {}

  static async start(options: StartOptions = {}): Promise<RedisNode> {
    const external = options.own ? undefined : process.env['REDIS_URL'];
    if (external) {
      const url = new URL(external);
      return new RedisNode(url.hostname, Number(url.port || 6379), true, [], currentFlavor());
    }
    const flavor = options.flavor ?? currentFlavor();
    const acl = aclOn();
    const user = acl
      ? [
          '--user',
          ACL_USER.username,
          'on',
          `>${ACL_USER.password}`,
          ...aclRules({ keyPrefix: ACL_USER.keyPrefix, fieldExpiry: FIELD_EXPIRY_FLAVORS.includes(flavor) }),
        ]
      : [];
    // a free port can be taken by another test process before the server binds it: try another
    for (let attempt = 1; ; attempt++) {
      const redis = new RedisNode('127.0.0.1', await freePort(), false, [...user, ...(options.args ?? [])], flavor, acl);
      try {
        await redis.resume();
        return redis;
      } catch (error) {
        if (attempt >= 3 || !String(error).includes('already in use')) throw error;
      }
    }
  }

  get url(): string {
    return this.external ? process.env['REDIS_URL']! : `redis://${this.host}:${this.port}`;
  }

  /** What a module connects with: as ACL_USER where the project asks for it, else `url`. */
  get connection(): NonNullable<RedisLimitModuleOptions['redis']> {
    if (!this.acl) return this.url;
    return `redis://${ACL_USER.username}:${ACL_USER.password}@${this.host}:${this.port}`;
  }

  /** What a raw client connects with: the default user, allowed everything. */
  get rawConnection(): string {
    return this.url;
  }

  /** A raw client of this server, for a test to inspect or disturb it; the caller disconnects it. */
  client(): Redis {
    return new Redis(this.url);
  }

  /** Every key matching `pattern` (KEYS: test data sets are small). */
  async keys(pattern: string): Promise<string[]> {
    const client = this.client();
    try {
      return await client.keys(pattern);
    } finally {
      client.disconnect();
    }
  }

  /** Runs one command on this server (the one master), as TestCluster runs it on each. */
  async onEveryMaster(...command: string[]): Promise<unknown[]> {
    const client = this.client();
    try {
      return [await client.call(command[0]!, ...command.slice(1))];
    } finally {
      client.disconnect();
    }
  }

  /** How many connections listen on `channel`. */
  async subscribers(channel: string): Promise<number> {
    const client = this.client();
    try {
      const [, count] = (await client.pubsub('NUMSUB', channel)) as [string, number];
      return count;
    } finally {
      client.disconnect();
    }
  }

  /** The server process' pid, while it runs. */
  get pid(): number | undefined {
    const info = this.server?.getInstanceInfo();
    return info ? info.childProcess?.pid : undefined;
  }

  /** Sends `signal` to the server process (SIGKILL for a crash, SIGSTOP/SIGCONT for a hang). */
  signal(signal: NodeJS.Signals): void {
    if (this.external) throw new Error('will not signal a server this test did not start');
    const pid = this.pid;
    if (pid === undefined) throw new Error('the server is not running');
    process.kill(pid, signal);
  }

  /** Stops the server; the port stays reserved for `resume()`. A no-op on REDIS_URL's server. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    await this.server?.stop();
  }

  /** Starts the server (again) on the same port, e.g. after stop() in an outage test. */
  async resume(): Promise<void> {
    if (this.external || this.running) return;
    if (this.server) {
      // restart the same instance: it reuses its port, whereas a new instance asks get-port,
      // which refuses a port it handed out in the last 15-30 s and silently picks another
      await this.server.start();
    } else {
      // a directory of its own for what the server writes (a replica's sync RDB, AOF, a cluster's
      // nodes.conf), kept across stop/resume; the caller's --dir, coming later, wins
      const dir = mkdtempSync(join(tmpdir(), 'nrl-redis-'));
      removeAtExit(dir);
      this.server = await RedisMemoryServer.create({
        instance: { ip: this.host, port: this.port, args: ['--save', '', '--dir', dir, ...this.args] },
        binary: { systemBinary: redisServerBinary(this.flavor) },
        autoStart: true,
      });
    }
    this.running = true;
  }
}

const removals = new Set<string>();

/** Removes `dir` when this process exits (one exit listener for all of them). */
function removeAtExit(dir: string): void {
  if (removals.size === 0) process.once('exit', () => removals.forEach((d) => rmSync(d, { recursive: true, force: true })));
  removals.add(dir);
}

export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const probe = createServer();
      probe.once('error', reject);
      probe.listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    if (port !== 6379 && port !== 0) return port;
  }
}
