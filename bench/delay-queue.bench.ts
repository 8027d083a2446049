// DelayQueueService against BullMQ delayed jobs, side by side on the same machine: 4 consumers
// in 2 processes (bench/delay-queue.worker.ts: 2 consume() calls, or 2 BullMQ Workers, each),
// a fresh redis-server (default config) for every contender run, the producer in this process.
// Scenarios:
//   trickle: 200 msgs/s for 10 s, each enqueued in real time with a fixed delay of 100 ms;
//            lateness = handler start − runAt; concurrency 50 per consumer.
//   burst:   20,000 messages with one runAt 4 s after the enqueue starts (so that both
//            contenders have finished enqueuing first: 1,000 enqueue() calls / one addBulk of
//            1,000 at a time); time from runAt until the last handler starts and until the
//            queue is seen empty; concurrency 200 per consumer.
//   idle:    4 consumers on an empty queue for 30 s; Redis total_commands_processed per
//            consumer per second (commands run inside scripts count, as Redis counts them).
//            Both contenders idle at once, each on its own server: timers pace the polling.
// runAt of a BullMQ job is job.timestamp + job.opts.delay; BullMQ jobs use removeOnComplete,
// as our messages leave Redis when acknowledged. Our consumers' claim and ack calls are timed by
// a wrapper around the library's script runner (the "where the time goes" tables).
// Each scenario runs BENCH_ROUNDS (3) times with the contenders alternating; medians (min–max).
// `npm run bench:queue`; BENCH_SCENARIOS, BENCH_CONTENDERS, BENCH_IDLE_SECONDS,
// BENCH_TRICKLE_SECONDS, BENCH_BURST_LEAD_MS pick less; BENCH_WAIT_QUIET=s waits up to s seconds
// before each run for the machine to be under 15% busy with other work; BENCH_JSON names a file
// for the headline figures (`npm run bench` reads it).
import 'reflect-metadata';
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { NestFactory } from '@nestjs/core';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { DelayQueueService, RedisLimitModule } from '../lib/index.js';
import { RedisNode } from '../test/harness/redis-server.js';
import { spread } from './common/stats.js';
import { now } from './delay-queue.clock.js';
import type { ChildMessage, Contender, WorkerConfig, WorkerReport } from './delay-queue.worker.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const SCENARIOS = (process.env['BENCH_SCENARIOS'] ?? 'trickle,burst,idle').split(',') as Scenario[];
const PROCESSES = 2;
const CONSUMERS_PER_PROCESS = 2;
const CONSUMERS = PROCESSES * CONSUMERS_PER_PROCESS;
const TRICKLE_RATE = 200; // msgs/s
const TRICKLE_SECONDS = Number(process.env['BENCH_TRICKLE_SECONDS'] ?? 10);
const TRICKLE_DELAY_MS = 100;
const TRICKLE_CONCURRENCY = 50;
const BURST = 20_000;
const BURST_LEAD_MS = Number(process.env['BENCH_BURST_LEAD_MS'] ?? 4000);
const BURST_IN_FLIGHT = 1000;
const BURST_CONCURRENCY = 200;
const IDLE_SECONDS = Number(process.env['BENCH_IDLE_SECONDS'] ?? 30);
const IDLE_SETTLE_MS = Number(process.env['BENCH_IDLE_SETTLE_MS'] ?? 2000);
const KEY_PREFIX = 'bench:';
const QUEUE = 'dq-bench';

type Scenario = 'trickle' | 'burst' | 'idle';
const ALL_CONTENDERS: Contender[] = ['ours', 'bullmq'];
const CONTENDERS = (process.env['BENCH_CONTENDERS'] ?? ALL_CONTENDERS.join(',')).split(',') as Contender[];
const NAME: Record<Contender, string> = { ours: 'nest-redis-limit DelayQueue', bullmq: 'BullMQ 6.7 delayed jobs' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
const sortNum = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => quantile(sortNum(xs), 0.5);

// ---------------------------------------------------------------------------------------------
// Redis INFO: total_commands_processed, per-command calls, CPU

interface RedisStats {
  total: number;
  calls: Map<string, number>;
  cpuMs: number;
}

async function stats(client: Redis): Promise<RedisStats> {
  const info = await client.info('all');
  const calls = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(m[1]!, Number(m[2]));
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)![1]);
  return {
    total: field('total_commands_processed'),
    calls,
    cpuMs: (field('used_cpu_sys') + field('used_cpu_user')) * 1000,
  };
}

/** Commands between two samples, less the INFO calls this bench made (`ownInfo` of them). */
function commandsBetween(a: RedisStats, b: RedisStats, ownInfo = 1): { total: number; byCommand: [string, number][] } {
  const byCommand: [string, number][] = [];
  for (const [name, calls] of b.calls) {
    const delta = calls - (a.calls.get(name) ?? 0) - (name === 'info' ? ownInfo : 0);
    if (delta > 0) byCommand.push([name, delta]);
  }
  byCommand.sort((x, y) => y[1] - x[1]);
  return { total: b.total - a.total - ownInfo, byCommand };
}

/** CPU ms every process on the machine has used (from /proc/stat), for how busy the machine was
 * with work other than this bench's: other tests on a shared machine skew every number. */
function machineCpuMs(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = fields;
  return ((user! + nice! + system! + irq! + softirq! + steal!) * 1000) / 100; // USER_HZ = 100
}

const selfCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** CPU used by other processes than the bench's (its own, its consumers', its redis-server),
 * as a % of the machine over a window. */
class CpuWindow {
  private readonly machine = machineCpuMs();
  private readonly self = selfCpuMs();
  private readonly started = now();
  private ended: [number, number, number] | undefined;

  end(): void {
    this.ended = [machineCpuMs(), selfCpuMs(), now()];
  }

  /** % of the machine used by other processes, given the CPU ms our redis-server and consumers used. */
  otherPercent(redisMs: number, consumersMs: number): number {
    const [machine, self, at] = this.ended!;
    const ours = redisMs + consumersMs + (self - this.self);
    return (Math.max(0, machine - this.machine - ours) / ((at - this.started) * os.availableParallelism())) * 100;
  }
}

// ---------------------------------------------------------------------------------------------
// Consumer processes

class Consumers {
  private constructor(private readonly children: ChildProcess[]) {}

  static async start(contender: Contender, url: string, concurrency: number, monitorLoop = false): Promise<Consumers> {
    const script = fileURLToPath(new URL('./delay-queue.worker.js', import.meta.url));
    const children: ChildProcess[] = [];
    const ready: Promise<void>[] = [];
    for (let p = 0; p < PROCESSES; p++) {
      const config: WorkerConfig = { contender, url, queue: QUEUE, consumers: CONSUMERS_PER_PROCESS, concurrency, keyPrefix: KEY_PREFIX, monitorLoop };
      const child = fork(script, [JSON.stringify(config)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      children.push(child);
      ready.push(
        new Promise((resolve, reject) => {
          child.once('exit', (code) => reject(new Error(`consumer process exited with ${code} before it was ready`)));
          child.once('message', (message: ChildMessage) => {
            if (message.type !== 'ready') return reject(new Error(`unexpected ${message.type}`));
            // calibrated, the clock is Date.now() plus the fraction of the current ms: within [0, 1)
            if (message.clockSkewMs < -0.25 || message.clockSkewMs > 1.25) console.error(`warning: child clock skew ${message.clockSkewMs.toFixed(2)} ms`);
            resolve();
          });
        }),
      );
    }
    await Promise.all(ready);
    return new Consumers(children);
  }

  /** Starts the CPU accounting window in every process. */
  mark(): void {
    for (const child of this.children) child.send({ type: 'mark' });
  }

  async stop(): Promise<WorkerReport[]> {
    return Promise.all(
      this.children.map(
        (child) =>
          new Promise<WorkerReport>((resolve, reject) => {
            const timer = setTimeout(() => {
              child.kill('SIGKILL');
              reject(new Error('consumer process did not stop within 20 s'));
            }, 20_000);
            child.on('message', (message: ChildMessage) => {
              if (message.type === 'report') {
                clearTimeout(timer);
                resolve(message.report);
              }
            });
            child.send({ type: 'stop' });
          }),
      ),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Producers

interface Producer {
  /** Enqueues message i, due `delayMs` from now. */
  after(i: number, delayMs: number): Promise<unknown>;
  /** Enqueues messages [from, to), all due at `runAt` (ms since the epoch). */
  batchAt(from: number, to: number, runAt: number): Promise<unknown>;
  /** Messages scheduled or being handled (not yet acknowledged). */
  pending(): Promise<number>;
  close(): Promise<void>;
}

async function producer(contender: Contender, url: string): Promise<Producer> {
  if (contender === 'ours') {
    const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: url, keyPrefix: KEY_PREFIX }), {
      logger: ['error', 'warn'],
    });
    const queues = app.get(DelayQueueService);
    return {
      after: (i, delayMs) => queues.enqueue(QUEUE, { i }, { delayMs }),
      batchAt: (from, to, runAt) => Promise.all(Array.from({ length: to - from }, (_, k) => queues.enqueue(QUEUE, { i: from + k }, { runAt }))),
      pending: async () => {
        const size = await queues.size(QUEUE);
        return size.scheduled + size.inFlight;
      },
      close: () => app.close(),
    };
  }
  const { hostname, port } = new URL(url);
  const queue = new Queue(QUEUE, { connection: { host: hostname, port: Number(port), maxRetriesPerRequest: null } });
  await queue.waitUntilReady();
  return {
    after: (i, delayMs) => queue.add('m', { i }, { delay: delayMs, removeOnComplete: true }),
    batchAt: (from, to, runAt) => {
      const timestamp = Date.now();
      return queue.addBulk(
        Array.from({ length: to - from }, (_, k) => ({
          name: 'm',
          data: { i: from + k },
          // timestamp + delay is the job's due time: the same instant for every job
          opts: { timestamp, delay: runAt - timestamp, removeOnComplete: true },
        })),
      );
    },
    pending: async () => {
      const counts: Record<string, number> = await queue.getJobCounts('delayed', 'wait', 'active', 'prioritized');
      return Object.values(counts).reduce((a, b) => a + b, 0);
    },
    close: () => queue.close(),
  };
}

// ---------------------------------------------------------------------------------------------
// Scenarios

interface Delivery {
  expected: number;
  handled: number;
  lost: number;
  duplicates: number;
  lateness: number[]; // sorted, ms
  lastStart: number;
  firstStart: number;
  perConsumer: number[];
}

function deliveries(reports: WorkerReport[], expected: number): Delivery {
  const seen = new Uint32Array(expected);
  const lateness: number[] = [];
  const perConsumer: number[] = [];
  let lastStart = -Infinity;
  let firstStart = Infinity;
  let handled = 0;
  reports.forEach((r, p) => {
    for (let k = 0; k < r.handled.i.length; k++) {
      handled++;
      const i = r.handled.i[k]!;
      if (i >= 0 && i < expected) seen[i]!++;
      const start = r.handled.start[k]!;
      lateness.push(start - r.handled.runAt[k]!);
      lastStart = Math.max(lastStart, start);
      firstStart = Math.min(firstStart, start);
      const c = p * CONSUMERS_PER_PROCESS + r.handled.consumer[k]!;
      perConsumer[c] = (perConsumer[c] ?? 0) + 1;
    }
  });
  let lost = 0;
  let duplicates = 0;
  for (const count of seen) {
    if (count === 0) lost++;
    else duplicates += count - 1;
  }
  return { expected, handled, lost, duplicates, lateness: sortNum(lateness), lastStart, firstStart, perConsumer };
}

/** Consumer processes' event loops: worst process's p99 timer delay, max, GC pauses (count, max ms). */
interface LoopStats {
  delayP99: number;
  delayMax: number;
  gcPauses: number;
  gcMaxMs: number;
  gcTotalMs: number;
}

function loopStats(reports: WorkerReport[]): LoopStats {
  return {
    delayP99: Math.max(...reports.map((r) => r.loopDelayP99)),
    delayMax: Math.max(...reports.map((r) => r.loopDelayMax)),
    gcPauses: reports.reduce((s, r) => s + r.gcPauses, 0),
    gcMaxMs: Math.max(...reports.map((r) => r.gcPauseMaxMs)),
    gcTotalMs: reports.reduce((s, r) => s + r.gcPauseTotalMs, 0),
  };
}

/** ours only: where a message's lateness goes, from the instrumented claim calls. */
interface ClaimDiag {
  claims: number;
  emptyClaims: number;
  claimsPerMessage: number;
  meanBatch: number;
  /** claim sent − runAt (the wake-up: timer or pub/sub), p50/p99 over messages. */
  wakeP50: number;
  wakeP99: number;
  /** claim round trip, p50/p99 over messages. */
  rttP50: number;
  rttP99: number;
  /** handler start − claim reply, p50/p99 over messages. */
  dispatchP50: number;
  dispatchP99: number;
  acks: number;
  meanAckBatch: number;
  ackRttP50: number;
  ackRttP99: number;
  /** The consumer's clock-offset estimate after the delivering claim (truly ~0 here): p50, p1. */
  offsetP50: number;
  offsetP1: number;
  /** The slowest 1% of messages: mean wake-up, claim round trip and dispatch, ms. */
  slowWake: number;
  slowRtt: number;
  slowDispatch: number;
  /** Claim batch sizes in order, first process, first few (burst pattern). */
  batchPattern: number[];
}

function claimDiag(reports: WorkerReport[]): ClaimDiag | undefined {
  if (reports.every((r) => r.claims.length === 0)) return undefined;
  const wake: number[] = [];
  const rtt: number[] = [];
  const dispatch: number[] = [];
  const parts: [number, number, number][] = [];
  let claims = 0;
  let empty = 0;
  let claimed = 0;
  let acks = 0;
  let acked = 0;
  const ackRtt: number[] = [];
  for (const r of reports) {
    claims += r.claims.length;
    for (const c of r.claims) {
      if (c.n === 0) empty++;
      claimed += c.n;
    }
    for (const a of r.acks) {
      acks++;
      acked += a.n;
      ackRtt.push(a.replied - a.sent);
    }
    for (let k = 0; k < r.handled.i.length; k++) {
      const c = r.claims[r.claimOf[k]!];
      if (!c) continue;
      wake.push(c.sent - r.handled.runAt[k]!);
      rtt.push(c.replied - c.sent);
      dispatch.push(r.handled.start[k]! - c.replied);
      parts.push([wake[wake.length - 1]!, rtt[rtt.length - 1]!, dispatch[dispatch.length - 1]!]);
    }
  }
  const [w, t, d, a] = [sortNum(wake), sortNum(rtt), sortNum(dispatch), sortNum(ackRtt)];
  const offsets = sortNum(reports.flatMap((r) => r.offsets).filter((x) => !Number.isNaN(x)));
  parts.sort((x, y) => y[0] + y[1] + y[2] - (x[0] + x[1] + x[2]));
  const slow = parts.slice(0, Math.max(1, Math.ceil(parts.length / 100)));
  const mean = (k: number) => slow.reduce((s, p) => s + p[k]!, 0) / slow.length;
  return {
    claims,
    emptyClaims: empty,
    claimsPerMessage: claims / Math.max(1, claimed),
    meanBatch: claimed / Math.max(1, claims - empty),
    wakeP50: quantile(w, 0.5),
    wakeP99: quantile(w, 0.99),
    rttP50: quantile(t, 0.5),
    rttP99: quantile(t, 0.99),
    dispatchP50: quantile(d, 0.5),
    dispatchP99: quantile(d, 0.99),
    acks,
    meanAckBatch: acked / Math.max(1, acks),
    ackRttP50: quantile(a, 0.5),
    ackRttP99: quantile(a, 0.99),
    offsetP50: quantile(offsets, 0.5),
    offsetP1: quantile(offsets, 0.01),
    slowWake: mean(0),
    slowRtt: mean(1),
    slowDispatch: mean(2),
    batchPattern: reports[0]!.claims
      .filter((c) => c.n > 0)
      .slice(0, 24)
      .map((c) => c.n),
  };
}

interface TrickleResult {
  sent: number;
  enqueueErrors: number;
  delivery: Delivery;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  rate: number;
  redisCommandsPerMsg: number;
  redisCpuMs: number;
  consumerCpuMs: number;
  otherCpuPercent: number;
  loop: LoopStats;
  diag: ClaimDiag | undefined;
  errors: string[];
}

async function trickle(contender: Contender, url: string, monitor: Redis): Promise<TrickleResult> {
  const consumers = await Consumers.start(contender, url, TRICKLE_CONCURRENCY, true);
  const produce = await producer(contender, url);
  await sleep(500);
  const before = await stats(monitor);
  consumers.mark();
  const cpu = new CpuWindow();
  const total = TRICKLE_RATE * TRICKLE_SECONDS;
  const interval = 1000 / TRICKLE_RATE;
  const sends: Promise<unknown>[] = [];
  let enqueueErrors = 0;
  const t0 = now() + 20;
  for (let i = 0; i < total; i++) {
    const target = t0 + i * interval;
    const wait = target - now();
    if (wait > 1) await sleep(Math.floor(wait));
    sends.push(produce.after(i, TRICKLE_DELAY_MS).catch(() => enqueueErrors++));
  }
  const sendSeconds = (now() - t0) / 1000;
  await Promise.all(sends);
  await sleep(TRICKLE_DELAY_MS + 300);
  for (let k = 0; k < 100 && (await produce.pending()) > 0; k++) await sleep(50);
  const after = await stats(monitor);
  cpu.end();
  const reports = await consumers.stop();
  await produce.close();
  const delivery = deliveries(reports, total);
  const l = delivery.lateness;
  return {
    sent: total,
    enqueueErrors,
    delivery,
    p50: quantile(l, 0.5),
    p95: quantile(l, 0.95),
    p99: quantile(l, 0.99),
    max: l[l.length - 1] ?? NaN,
    rate: total / sendSeconds,
    redisCommandsPerMsg: commandsBetween(before, after).total / total,
    redisCpuMs: after.cpuMs - before.cpuMs,
    consumerCpuMs: reports.reduce((s, r) => s + r.cpuMs, 0),
    otherCpuPercent: cpu.otherPercent(
      after.cpuMs - before.cpuMs,
      reports.reduce((s, r) => s + r.cpuMs, 0),
    ),
    loop: loopStats(reports),
    diag: claimDiag(reports),
    errors: reports.flatMap((r) => r.errors),
  };
}

interface BurstResult {
  enqueueMs: number;
  enqueuedBeforeRunAtMs: number; // runAt − enqueue end (negative: late)
  enqueueErrors: string[];
  delivery: Delivery;
  firstStartMs: number; // first handler start − runAt
  lastStartMs: number; // last handler start − runAt
  drainedMs: number; // queue seen empty (every message acknowledged) − runAt
  throughput: number; // BURST / drainedMs
  p50: number;
  p99: number;
  consumerShare: string;
  redisCpuMs: number;
  redisCommands: number;
  consumerCpuMs: number;
  otherCpuPercent: number;
  diag: ClaimDiag | undefined;
  errors: string[];
}

async function burst(contender: Contender, url: string, monitor: Redis): Promise<BurstResult> {
  const consumers = await Consumers.start(contender, url, BURST_CONCURRENCY);
  const produce = await producer(contender, url);
  await sleep(500);
  const started = now();
  const runAt = Math.ceil(started) + BURST_LEAD_MS;
  const enqueueErrors: string[] = [];
  for (let from = 0; from < BURST; from += BURST_IN_FLIGHT) {
    await produce.batchAt(from, Math.min(BURST, from + BURST_IN_FLIGHT), runAt).catch((error: Error) => enqueueErrors.push(error.message));
  }
  const enqueued = now();
  const before = await stats(monitor);
  consumers.mark();
  const cpu = new CpuWindow();
  await sleep(runAt - now() - 5);
  let drainedAt = NaN;
  const deadline = runAt + 30_000;
  while (now() < deadline) {
    const t = now();
    if (t >= runAt && (await produce.pending()) === 0) {
      drainedAt = t; // the poll was sent at t and found nothing left
      break;
    }
    await sleep(5);
  }
  const after = await stats(monitor);
  cpu.end();
  const reports = await consumers.stop();
  await produce.close();
  const delivery = deliveries(reports, BURST);
  const polls = commandsBetween(before, after, 1);
  return {
    enqueueMs: enqueued - started,
    enqueuedBeforeRunAtMs: runAt - enqueued,
    enqueueErrors,
    delivery,
    firstStartMs: delivery.firstStart - runAt,
    lastStartMs: delivery.lastStart - runAt,
    drainedMs: drainedAt - runAt,
    throughput: BURST / ((drainedAt - runAt) / 1000),
    p50: quantile(delivery.lateness, 0.5),
    p99: quantile(delivery.lateness, 0.99),
    consumerShare: delivery.perConsumer.map((n) => n ?? 0).join('/'),
    redisCpuMs: after.cpuMs - before.cpuMs,
    redisCommands: polls.total,
    consumerCpuMs: reports.reduce((s, r) => s + r.cpuMs, 0),
    otherCpuPercent: cpu.otherPercent(
      after.cpuMs - before.cpuMs,
      reports.reduce((s, r) => s + r.cpuMs, 0),
    ),
    diag: claimDiag(reports),
    errors: reports.flatMap((r) => r.errors),
  };
}

interface IdleResult {
  perConsumerPerSecond: number;
  commands: number;
  byCommand: string;
  consumerCpuMs: number;
  errors: string[];
}

async function idle(contender: Contender, url: string, monitor: Redis): Promise<IdleResult> {
  const consumers = await Consumers.start(contender, url, TRICKLE_CONCURRENCY);
  await sleep(IDLE_SETTLE_MS);
  const before = await stats(monitor);
  consumers.mark();
  const started = now();
  await sleep(IDLE_SECONDS * 1000);
  const after = await stats(monitor);
  const seconds = (now() - started) / 1000;
  const reports = await consumers.stop();
  const { total, byCommand } = commandsBetween(before, after);
  return {
    perConsumerPerSecond: total / CONSUMERS / seconds,
    commands: total,
    byCommand: byCommand.map(([name, n]) => `${name} ${n}`).join(', '),
    consumerCpuMs: reports.reduce((s, r) => s + r.cpuMs, 0),
    errors: reports.flatMap((r) => r.errors),
  };
}

// ---------------------------------------------------------------------------------------------
// Runs and tables

type Results = { trickle: TrickleResult[]; burst: BurstResult[]; idle: IdleResult[] };

/** % of the machine busy over `ms` (nothing of the bench runs then). */
async function machineBusyPercent(ms: number): Promise<number> {
  const m0 = machineCpuMs();
  const t0 = now();
  await sleep(ms);
  return ((machineCpuMs() - m0) / ((now() - t0) * os.availableParallelism())) * 100;
}

/** With BENCH_WAIT_QUIET=s, waits up to s seconds for the machine to be under 15% busy. */
async function quiet(): Promise<number> {
  const patience = Number(process.env['BENCH_WAIT_QUIET'] ?? 0) * 1000;
  const until = now() + patience;
  let busy = await machineBusyPercent(500);
  while (busy > 15 && now() < until) busy = await machineBusyPercent(1000);
  return busy;
}

async function withFreshRedis<T>(run: (url: string, monitor: Redis) => Promise<T>): Promise<T> {
  const redis = await RedisNode.start({ own: true });
  const monitor = new Redis(redis.url);
  try {
    await monitor.ping();
    return await run(redis.url, monitor);
  } finally {
    monitor.disconnect();
    await redis.stop();
  }
}

/** "median (min–max)" of one metric over the runs. */
function cell<R>(runs: R[], f: (r: R) => number, digits = 1): string {
  const xs = runs.map(f).filter((x) => !Number.isNaN(x));
  if (xs.length === 0) return 'n/a';
  const fmt = (x: number) => x.toFixed(digits);
  if (xs.length === 1) return fmt(xs[0]!);
  return `${fmt(median(xs))} (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))})`;
}

const sum = <R>(runs: R[], f: (r: R) => number) => runs.reduce((s, r) => s + f(r), 0);

function printTables(results: Record<Contender, Results>): void {
  const row = (cells: string[]) => console.log(`| ${cells.join(' | ')} |`);
  const head = (cells: string[]) => {
    row(cells);
    row(cells.map((_, k) => (k === 0 ? '---' : '---:')));
  };
  const diagTable = (pick: (r: Results) => (ClaimDiag | undefined)[]) => {
    const runs = pick(results.ours).filter((d): d is ClaimDiag => d !== undefined);
    if (runs.length === 0) {
      console.log('(no claim calls were seen by the instrumentation: the script runner changed? no diagnosis table)\n');
      return;
    }
    head(['nest-redis-limit, where the time goes', 'median (min–max)']);
    row(['claims per delivered message', cell(runs, (d) => d.claimsPerMessage, 2)]);
    row(['empty claims (of all claims)', `${cell(runs, (d) => d.emptyClaims, 0)} of ${cell(runs, (d) => d.claims, 0)}`]);
    row(['mean messages per non-empty claim', cell(runs, (d) => d.meanBatch, 1)]);
    row(['wake-up: claim sent − runAt, p50 / p99 ms', `${cell(runs, (d) => d.wakeP50, 2)} / ${cell(runs, (d) => d.wakeP99, 2)}`]);
    row(['claim round trip, p50 / p99 ms', `${cell(runs, (d) => d.rttP50, 2)} / ${cell(runs, (d) => d.rttP99, 2)}`]);
    row(['handler start − claim reply, p50 / p99 ms', `${cell(runs, (d) => d.dispatchP50, 2)} / ${cell(runs, (d) => d.dispatchP99, 2)}`]);
    row([
      "consumer's clock-offset estimate (server − local; truly ~0 on one machine), p50 / p1 ms",
      `${cell(runs, (d) => d.offsetP50, 2)} / ${cell(runs, (d) => d.offsetP1, 2)}`,
    ]);
    row([
      'slowest 1% of messages: mean wake-up / claim round trip / dispatch ms',
      `${cell(runs, (d) => d.slowWake, 1)} / ${cell(runs, (d) => d.slowRtt, 1)} / ${cell(runs, (d) => d.slowDispatch, 1)}`,
    ]);
    row(['ack calls / mean ids per ack', `${cell(runs, (d) => d.acks, 0)} / ${cell(runs, (d) => d.meanAckBatch, 1)}`]);
    row(['ack round trip, p50 / p99 ms', `${cell(runs, (d) => d.ackRttP50, 2)} / ${cell(runs, (d) => d.ackRttP99, 2)}`]);
    console.log(`\nclaim batch sizes, first process, first non-empty claims of each run:`);
    for (const d of runs) console.log(`- ${d.batchPattern.join(' ')}`);
    console.log('');
  };

  if (CONTENDERS.some((c) => results[c].trickle.length > 0)) {
    console.log(
      `\n### Trickle: ${TRICKLE_RATE} msgs/s for ${TRICKLE_SECONDS} s, each enqueued in real time with delayMs ${TRICKLE_DELAY_MS}; ${CONSUMERS} consumers in ${PROCESSES} processes, concurrency ${TRICKLE_CONCURRENCY} each\n`,
    );
    console.log(
      'Lateness = handler start − runAt (ms; wall clock with sub-ms precision, calibrated against Date.now() in each process). Target: p50 <= 3 ms, p99 <= 10 ms.\n',
    );
    head([
      'contender',
      'sent rate /s',
      'handled',
      'lost',
      'dup',
      'lateness p50',
      'p95',
      'p99',
      'max',
      'Redis cmds/msg',
      'Redis CPU ms',
      'consumer CPU ms',
      'other load %',
      'event-loop delay p99 / max ms',
      'GC pauses',
      'longest GC ms',
    ]);
    for (const c of CONTENDERS) {
      const runs = results[c].trickle;
      row([
        NAME[c],
        cell(runs, (r) => r.rate, 0),
        cell(runs, (r) => r.delivery.handled, 0),
        String(sum(runs, (r) => r.delivery.lost)),
        String(sum(runs, (r) => r.delivery.duplicates)),
        cell(runs, (r) => r.p50, 2),
        cell(runs, (r) => r.p95, 2),
        cell(runs, (r) => r.p99, 2),
        cell(runs, (r) => r.max, 1),
        cell(runs, (r) => r.redisCommandsPerMsg, 2),
        cell(runs, (r) => r.redisCpuMs, 0),
        cell(runs, (r) => r.consumerCpuMs, 0),
        cell(runs, (r) => r.otherCpuPercent, 0),
        `${cell(runs, (r) => r.loop.delayP99, 1)} / ${cell(runs, (r) => r.loop.delayMax, 1)}`,
        cell(runs, (r) => r.loop.gcPauses, 0),
        cell(runs, (r) => r.loop.gcMaxMs, 1),
      ]);
    }
    console.log('');
    console.log(
      '"event-loop delay": how late a 1 ms timer fired in the worse of the two consumer processes during the run (that timer adds ~1,000 wake-ups/s per process, to both contenders, in this scenario only); "GC pauses": both processes, count and longest.\n',
    );
    console.log(
      '"other load %": CPU that processes other than this bench, its consumers and its redis-server used during the run, as % of the machine (2 cores = 100%).\n',
    );
    diagTable((r) => r.trickle.map((t) => t.diag));
  }

  if (CONTENDERS.some((c) => results[c].burst.length > 0)) {
    console.log(
      `\n### Burst: ${BURST.toLocaleString('en')} messages due at one instant ${BURST_LEAD_MS} ms after the enqueue began; ${CONSUMERS} consumers in ${PROCESSES} processes, concurrency ${BURST_CONCURRENCY} each\n`,
    );
    console.log(
      'Times in ms from runAt. "drained" = the queue was seen empty (every message acknowledged), polled every 5 ms; msgs/s = 20,000 / drained. Target: drained <= 1,300 ms (>= 15k msgs/s).\n',
    );
    head([
      'contender',
      'enqueue ms',
      'slack before runAt ms',
      'handled',
      'lost',
      'dup',
      'first start',
      'last start',
      'drained',
      'msgs/s',
      'lateness p50',
      'p99',
      'Redis CPU ms',
      'consumer CPU ms',
      'other load %',
    ]);
    for (const c of CONTENDERS) {
      const runs = results[c].burst;
      row([
        NAME[c],
        cell(runs, (r) => r.enqueueMs, 0),
        cell(runs, (r) => r.enqueuedBeforeRunAtMs, 0),
        cell(runs, (r) => r.delivery.handled, 0),
        String(sum(runs, (r) => r.delivery.lost)),
        String(sum(runs, (r) => r.delivery.duplicates)),
        cell(runs, (r) => r.firstStartMs, 1),
        cell(runs, (r) => r.lastStartMs, 0),
        cell(runs, (r) => r.drainedMs, 0),
        cell(runs, (r) => r.throughput, 0),
        cell(runs, (r) => r.p50, 0),
        cell(runs, (r) => r.p99, 0),
        cell(runs, (r) => r.redisCpuMs, 0),
        cell(runs, (r) => r.consumerCpuMs, 0),
        cell(runs, (r) => r.otherCpuPercent, 0),
      ]);
    }
    console.log('');
    console.log('Messages handled per consumer, each run:');
    for (const c of CONTENDERS) console.log(`- ${NAME[c]}: ${results[c].burst.map((r) => r.consumerShare).join('; ')}`);
    console.log('');
    diagTable((r) => r.burst.map((b) => b.diag));
  }

  if (CONTENDERS.some((c) => results[c].idle.length > 0)) {
    console.log(`\n### Idle: ${CONSUMERS} consumers in ${PROCESSES} processes on an empty queue for ${IDLE_SECONDS} s\n`);
    console.log("Redis total_commands_processed delta, less the bench's own INFO call, per consumer per second. Target: <= 1.\n");
    head(['contender', 'commands / consumer / s', 'commands in window', 'consumer CPU ms']);
    for (const c of CONTENDERS) {
      const runs = results[c].idle;
      row([NAME[c], cell(runs, (r) => r.perConsumerPerSecond, 3), cell(runs, (r) => r.commands, 0), cell(runs, (r) => r.consumerCpuMs, 0)]);
    }
    console.log('');
    for (const c of CONTENDERS) console.log(`- ${NAME[c]} commands, each run: ${results[c].idle.map((r) => r.byCommand).join(' | ')}`);
    console.log('');
  }

  const problems: string[] = [];
  for (const c of CONTENDERS) {
    const all = [...results[c].trickle, ...results[c].burst, ...results[c].idle];
    const errors = all.flatMap((r) => r.errors);
    if (errors.length > 0) problems.push(`${NAME[c]}: ${errors.length} consumer errors, e.g. ${[...new Set(errors)].slice(0, 3).join('; ')}`);
    const enq = results[c].trickle.reduce((s, r) => s + r.enqueueErrors, 0) + results[c].burst.reduce((s, r) => s + r.enqueueErrors.length, 0);
    if (enq > 0)
      problems.push(
        `${NAME[c]}: ${enq} enqueue errors ${results[c].burst
          .flatMap((r) => r.enqueueErrors)
          .slice(0, 2)
          .join('; ')}`,
      );
  }
  console.log(problems.length > 0 ? `Problems:\n- ${problems.join('\n- ')}` : 'No consumer or enqueue errors.');
}

async function machine(): Promise<string> {
  const redis = await RedisNode.start({ own: true });
  const client = new Redis(redis.url);
  const version = /^redis_version:(\S+)/m.exec(await client.info('server'))![1];
  client.disconnect();
  await redis.stop();
  const kernel = execFileSync('uname', ['-r']).toString().trim();
  return `nproc ${os.availableParallelism()}, ${os.cpus()[0]?.model ?? 'cpu'}, Linux ${kernel}, node ${process.version}, redis-server ${version} (default config, --save ''), BullMQ 6.7.0`;
}

/** The headline figures for `npm run bench`'s report, per contender: medians with ranges. */
function writeJson(path: string, results: Record<Contender, Results>): void {
  const of = <R>(runs: R[], f: (r: R) => number) => (runs.length ? spread(runs.map(f)) : undefined);
  const out = Object.fromEntries(
    CONTENDERS.map((c) => {
      const { trickle: t, burst: b, idle: i } = results[c];
      return [
        c,
        {
          trickle: { p50: of(t, (r) => r.p50), p95: of(t, (r) => r.p95), p99: of(t, (r) => r.p99), max: of(t, (r) => r.max) },
          burst: { drainedMs: of(b, (r) => r.drainedMs), perSecond: of(b, (r) => r.throughput) },
          idle: { commandsPerConsumerPerSecond: of(i, (r) => r.perConsumerPerSecond) },
          lost: [...t, ...b].reduce((n, r) => n + r.delivery.lost, 0),
          duplicates: [...t, ...b].reduce((n, r) => n + r.delivery.duplicates, 0),
        },
      ];
    }),
  );
  writeFileSync(path, JSON.stringify(out, null, 2));
}

async function main(): Promise<void> {
  const started = now();
  console.log(`## Delay queue: nest-redis-limit vs BullMQ\n`);
  const overrides = Object.entries(process.env)
    .filter(([k]) => k.startsWith('BENCH_'))
    .map(([k, v]) => `${k}=${v} `)
    .join('');
  console.log(`Command: \`${overrides}npm run bench:queue\`\n`);
  console.log(
    `${new Date().toISOString()} — ${await machine()}; load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
  console.log(
    `${ROUNDS} rounds; each contender run gets a fresh redis-server on loopback and fresh consumer processes; contenders alternate (round 1 ours first, round 2 BullMQ first, ...), except in the idle scenario, where both idle at the same time, each on its own server.\n`,
  );
  const results: Record<Contender, Results> = {
    ours: { trickle: [], burst: [], idle: [] },
    bullmq: { trickle: [], burst: [], idle: [] },
  };
  for (const scenario of SCENARIOS) {
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? CONTENDERS : [...CONTENDERS].reverse();
      if (scenario === 'idle') {
        // idle polling is paced by timers, not by CPU: both contenders idle at once, each on its
        // own server and in its own processes, which halves this scenario's time
        const t = now();
        const runs = await Promise.all(order.map((contender) => withFreshRedis((url, monitor) => idle(contender, url, monitor))));
        order.forEach((contender, k) => {
          results[contender].idle.push(runs[k]!);
          console.error(`[${scenario} ${round + 1} ${contender}] ${runs[k]!.perConsumerPerSecond.toFixed(3)} cmds/consumer/s (${runs[k]!.byCommand})`);
        });
        console.error(`  (${((now() - t) / 1000).toFixed(1)} s)`);
        continue;
      }
      for (const contender of order) {
        const busy = await quiet();
        if (busy > 15) console.error(`machine ${busy.toFixed(0)}% busy with other work before this run`);
        const t = now();
        await withFreshRedis(async (url, monitor) => {
          if (scenario === 'trickle') {
            const r = await trickle(contender, url, monitor);
            results[contender].trickle.push(r);
            console.error(
              `[${scenario} ${round + 1} ${contender}] p50 ${r.p50.toFixed(2)} p99 ${r.p99.toFixed(2)} max ${r.max.toFixed(1)} handled ${r.delivery.handled} lost ${r.delivery.lost} dup ${r.delivery.duplicates}; other load ${r.otherCpuPercent.toFixed(0)}%, loop delay p99 ${r.loop.delayP99.toFixed(1)} ms, GC ${r.loop.gcPauses} (max ${r.loop.gcMaxMs.toFixed(1)} ms)`,
            );
          } else {
            const r = await burst(contender, url, monitor);
            results[contender].burst.push(r);
            console.error(
              `[${scenario} ${round + 1} ${contender}] enqueue ${r.enqueueMs.toFixed(0)} ms, last start ${r.lastStartMs.toFixed(0)} drained ${r.drainedMs.toFixed(0)} ms, ${r.throughput.toFixed(0)}/s handled ${r.delivery.handled} lost ${r.delivery.lost} dup ${r.delivery.duplicates}; other load ${r.otherCpuPercent.toFixed(0)}%`,
            );
          }
        });
        console.error(`  (${((now() - t) / 1000).toFixed(1)} s)`);
      }
    }
  }
  printTables(results);
  if (process.env['BENCH_JSON']) writeJson(process.env['BENCH_JSON'], results);
  console.log(`\nWhole bench: ${((now() - started) / 1000).toFixed(0)} s.`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
