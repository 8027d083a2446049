// Enqueue throughput: DelayQueueService.enqueue / enqueueMany beside BullMQ 6's Queue.add /
// addBulk, delayed messages (1 h) with a 100-byte payload, a fresh redis-server per contender run.
//   one at a time: N messages, each its own call, 100 calls in flight at once (an app's request
//                  handlers enqueueing side by side);
//   bulk:          N messages in calls of 1,000 (enqueueMany / addBulk), one call at a time.
// BENCH_ROUNDS (3) rounds, contenders alternating; medians (min–max) of messages per second.
// `npm run bench -- delay-queue-enqueue`; BENCH_ENQUEUE_N (default 20,000); BENCH_JSON names a
// file for the figures (`npm run bench` reads it).
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import { Queue } from 'bullmq';
import { DelayQueueService, RedisLimitModule } from '../lib/index.js';
import { RedisNode } from '../test/harness/redis-server.js';
import { DELAY_MS, PAYLOAD, PAYLOAD_BYTES } from './common/queue-message.js';
import { cell, formatRatio, ratio, spread, type Spread } from './common/stats.js';

type Contender = 'ours' | 'bullmq';
type Mode = 'one at a time' | 'bulk';
const N = Number(process.env['BENCH_ENQUEUE_N'] ?? 20_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const IN_FLIGHT = 100;
const BULK = 1000;
const TARGET = 1.5; // issue 16: at least 1.5x BullMQ's add / addBulk
const QUEUE = 'enqueue-bench';
const NAME: Record<Contender, string> = { ours: 'nest-redis-limit DelayQueue', bullmq: 'BullMQ 6.7' };

/** Sends `total` items through `send`, `inFlight` at a time. */
async function pooled(total: number, inFlight: number, send: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < total) await send(next++);
    }),
  );
}

/** One contender, one mode, on a fresh server: messages per second. */
async function measure(contender: Contender, mode: Mode): Promise<number> {
  const redis = await RedisNode.start({ own: true });
  try {
    let enqueueOne: (i: number) => Promise<unknown>;
    let enqueueBulk: (from: number) => Promise<unknown>;
    let close: () => Promise<unknown>;
    if (contender === 'ours') {
      const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: redis.url, keyPrefix: 'bench:' }), {
        logger: ['error', 'warn'],
      });
      const queues = app.get(DelayQueueService);
      enqueueOne = (i) => queues.enqueue(QUEUE, PAYLOAD, { id: `m-${i}`, delayMs: DELAY_MS });
      enqueueBulk = (from) =>
        queues.enqueueMany(
          QUEUE,
          Array.from({ length: BULK }, (_, j) => ({ payload: PAYLOAD, id: `m-${from + j}`, delayMs: DELAY_MS })),
        );
      close = () => app.close();
    } else {
      const queue = new Queue(QUEUE, { connection: { host: redis.host, port: redis.port, maxRetriesPerRequest: null } });
      await queue.waitUntilReady();
      enqueueOne = (i) => queue.add('m', PAYLOAD, { jobId: `m-${i}`, delay: DELAY_MS });
      enqueueBulk = (from) =>
        queue.addBulk(Array.from({ length: BULK }, (_, j) => ({ name: 'm', data: PAYLOAD, opts: { jobId: `m-${from + j}`, delay: DELAY_MS } })));
      close = () => queue.close();
    }
    // warm-up: scripts loaded, connections up
    await enqueueOne(-1);
    const started = performance.now();
    if (mode === 'one at a time') await pooled(N, IN_FLIGHT, enqueueOne);
    else for (let from = 0; from < N; from += BULK) await enqueueBulk(from);
    const perSecond = N / ((performance.now() - started) / 1000);
    await close();
    return perSecond;
  } finally {
    await redis.stop();
  }
}

export type EnqueueFigures = Record<Mode, Record<Contender, Spread>>;

const figures = {} as EnqueueFigures;
const rows: string[] = [];
for (const mode of ['one at a time', 'bulk'] as Mode[]) {
  const rates: Record<Contender, number[]> = { ours: [], bullmq: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const contender of (round % 2 === 0 ? ['ours', 'bullmq'] : ['bullmq', 'ours']) as Contender[]) {
      rates[contender].push(await measure(contender, mode));
      global.gc?.();
    }
  }
  const ours = spread(rates.ours);
  const bullmq = spread(rates.bullmq);
  figures[mode] = { ours, bullmq };
  const call = mode === 'bulk' ? ['enqueueMany', 'addBulk'] : ['enqueue', 'add'];
  rows.push(`| ${mode} | ${NAME.ours} \`${call[0]}\` | ${cell(ours)} | ${formatRatio(ratio(ours, bullmq))} | >= ${TARGET}× |`);
  rows.push(`| ${mode} | ${NAME.bullmq} \`${call[1]}\` | ${cell(bullmq)} | | |`);
}
process.stdout.write(
  [
    `### Enqueue throughput: ${N.toLocaleString('en-US')} delayed messages, ${PAYLOAD_BYTES}-byte payload`,
    '',
    `Messages due in an hour, each contender run on a fresh redis-server. One at a time: ${IN_FLIGHT} calls in flight. ` +
      `Bulk: calls of ${BULK.toLocaleString('en-US')}, one at a time. Messages per second, median (min–max) of ${ROUNDS} rounds, contenders alternating; ` +
      `÷ BullMQ: the ratio of the medians (range: the ratios within each round). Target (issue 16): at least ${TARGET}× BullMQ.`,
    '',
    '| mode | contender | messages/s | ÷ BullMQ | target |',
    '|---|---|---:|---:|---|',
    ...rows,
    '',
  ].join('\n'),
);
if (process.env['BENCH_JSON']) writeFileSync(process.env['BENCH_JSON'], JSON.stringify(figures, null, 2));
process.exit(0);
