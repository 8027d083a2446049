import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisOptions } from 'ioredis';
import { ask } from './ask.js';
import { redisServerBinary } from './redis-binary.js';
import { freePort, RedisNode } from './redis-server.js';

export interface SentinelStartOptions {
  /** down-after-milliseconds: how long a silent master takes to be declared down. Default 1000. */
  downAfterMs?: number;
  /** failover-timeout. Default 3000. */
  failoverTimeoutMs?: number;
}

export interface Address {
  host: string;
  port: number;
}

interface SentinelProcess extends Address {
  child: ChildProcess;
  dir: string;
  /** The process' 'exit' hook, removed again by stop(). */
  cleanup: () => void;
}

const HOST = '127.0.0.1';
const QUORUM = 2;

/**
 * A master, one replica and three sentinels on loopback. The two data nodes are RedisNodes (a
 * test can SIGKILL one); the sentinels are spawned here, since a sentinel's first argument must
 * be a config file of its own (it rewrites it), which redis-memory-server has no way to pass.
 */
export class TestSentinel {
  readonly name = 'mymaster';
  private readonly procs: SentinelProcess[] = [];

  private constructor(readonly nodes: RedisNode[]) {}

  static async start(options: SentinelStartOptions = {}): Promise<TestSentinel> {
    const { downAfterMs = 1000, failoverTimeoutMs = 3000 } = options;
    const master = await RedisNode.start({ own: true, flavor: 'redis7' });
    const nodes = [master];
    const sentinel = new TestSentinel(nodes);
    try {
      nodes.push(await RedisNode.start({ own: true, flavor: 'redis7', args: ['--replicaof', HOST, String(master.port)] }));
      // before the sentinels: a sentinel learns the replicas from the master's INFO, which it asks
      // once at connect and then only every 10 s
      await sentinel.until('the replica to sync', async () => /master_link_status:up/.test(String(await ask(nodes[1]!, 'INFO', 'replication'))));
      for (let i = 0; i < 3; i++) sentinel.procs.push(await spawnSentinel(sentinel.name, master.port, downAfterMs, failoverTimeoutMs));
      // peers find each other through hello messages on the master, every 2 s
      await sentinel.until('the sentinels to see the replica and each other', async () => {
        const views = await Promise.all(sentinel.procs.map((s) => sentinel.masterInfo(s)));
        return views.every((v) => v['num-slaves'] === '1' && v['num-other-sentinels'] === '2' && v['port'] === String(master.port));
      });
    } catch (error) {
      const logs = sentinel.procs.map((s) => tail(join(s.dir, 'sentinel.log'))).join('\n---\n');
      await sentinel.stop();
      throw new Error(`${(error as Error).message}\nsentinel logs:\n${logs}`);
    }
    return sentinel;
  }

  get sentinels(): Address[] {
    return this.procs.map(({ host, port }) => ({ host, port }));
  }

  /** What RedisLimitModule's `redis` option takes (ioredis options) to connect through the sentinels. */
  get connection(): RedisOptions {
    return { sentinels: this.sentinels, name: this.name };
  }

  /** One command to the first sentinel that answers, e.g. SENTINEL FAILOVER. */
  async ask(...command: string[]): Promise<unknown> {
    let failure: unknown = new Error('no sentinel runs');
    for (const s of this.live()) {
      try {
        return await ask(s, ...command);
      } catch (error) {
        failure = error;
      }
    }
    throw failure;
  }

  /** How many connections listen on `channel` on the current master. */
  async subscribers(channel: string): Promise<number> {
    const [, count] = (await ask({ host: HOST, port: await this.masterPort() }, 'PUBSUB', 'NUMSUB', channel)) as [string, number];
    return count;
  }

  /** The master's port as a live sentinel names it now. */
  async masterPort(): Promise<number> {
    for (const s of this.live()) {
      const reply = await ask(s, 'SENTINEL', 'get-master-addr-by-name', this.name).catch(() => undefined);
      if (Array.isArray(reply)) return Number(reply[1]);
    }
    throw new Error('no sentinel names a master');
  }

  /** Waits until every live sentinel names a master other than `fromPort`, and it acts as one. */
  async waitForFailover(fromPort: number, timeoutMs = 30_000): Promise<number> {
    let to = fromPort;
    await this.until(
      `a failover away from ${fromPort}`,
      async () => {
        const replies = await Promise.all(this.live().map((s) => ask(s, 'SENTINEL', 'get-master-addr-by-name', this.name)));
        const ports = new Set(replies.map((r) => Number((r as string[])[1])));
        if (ports.size !== 1 || ports.has(fromPort)) return false;
        to = [...ports][0]!;
        const [role] = (await ask({ host: HOST, port: to }, 'ROLE')) as [string];
        return role === 'master';
      },
      timeoutMs,
    );
    return to;
  }

  /** Sends `signal` to sentinel `index` (in the order of `sentinels`): SIGSTOP/SIGCONT for a hang.
   * A stopped sentinel accepts connections but answers nothing, so ask none until it is continued. */
  signalSentinel(index: number, signal: NodeJS.Signals): void {
    this.procs[index]!.child.kill(signal);
  }

  /** Stops the sentinels and both data nodes (a killed one too). */
  async stop(): Promise<void> {
    await Promise.all(this.procs.splice(0).map(stopSentinel));
    await Promise.all(this.nodes.map((node) => node.stop()));
  }

  private live(): SentinelProcess[] {
    return this.procs.filter((s) => s.child.exitCode === null && s.child.signalCode === null);
  }

  /** SENTINEL MASTER as an object, e.g. { 'num-slaves': '1', ... }; {} while it cannot answer. */
  private async masterInfo(s: Address): Promise<Record<string, string>> {
    const flat = (await ask(s, 'SENTINEL', 'MASTER', this.name).catch(() => [])) as string[];
    const info: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) info[flat[i]!] = flat[i + 1]!;
    return info;
  }

  /** Polls `check` (errors count as "not yet") until it holds. */
  private async until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await check().catch(() => false)) return;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await sleep(100);
    }
  }
}

async function spawnSentinel(name: string, masterPort: number, downAfterMs: number, failoverTimeoutMs: number): Promise<SentinelProcess> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'nrl-sentinel-'));
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${port}`,
      `bind ${HOST}`,
      `dir ${dir}`,
      `logfile ${join(dir, 'sentinel.log')}`,
      `sentinel monitor ${name} ${HOST} ${masterPort} ${QUORUM}`,
      `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
      `sentinel failover-timeout ${name} ${failoverTimeoutMs}`,
      '',
    ].join('\n'),
  );
  const child = spawn(redisServerBinary('redis7'), [conf, '--sentinel'], { stdio: 'ignore' });
  // a jest worker that dies without stop() must not leave sentinels behind
  const cleanup = () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', cleanup);
  const proc = { host: HOST, port, child, dir, cleanup };
  const deadline = Date.now() + 10_000;
  while ((await ask(proc, 'PING').catch(() => undefined)) !== 'PONG') {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stopSentinel(proc);
      throw new Error(`sentinel on port ${port} did not start:\n${tail(join(dir, 'sentinel.log'))}`);
    }
    await sleep(50);
  }
  return proc;
}

async function stopSentinel(s: SentinelProcess): Promise<void> {
  process.off('exit', s.cleanup);
  if (s.child.exitCode === null && s.child.signalCode === null) {
    const exited = new Promise((resolve) => s.child.once('exit', resolve));
    s.child.kill('SIGTERM');
    s.child.kill('SIGCONT'); // a sentinel a test left stopped takes its SIGTERM only once continued
    // unref'd: a pending timer would hold jest open after the run
    await Promise.race([exited, sleep(5000, undefined, { ref: false })]);
  }
  s.cleanup();
}

function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
