// How promptly a handler's deadline acts (issue 30's target: msg.signal fires within timeoutMs + 50
// ms at p99, and the retry starts within backoff + 50 ms). One consumer (concurrency 50) on a fresh
// redis-server takes BENCH_TIMEOUT_MESSAGES messages, due one every 20 ms, with timeoutMs 200 and
// backoff () => 300. Each first attempt ignores its signal and runs 400 ms (so the library must
// fail it by itself, and the late end changes nothing); each second attempt returns at once.
// Lateness, in this process's clock: the signal's firing after handler start + timeoutMs, and the
// retry's start after the signal + backoff. `npm run bench -- timeouts`; in `npm run bench`, part of
// section 6 (the figures also go to the file BENCH_JSON names).
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import { DelayQueueService, RedisLimitModule } from '../lib/index.js';
import { RedisNode } from '../test/harness/redis-server.js';
import { quantile } from './common/stats.js';

const MESSAGES = Number(process.env['BENCH_TIMEOUT_MESSAGES'] ?? 500);
const TIMEOUT_MS = 200;
const BACKOFF_MS = 300;
const SPACING_MS = 20;
const QUEUE = 'timeouts-bench';

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Trace {
  start?: number;
  fired?: number;
  retry?: number;
}

async function main(): Promise<void> {
  const redis = await RedisNode.start({ own: true });
  const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: redis.url, keyPrefix: 'bench:' }), { logger: ['error'] });
  const queues = app.get(DelayQueueService);
  const traces = new Map<string, Trace>();
  const consumer = queues.consume<number>(
    QUEUE,
    async (m) => {
      const trace = traces.get(m.id)!;
      if (m.attempt > 1) {
        trace.retry ??= now();
        return;
      }
      trace.start = now();
      m.signal.addEventListener('abort', () => (trace.fired = now()), { once: true });
      await sleep(2 * TIMEOUT_MS); // ignores the signal
    },
    { concurrency: 50, timeoutMs: TIMEOUT_MS, backoff: () => BACKOFF_MS },
  );
  const first = Date.now() + 500;
  for (let i = 0; i < MESSAGES; i++) traces.set(`m${i}`, {});
  await Promise.all(Array.from({ length: MESSAGES }, (_, i) => queues.enqueue(QUEUE, i, { id: `m${i}`, runAt: first + i * SPACING_MS })));
  const deadline = Date.now() + MESSAGES * SPACING_MS + 30_000;
  while ([...traces.values()].some((t) => t.retry === undefined) && Date.now() < deadline) await sleep(100);
  await consumer.stop();
  await app.close();
  await redis.stop();

  const all = [...traces.values()];
  const complete = all.filter((t): t is Required<Trace> => t.start !== undefined && t.fired !== undefined && t.retry !== undefined);
  const sorted = (values: number[]) => values.sort((a, b) => a - b);
  const signalLate = sorted(complete.map((t) => t.fired - t.start - TIMEOUT_MS));
  const retryLate = sorted(complete.map((t) => t.retry - t.fired - BACKOFF_MS));
  const row = (values: number[]) => ({ p50: quantile(values, 0.5), p99: quantile(values, 0.99), max: values.at(-1) ?? NaN });
  const figures = {
    messages: MESSAGES,
    complete: complete.length,
    timeoutMs: TIMEOUT_MS,
    backoffMs: BACKOFF_MS,
    signal: row(signalLate),
    retry: row(retryLate),
  };
  const json = process.env['BENCH_JSON'];
  if (json) writeFileSync(json, JSON.stringify(figures));
  const ms = (n: number) => n.toFixed(1);
  process.stdout.write(
    [
      '### Deadlines: how late the signal and the retry come',
      '',
      `${MESSAGES} messages due one every ${SPACING_MS} ms, one consumer (concurrency 50), timeoutMs ${TIMEOUT_MS}, backoff ${BACKOFF_MS} ms; ` +
        `every first attempt ignores its signal. ${complete.length} of ${MESSAGES} timed out and were retried. Target (issue 30): both p99 within 50 ms.`,
      '',
      '| lateness, ms | p50 | p99 | max |',
      '|---|---:|---:|---:|',
      `| signal after handler start + timeoutMs | ${ms(figures.signal.p50)} | ${ms(figures.signal.p99)} | ${ms(figures.signal.max)} |`,
      `| retry's start after the signal + backoff | ${ms(figures.retry.p50)} | ${ms(figures.retry.p99)} | ${ms(figures.retry.max)} |`,
      '',
    ].join('\n'),
  );
}

await main();
process.exit(0);
