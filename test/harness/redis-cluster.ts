import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Cluster } from 'ioredis';
import type { ClusterConfig } from '../../lib/index.js';
import { ask } from './ask.js';
import { redisCli, type RedisFlavor } from './redis-binary.js';
import { currentFlavor, RedisNode } from './redis-server.js';

const run = promisify(execFile);

export interface ClusterStartOptions {
  /** Default 3. */
  masters?: number;
  /** Replicas per master; a failover test needs 1. Default 0. */
  replicas?: number;
  flavor?: RedisFlavor;
  /** Extra redis-server arguments for every node. */
  args?: string[];
  /**
   * cluster-node-timeout: how long a silent master takes to be failed over. Default 15000 (the
   * server's own): a loaded machine can stall a node for over a second, and with a short timeout
   * the other masters then mark it failed and answer CLUSTERDOWN for every slot. Failover tests
   * pass a short one.
   */
  nodeTimeoutMs?: number;
}

export interface ClusterNodeInfo {
  id: string;
  port: number;
  role: 'master' | 'replica';
  /** For a replica, its master's id. */
  masterId: string | undefined;
  /** Slot ranges a master serves, e.g. [[0, 5460]]. */
  slots: [number, number][];
  failed: boolean;
}

/**
 * A real Redis Cluster on loopback: `masters` redis-server processes with `--cluster-enabled yes`
 * (plus replicas), joined by `redis-cli --cluster create`. Every node is a RedisNode, so a test can
 * stop, resume or SIGKILL one; stop()/resume() act on all of them.
 */
export class TestCluster {
  readonly topology = 'cluster';

  private constructor(
    readonly nodes: RedisNode[],
    readonly flavor: RedisFlavor,
  ) {}

  static async start(options: ClusterStartOptions = {}): Promise<TestCluster> {
    const { masters = 3, replicas = 0, nodeTimeoutMs = 15_000, args = [] } = options;
    const flavor = options.flavor ?? currentFlavor();
    const nodes = await Promise.all(
      Array.from({ length: masters * (1 + replicas) }, () => {
        // each node writes nodes.conf in a directory of its own (RedisNode gives it one)
        const clusterArgs = ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'];
        const timeout = ['--cluster-node-timeout', String(nodeTimeoutMs)];
        return RedisNode.start({ own: true, flavor, args: [...args, ...clusterArgs, ...timeout] });
      }),
    );
    const cluster = new TestCluster(nodes, flavor);
    try {
      const addresses = nodes.map((node) => `${node.host}:${node.port}`);
      await run(redisCli(), ['--cluster', 'create', ...addresses, '--cluster-replicas', String(replicas), '--cluster-yes']);
      await cluster.waitUntilHealthy();
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  get connection(): ClusterConfig {
    return { cluster: { nodes: this.nodes.map(({ host, port }) => ({ host, port })) } };
  }

  /** What a raw client connects with (the same as a module's: clusters have no ACL user here). */
  get rawConnection(): ClusterConfig {
    return this.connection;
  }

  /** A raw cluster client, for a test to inspect keys with; the caller disconnects it. */
  client(): Cluster {
    return new Cluster(this.connection.cluster.nodes);
  }

  /** The node listening on `port`. */
  node(port: number): RedisNode {
    const node = this.nodes.find((n) => n.port === port);
    if (!node) throw new Error(`no node on port ${port}`);
    return node;
  }

  /** The topology as a live node sees it now. */
  async describe(): Promise<ClusterNodeInfo[]> {
    for (const node of this.nodes) {
      const reply = await this.ask(node, 'CLUSTER', 'NODES').catch(() => undefined);
      if (typeof reply === 'string') return parseClusterNodes(reply);
    }
    throw new Error('no cluster node answers');
  }

  /** The masters serving slots now, one RedisNode each. */
  async masters(): Promise<RedisNode[]> {
    const infos = await this.describe();
    return infos.filter((i) => i.role === 'master' && !i.failed && i.slots.length > 0).map((i) => this.node(i.port));
  }

  /** The master serving `key`'s slot now. */
  async masterOf(key: string): Promise<RedisNode> {
    const slot = Number(await this.ask(this.nodes[0]!, 'CLUSTER', 'KEYSLOT', key));
    const infos = await this.describe();
    const owner = infos.find((i) => i.role === 'master' && !i.failed && i.slots.some(([a, b]) => slot >= a && slot <= b));
    if (!owner) throw new Error(`no master serves slot ${slot}`);
    return this.node(owner.port);
  }

  /** Every key matching `pattern` on every master. */
  async keys(pattern: string): Promise<string[]> {
    const masters = await this.masters();
    const perMaster = await Promise.all(masters.map((m) => this.ask(m, 'KEYS', pattern) as Promise<string[]>));
    return perMaster.flat();
  }

  /** Runs one command on every master, e.g. SCRIPT FLUSH; their replies in order. */
  async onEveryMaster(...command: string[]): Promise<unknown[]> {
    return Promise.all((await this.masters()).map((m) => this.ask(m, ...command)));
  }

  /** How many connections listen on `channel`, plain or sharded, summed over every node (each
   * counts its own). */
  async subscribers(channel: string): Promise<number> {
    const live = this.nodes.filter((n) => n.pid !== undefined);
    const counts = await Promise.all(
      live.flatMap((n) => ['NUMSUB', 'SHARDNUMSUB'].map((kind) => this.ask(n, 'PUBSUB', kind, channel) as Promise<[string, number]>)),
    );
    return counts.reduce((sum, [, n]) => sum + n, 0);
  }

  /** Stops every node (their cluster config stays on disk for resume()). */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }

  /** Restarts every stopped node and waits until the cluster serves all slots again. */
  async resume(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.resume()));
    await this.waitUntilHealthy();
  }

  /** Waits until every running node reports cluster_state:ok and knows every node, and every
   * replica's link to its master is up. */
  async waitUntilHealthy(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const healthy = await Promise.all(this.nodes.filter((n) => n.pid !== undefined).map((n) => this.isHealthy(n))).catch(() => [false]);
      if (healthy.every(Boolean)) return;
      if (Date.now() > deadline) throw new Error(`cluster not healthy after ${timeoutMs} ms`);
      await sleep(100);
    }
  }

  private async isHealthy(node: RedisNode): Promise<boolean> {
    const info = String(await this.ask(node, 'CLUSTER', 'INFO'));
    const known = Number(/cluster_known_nodes:(\d+)/.exec(info)?.[1]);
    if (!info.includes('cluster_state:ok') || known !== this.nodes.length) return false;
    const replication = String(await this.ask(node, 'INFO', 'replication'));
    return !replication.includes('role:slave') || replication.includes('master_link_status:up');
  }

  /** One command on one node, over a short-lived connection. */
  ask(node: RedisNode, ...command: string[]): Promise<unknown> {
    return ask(node, ...command);
  }
}

/** Parses CLUSTER NODES: `<id> <ip:port@bus> <flags> <master> <ping> <pong> <epoch> <link> <slot>...`. */
export function parseClusterNodes(text: string): ClusterNodeInfo[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flags, master, , , , , ...slots] = line.trim().split(' ');
      const port = Number(/:(\d+)@?/.exec(address!)![1]);
      const flagList = flags!.split(',');
      return {
        id: id!,
        port,
        role: flagList.includes('master') ? 'master' : 'replica',
        masterId: master === '-' ? undefined : master,
        slots: slots
          .filter((s) => !s.startsWith('['))
          .map((s) => {
            const [a, b = a] = s.split('-').map(Number);
            return [a!, b!] as [number, number];
          }),
        failed: flagList.includes('fail') || flagList.includes('noaddr'),
      };
    });
}
