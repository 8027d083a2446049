import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FailMode } from '../../lib/index.js';
import { transpileLib } from '../harness/transpiled-lib.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { TestCluster } from '../harness/redis-cluster.js';

const WORKER = join(process.cwd(), 'test/topology/workers/http-load-worker.mjs');
// low enough that the 4 workers exceed it in every window even when a loaded machine slows them
// to a few dozen requests a second: the test needs refusals before the kill and after the switch
const LIMIT = 40;
const WINDOW_MS = 1000;
/** [at, status, limited]: see the worker. */
type Sample = [number, number, 0 | 1];

interface Worker {
  failMode: FailMode;
  child: ChildProcess;
  ready: Promise<void>;
  done: Promise<Sample[]>;
}

function startWorker(config: object & { failMode: FailMode }): Worker {
  const child = spawn(process.execPath, [WORKER, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const lines: { event: string; samples?: Sample[] }[] = [];
  const waiters: (() => void)[] = [];
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    const complete = stdout.split('\n');
    stdout = complete.pop()!;
    for (const line of complete) if (line.trim()) lines.push(JSON.parse(line) as (typeof lines)[number]);
    waiters.forEach((wake) => wake());
  });
  const event = (name: string) =>
    new Promise<(typeof lines)[number]>((resolve, reject) => {
      const check = () => {
        const found = lines.find((l) => l.event === name);
        if (found) resolve(found);
      };
      waiters.push(check);
      check();
      child.once('exit', (code) => setImmediate(() => reject(new Error(`worker exited (${code}) before '${name}':\n${stderr}`))));
    });
  return {
    failMode: config.failMode,
    child,
    ready: event('ready').then(() => undefined),
    done: event('done').then((l) => l.samples!),
  };
}

describe('Redis Cluster: a master killed under load', () => {
  let cluster: TestCluster;
  const workers: Worker[] = [];
  beforeAll(async () => {
    cluster = await TestCluster.start({ flavor: 'redis7', replicas: 1, nodeTimeoutMs: 1000 });
  });
  afterAll(async () => {
    for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    await cluster?.stop();
  });

  it('limiting continues once the replica takes over; the switch is answered per failMode', async () => {
    const libDir = transpileLib('failover');
    const keyPrefix = uniquePrefix('failover');
    const victim = await cluster.masterOf('{hot}');
    const base = { libDir, redis: cluster.connection, keyPrefix, limit: LIMIT, windowMs: WINDOW_MS, inFlight: 4 };
    for (const failMode of ['closed', 'closed', 'open', 'open'] as const) workers.push(startWorker({ ...base, failMode }));
    await Promise.all(workers.map((w) => w.ready));
    await sleep(2000);

    const killedAt = Date.now();
    victim.signal('SIGKILL');
    let promotedAt = 0;
    for (const deadline = Date.now() + 30_000; Date.now() < deadline && !promotedAt; await sleep(50)) {
      const owner = await cluster.masterOf('{hot}').catch(() => undefined);
      if (owner && owner.port !== victim.port) promotedAt = Date.now();
    }
    expect(promotedAt).toBeGreaterThan(0);
    await sleep(4000);
    workers.forEach((w) => w.child.kill('SIGTERM'));
    const results = await Promise.all(workers.map(async (w) => ({ failMode: w.failMode, samples: await w.done })));

    // clients learn the new owner on their next MOVED / refresh: give them a second
    const settledAt = promotedAt + 1000;
    const all = results.flatMap((r) => r.samples);
    const before = all.filter(([at]) => at < killedAt);
    const after = all.filter(([at]) => at > settledAt);
    const during = (failMode: FailMode) =>
      results.filter((r) => r.failMode === failMode).flatMap((r) => r.samples.filter(([at]) => at >= killedAt && at <= settledAt));

    // every request was answered, as a decision or per failMode: no 500, nothing hung
    expect([...new Set(all.map(([, status]) => status))].sort()).toEqual(expect.arrayContaining([200, 429]));
    expect(all.filter(([, status]) => ![200, 429, 503].includes(status))).toEqual([]);
    // 'closed' never lets a request through unchecked, 'open' never refuses one for an outage
    const closed = results.filter((r) => r.failMode === 'closed').flatMap((r) => r.samples);
    const open = results.filter((r) => r.failMode === 'open').flatMap((r) => r.samples);
    expect(closed.filter(([, status, limited]) => status === 200 && !limited)).toEqual([]);
    expect(open.filter(([, status]) => status === 503)).toEqual([]);

    // limiting works before the kill and again after the switch, in every process
    for (const phase of [before, after]) {
      expect(phase.some(([, s, limited]) => s === 200 && limited)).toBe(true);
      expect(phase.some(([, s]) => s === 429)).toBe(true);
    }
    for (const { samples } of results) expect(samples.filter(([at, s]) => at > settledAt && s === 429).length).toBeGreaterThan(0);
    expect(after.filter(([, s]) => s === 503)).toEqual([]);
    // and stays exact across the 4 processes: grants per fixed window (server clock = this
    // machine's), give or take the 16 requests in flight across a window's edge
    const perWindow = new Map<number, number>();
    for (const [at, s, limited] of after)
      if (s === 200 && limited) perWindow.set(Math.floor(at / WINDOW_MS), (perWindow.get(Math.floor(at / WINDOW_MS)) ?? 0) + 1);
    const busiest = Math.max(...perWindow.values());
    expect(busiest).toBeLessThanOrEqual(LIMIT + 16);

    const refused = during('closed').filter(([, s]) => s === 503).length;
    const waved = during('open').filter(([, s, limited]) => s === 200 && !limited).length;
    const failures = all.filter(([, s, limited]) => s === 503 || (s === 200 && !limited)).map(([at]) => at);
    const outage = failures.length ? (Math.max(...failures) - killedAt) / 1000 : 0;
    console.log(
      `cluster failover: master :${victim.port} SIGKILLed; replica promoted after ${((promotedAt - killedAt) / 1000).toFixed(1)} s, ` +
        `the last request failMode answered came ${outage.toFixed(1)} s after the kill; failMode 'closed' answered ` +
        `${refused} requests 503 (of ${during('closed').length}), 'open' let ${waved} through unchecked (of ${during('open').length}); ` +
        `${before.length} requests before, ${after.length} after, at most ${busiest} granted per ${WINDOW_MS} ms window after (limit ${LIMIT})`,
    );
  });
});
