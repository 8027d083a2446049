// An upstream whose per-tenant limit nobody told the consumers (issue 30's target): it takes 50
// calls per tenant per second (fixed one-second windows on this machine's clock) and answers
// anything above with a 429 and a Retry-After of the rest of its window. 10 tenants with a backlog
// each, all due at once; one consumer process (two consumers, concurrency 50 each) per contender,
// on a fresh redis-server, one contender after the other:
// - ours, adaptive: rateLimit { limit: 100, windowMs: 1000, key: tenant, adaptive: true } (a guess
//   twice too high), the handler throwing RetryLater(retryAfter, { pauseKey: true }) on a 429;
// - ours, told the limit: the same rateLimit with limit 50 and no adaptive;
// - BullMQ 6, whose open-source limiter is per queue: limiter { max: 500, duration: 1000 } (10 x 50,
//   the same total), and on a 429 `queue.rateLimit(retryAfter)` then `throw Worker.RateLimitError()`
//   (its documented way), which pauses the whole queue.
// Calls the upstream served per tenant per second, and the share of calls it refused, over
// BENCH_UPSTREAM_SECONDS (20) whole seconds after a warm-up of BENCH_WARMUP_SECONDS (10).
// `npm run bench -- adaptive-upstream`; BENCH_CONTENDERS (comma list of adaptive, told, bullmq). In
// `npm run bench`, its section 6 (the results also go to the file BENCH_JSON names).
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import { Queue, Worker, type Job } from 'bullmq';
import { DelayQueueService, RedisLimitModule, RetryLater, type DelayedMessage } from '../lib/index.js';
import { RedisNode } from '../test/harness/redis-server.js';

const SECONDS = Number(process.env['BENCH_UPSTREAM_SECONDS'] ?? 20);
const WARMUP = Number(process.env['BENCH_WARMUP_SECONDS'] ?? 10);
const TENANTS = 10;
const TRUE_LIMIT = 50;
const GUESS = 100;
const TARGET = 45; // calls per tenant per second after the warm-up (90% of the true limit)
const BACKLOG = TRUE_LIMIT * (WARMUP + SECONDS + 3);
const CONSUMERS = 2;
const CONCURRENCY = 50;
const QUEUE = 'upstream-bench';

type Contender = 'adaptive' | 'told' | 'bullmq';
const NAME: Record<Contender, string> = {
  adaptive: `nest-redis-limit, rateLimit ${GUESS}/s per tenant, adaptive`,
  told: `nest-redis-limit, rateLimit ${TRUE_LIMIT}/s per tenant (told the limit)`,
  bullmq: `BullMQ 6.7, limiter ${TRUE_LIMIT * TENANTS}/s (global) + RateLimitError`,
};

interface Call {
  tenant: number;
  at: number;
  ok: boolean;
}

/** The upstream: per tenant, TRUE_LIMIT calls per local-clock second; above, a 429 with its wait. */
function upstream(calls: Call[]) {
  const served = new Map<string, number>();
  return (tenant: number): { ok: true } | { ok: false; retryAfterMs: number } => {
    const now = Date.now();
    const second = Math.floor(now / 1000);
    const key = `${tenant}:${second}`;
    const n = (served.get(key) ?? 0) + 1;
    served.set(key, n);
    const ok = n <= TRUE_LIMIT;
    calls.push({ tenant, at: now, ok });
    return ok ? { ok } : { ok, retryAfterMs: (second + 1) * 1000 - now };
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const backlog = () => Array.from({ length: TENANTS * BACKLOG }, (_, i) => ({ tenant: Math.floor(i / BACKLOG), n: i % BACKLOG }));
const idOf = (m: { tenant: number; n: number }) => `t${String(m.tenant).padStart(2, '0')}-${String(m.n).padStart(5, '0')}`;

async function runOurs(redis: RedisNode, calls: Call[], adaptive: boolean): Promise<() => Promise<void>> {
  const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: redis.url, keyPrefix: 'bench:' }), { logger: ['error'] });
  const queues = app.get(DelayQueueService);
  const messages = backlog();
  const runAt = Date.now();
  for (let i = 0; i < messages.length; i += 500) {
    await Promise.all(messages.slice(i, i + 500).map((m) => queues.enqueue(QUEUE, m, { id: idOf(m), runAt })));
  }
  const call = upstream(calls);
  const rateLimit = {
    limit: adaptive ? GUESS : TRUE_LIMIT,
    windowMs: 1000,
    algorithm: 'fixed-window' as const,
    key: (m: DelayedMessage) => `t${(m.payload as { tenant: number }).tenant}`,
    adaptive,
  };
  const consumers = Array.from({ length: CONSUMERS }, () =>
    queues.consume<{ tenant: number }>(
      QUEUE,
      (m) => {
        const answer = call(m.payload.tenant);
        if (!answer.ok) throw new RetryLater(answer.retryAfterMs, { pauseKey: true });
      },
      { concurrency: CONCURRENCY, rateLimit },
    ),
  );
  return async () => {
    await Promise.all(consumers.map((c) => c.stop()));
    await app.close();
  };
}

async function runBullmq(redis: RedisNode, calls: Call[]): Promise<() => Promise<void>> {
  const connection = { host: redis.host, port: redis.port, maxRetriesPerRequest: null };
  const queue = new Queue(QUEUE, { connection });
  const messages = backlog();
  for (let i = 0; i < messages.length; i += 1000) {
    await queue.addBulk(messages.slice(i, i + 1000).map((m) => ({ name: 'm', data: m, opts: { jobId: idOf(m), removeOnComplete: true } })));
  }
  const call = upstream(calls);
  const workers: Worker[] = [];
  for (let i = 0; i < CONSUMERS; i++) {
    const worker = new Worker(
      QUEUE,
      async (job: Job<{ tenant: number }>) => {
        const answer = call(job.data.tenant);
        if (!answer.ok) {
          await queue.rateLimit(answer.retryAfterMs);
          throw Worker.RateLimitError();
        }
      },
      { connection, concurrency: CONCURRENCY, limiter: { max: TRUE_LIMIT * TENANTS, duration: 1000 } },
    );
    workers.push(worker);
  }
  return async () => {
    await Promise.all(workers.map((w) => w.close()));
    await queue.close();
  };
}

interface Result {
  contender: Contender;
  /** Served calls per tenant per second: the lowest and highest tenant's mean, and the mean. */
  lowest: number;
  highest: number;
  mean: number;
  /** Refused calls ÷ all calls, over the measured seconds. */
  refusedShare: number;
}

async function run(contender: Contender): Promise<Result> {
  const redis = await RedisNode.start({ own: true });
  const calls: Call[] = [];
  try {
    const stop = await (contender === 'bullmq' ? runBullmq(redis, calls) : runOurs(redis, calls, contender === 'adaptive'));
    while (calls.length === 0) await sleep(5);
    const first = Math.floor(calls[0]!.at / 1000) + 1 + WARMUP;
    await sleep((first + SECONDS) * 1000 + 50 - Date.now());
    await stop();
    const measured = calls.filter((c) => c.at >= first * 1000 && c.at < (first + SECONDS) * 1000);
    const perTenant = Array.from({ length: TENANTS }, (_, t) => measured.filter((c) => c.tenant === t && c.ok).length / SECONDS);
    return {
      contender,
      lowest: Math.min(...perTenant),
      highest: Math.max(...perTenant),
      mean: perTenant.reduce((a, b) => a + b, 0) / TENANTS,
      refusedShare: measured.filter((c) => !c.ok).length / Math.max(1, measured.length),
    };
  } finally {
    await redis.stop();
  }
}

const results: Result[] = [];
const CONTENDERS = (process.env['BENCH_CONTENDERS'] ?? 'adaptive,told,bullmq').split(',') as Contender[];
for (const contender of CONTENDERS) {
  console.error(`== ${contender}`);
  results.push(await run(contender));
}
const lines = [
  `### An upstream with an unknown limit: ${TRUE_LIMIT} calls per tenant per second, 429 above`,
  '',
  `${TENANTS} tenants, a backlog each, ${CONSUMERS} consumers × concurrency ${CONCURRENCY}; served calls per tenant per second and the share refused, ` +
    `over ${SECONDS} whole seconds after ${WARMUP} s of warm-up. Target (issue 30): every tenant >= ${TARGET}/s, refused <= 2%.`,
  '',
  '| contender | served per tenant-second: mean | lowest tenant | highest tenant | refused (429) |',
  '|---|---:|---:|---:|---:|',
  ...results.map(
    (r) => `| ${NAME[r.contender]} | ${r.mean.toFixed(1)} | ${r.lowest.toFixed(1)} | ${r.highest.toFixed(1)} | ${(r.refusedShare * 100).toFixed(1)}% |`,
  ),
  '',
];
const json = process.env['BENCH_JSON'];
if (json)
  writeFileSync(
    json,
    JSON.stringify({
      target: TARGET,
      trueLimit: TRUE_LIMIT,
      seconds: SECONDS,
      warmup: WARMUP,
      results: results.map((r) => ({ ...r, name: NAME[r.contender] })),
    }),
  );
process.stdout.write(lines.join('\n'));
process.exit(0);
