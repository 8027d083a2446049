// Rate-limited consumption, per tenant: DelayQueueService.consume with rateLimit
// { limit: 10, windowMs: 1000, algorithm: 'fixed-window', key: the tenant } beside BullMQ 6's
// Worker limiter { max: 100, duration: 1000 } (10 tenants x 10: the same total, but global, as
// BullMQ's open-source limiter is: it cannot tell tenants apart).
// 10 tenants, each with a backlog larger than the run can drain (10 x (seconds + 2) + 20
// messages), enqueued tenant by tenant, all due at once; 2 consumers (concurrency 50 each) in one
// process, a fresh redis-server per contender. Handler starts are counted per tenant per second of
// the local clock (the server runs on this machine: its TIME is this clock, so the seconds are the
// fixed windows), over BENCH_RATE_SECONDS whole seconds after the one of the first start.
// The contenders run at the same time, each in a process of its own (this file again, with one
// contender) on a server of its own: the figure is the limit, not CPU (100 starts a second each),
// and it halves the time `npm run bench` spends here.
// `npm run bench -- delay-queue-rate`; BENCH_RATE_SECONDS (default 30), BENCH_CONTENDERS,
// BENCH_JSON names a file for the figures (`npm run bench` reads it).
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { NestFactory } from '@nestjs/core';
import { Queue, Worker, type Job } from 'bullmq';
import { DelayQueueService, RedisLimitModule, type DelayedMessage } from '../lib/index.js';
import { RedisNode } from '../test/harness/redis-server.js';

type Contender = 'ours' | 'bullmq';
const SECONDS = Number(process.env['BENCH_RATE_SECONDS'] ?? 30);
const CONTENDERS = (process.env['BENCH_CONTENDERS'] ?? 'ours,bullmq').split(',') as Contender[];
const TENANTS = 10;
const LIMIT = 10;
const TARGET_MEAN = 9.5; // issue 16: starts per tenant per second reach at least this
const WINDOW_MS = 1000;
const BACKLOG = LIMIT * (SECONDS + 2) + 20;
const CONSUMERS = 2;
const CONCURRENCY = 50;
const QUEUE = 'rate-bench';
const NAME: Record<Contender, string> = {
  ours: 'nest-redis-limit DelayQueue, rateLimit 10/s per tenant',
  bullmq: 'BullMQ 6.7 Worker, limiter 100/s (global)',
};

interface Start {
  tenant: number;
  at: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Tenant-major: every tenant's backlog after the one before, as a busy tenant's burst arrives. */
const backlog = () => Array.from({ length: TENANTS * BACKLOG }, (_, i) => ({ tenant: Math.floor(i / BACKLOG), n: i % BACKLOG }));
const idOf = (m: { tenant: number; n: number }) => `t${String(m.tenant).padStart(2, '0')}-${String(m.n).padStart(5, '0')}`;

async function runOurs(redis: RedisNode, starts: Start[]): Promise<() => Promise<void>> {
  const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: redis.url, keyPrefix: 'bench:' }), { logger: ['error', 'warn'] });
  const queues = app.get(DelayQueueService);
  const messages = backlog();
  const runAt = Date.now();
  for (let i = 0; i < messages.length; i += 500) {
    await Promise.all(messages.slice(i, i + 500).map((m) => queues.enqueue(QUEUE, m, { id: idOf(m), runAt })));
  }
  const rateLimit = {
    limit: LIMIT,
    windowMs: WINDOW_MS,
    algorithm: 'fixed-window' as const,
    key: (m: DelayedMessage) => `t${(m.payload as { tenant: number }).tenant}`,
  };
  const consumers = Array.from({ length: CONSUMERS }, () =>
    queues.consume<{ tenant: number }>(QUEUE, (m) => void starts.push({ tenant: m.payload.tenant, at: Date.now() }), { concurrency: CONCURRENCY, rateLimit }),
  );
  return async () => {
    await Promise.all(consumers.map((c) => c.stop()));
    await app.close();
  };
}

async function runBullmq(redis: RedisNode, starts: Start[]): Promise<() => Promise<void>> {
  const connection = { host: redis.host, port: redis.port, maxRetriesPerRequest: null };
  const queue = new Queue(QUEUE, { connection });
  const messages = backlog();
  for (let i = 0; i < messages.length; i += 1000) {
    await queue.addBulk(messages.slice(i, i + 1000).map((m) => ({ name: 'm', data: m, opts: { jobId: idOf(m), removeOnComplete: true } })));
  }
  const workers = Array.from(
    { length: CONSUMERS },
    () =>
      new Worker(QUEUE, async (job: Job<{ tenant: number }>) => void starts.push({ tenant: job.data.tenant, at: Date.now() }), {
        connection,
        concurrency: CONCURRENCY,
        limiter: { max: LIMIT * TENANTS, duration: WINDOW_MS },
      }),
  );
  return async () => {
    await Promise.all(workers.map((w) => w.close()));
    await queue.close();
  };
}

export interface RateResult {
  contender: Contender;
  /** Most starts of one tenant in one second. */
  max: number;
  /** Fewest starts of one tenant in one second. */
  min: number;
  /** Starts per tenant per second, the mean over tenants and seconds. */
  mean: number;
  /** The lowest and highest per-tenant mean. */
  tenantMeans: [number, number];
  seconds: number;
}

function summarize(contender: Contender, starts: Start[]): RateResult {
  const first = Math.floor(starts[0]!.at / 1000);
  // whole seconds only: the first (partial) is left out
  const seconds = Array.from({ length: SECONDS }, (_, i) => first + 1 + i);
  const counts = Array.from({ length: TENANTS }, () => new Map<number, number>());
  for (const s of starts) counts[s.tenant]!.set(Math.floor(s.at / 1000), (counts[s.tenant]!.get(Math.floor(s.at / 1000)) ?? 0) + 1);
  const cells = counts.flatMap((perSecond) => seconds.map((s) => perSecond.get(s) ?? 0));
  const means = counts.map((perSecond) => seconds.reduce((sum, s) => sum + (perSecond.get(s) ?? 0), 0) / seconds.length);
  return {
    contender,
    max: Math.max(...cells),
    min: Math.min(...cells),
    mean: cells.reduce((a, b) => a + b, 0) / cells.length,
    tenantMeans: [Math.min(...means), Math.max(...means)],
    seconds: seconds.length,
  };
}

async function run(contender: Contender): Promise<RateResult> {
  const redis = await RedisNode.start({ own: true });
  const starts: Start[] = [];
  try {
    const stop = await (contender === 'ours' ? runOurs : runBullmq)(redis, starts);
    while (starts.length === 0) await sleep(5);
    // until the last measured second has ended
    await sleep((Math.floor(starts[0]!.at / 1000) + SECONDS + 1) * 1000 + 50 - Date.now());
    await stop();
    return summarize(contender, starts);
  } finally {
    await redis.stop();
  }
}

/** One contender in a process of its own, which writes its result to a file. */
function inChild(contender: Contender): Promise<RateResult> {
  const file = `${os.tmpdir()}/nrl-bench-rate-${process.pid}-${contender}.json`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
      env: { ...process.env, BENCH_CONTENDERS: contender, BENCH_RATE_CHILD: file },
      stdio: ['ignore', 2, 'inherit'], // this process's stdout is for its table
    });
    child.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(readFileSync(file, 'utf8')) as RateResult) : reject(new Error(`rate bench for ${contender} exited with ${code}`)),
    );
  });
}

if (process.env['BENCH_RATE_CHILD']) {
  writeFileSync(process.env['BENCH_RATE_CHILD'], JSON.stringify(await run(CONTENDERS[0]!)));
  process.exit(0);
}
const results = CONTENDERS.length === 1 ? [await run(CONTENDERS[0]!)] : await Promise.all(CONTENDERS.map(inChild));
const fmt = (n: number) => n.toFixed(2);
const target = `max <= ${LIMIT}, mean >= ${TARGET_MEAN}`;
const lines = [
  `### Rate-limited consumption: ${TENANTS} tenants, ${LIMIT} starts per tenant per second`,
  '',
  `${TENANTS} tenants with a backlog each (enqueued tenant by tenant, all due at once), ${CONSUMERS} consumers × concurrency ${CONCURRENCY} in one process, ` +
    `a fresh redis-server per contender; the contenders run at the same time, each in a process of its own. Handler starts per tenant in each of ` +
    `${SECONDS} whole seconds after the first start's. Target (issue 16): never above ${LIMIT}, a mean of at least ${TARGET_MEAN}; ` +
    "BullMQ's open-source limiter is global (the same 100 a second in all), so it cannot be held to it.",
  '',
  '| contender | starts per tenant-second: max | min | mean | per-tenant mean, lowest–highest | target |',
  '|---|---:|---:|---:|---|---|',
  ...results.map(
    (r) =>
      `| ${NAME[r.contender]} | ${r.max} | ${r.min} | ${fmt(r.mean)} | ${fmt(r.tenantMeans[0])}–${fmt(r.tenantMeans[1])} | ${r.contender === 'ours' ? target : ''} |`,
  ),
  '',
];
process.stdout.write(lines.join('\n'));
if (process.env['BENCH_JSON']) writeFileSync(process.env['BENCH_JSON'], JSON.stringify(Object.fromEntries(results.map((r) => [r.contender, r])), null, 2));
process.exit(0);
