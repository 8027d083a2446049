// Issue 31's targets for seeing inside a queue and for recurring schedules, through the module on
// one fresh redis-server: `explain` (one script call, Redis CPU per call) and `list` (a page of
// 1,000 of 100,000 scheduled messages, client time and Redis CPU per page), and the idle cost of
// 100 schedules of `everyMs: 60_000` on one consumer: the commands clients send (MONITOR, less
// those scripts run inside) over BENCH_IDLE_S seconds (default 120, two ticks). Redis CPU is used_cpu_user + used_cpu_sys (INFO cpu). `npm run bench -- queue-inspection`.
import 'reflect-metadata';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { DelayQueueService, RedisLimitModule } from '../lib/index.js';
import { RedisNode } from '../test/harness/redis-server.js';
import { redisCpuSeconds } from './common/redis-cpu.js';
import { cell, spread } from './common/stats.js';

const MESSAGES = 100_000;
const PAGE = 1000;
const EXPLAINS = 5000;
const IDLE_S = Number(process.env['BENCH_IDLE_S'] ?? 120);
const SCHEDULES = 100;

/** Counts the commands clients send (MONITOR), not those scripts run inside: the cost at rest. */
async function countCommands(admin: Redis): Promise<{ count: () => number; stop: () => void }> {
  const monitor = await admin.monitor();
  let count = 0;
  monitor.on('monitor', (_time: string, _args: string[], source: string) => {
    if (source !== 'lua') count += 1;
  });
  return { count: () => count, stop: () => monitor.disconnect() };
}

async function main(): Promise<void> {
  const server = await RedisNode.start();
  const admin = new Redis(server.rawConnection);
  const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: server.connection, keyPrefix: 'inspect:' }), { logger: false });
  const queue = app.get(DelayQueueService);
  const payload = { data: 'x'.repeat(88) }; // about 100 bytes as JSON
  const runAt = Date.now() + 86_400_000;
  for (let i = 0; i < MESSAGES; i += 1000) {
    await queue.enqueueMany(
      'big',
      Array.from({ length: 1000 }, (_, j) => ({ payload, id: `m${i + j}`, runAt: runAt + ((i + j) % 5000) })),
    );
  }

  // explain: one script call each, 16 in flight
  let next = 0;
  const cpuBefore = await redisCpuSeconds(admin);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < EXPLAINS) await queue.explain('big', `m${(next++ * 7919) % MESSAGES}`);
    }),
  );
  const explainUs = (((await redisCpuSeconds(admin)) - cpuBefore) * 1e6) / EXPLAINS;
  const explainWallUs = ((performance.now() - started) * 1000) / EXPLAINS;

  // list: every page of 1,000, in order
  const pageMs: number[] = [];
  const pageCpuMs: number[] = [];
  let cursor: string | null | undefined;
  do {
    const cpu = await redisCpuSeconds(admin);
    const t = performance.now();
    const page = await queue.list('big', { state: 'scheduled', limit: PAGE, cursor });
    pageMs.push(performance.now() - t);
    pageCpuMs.push(((await redisCpuSeconds(admin)) - cpu) * 1000);
    cursor = page.cursor;
  } while (cursor !== null);

  // at rest: 100 schedules of a minute, one consumer, nothing else
  for (let i = 0; i < SCHEDULES; i++) await queue.schedule('idle', `s${i}`, { everyMs: 60_000 });
  let ran = 0;
  const consumer = queue.consume('idle', () => void (ran += 1));
  await sleep(1000);
  const counter = await countCommands(admin);
  await sleep(IDLE_S * 1000);
  const commands = counter.count();
  counter.stop();
  await consumer.stop();

  console.log('### Seeing inside a queue, and recurring schedules at rest');
  console.log(`\n${MESSAGES.toLocaleString('en')} scheduled messages (100-byte payloads), one redis-server\n`);
  console.log('| operation | Redis CPU | client time |');
  console.log('|---|---:|---:|');
  console.log(
    `| explain (${EXPLAINS.toLocaleString('en')} calls, 16 in flight) | ${explainUs.toFixed(1)} µs per call | ${explainWallUs.toFixed(1)} µs per call |`,
  );
  console.log(
    `| list, a page of ${PAGE.toLocaleString('en')} (${pageMs.length} pages) | ${cell(spread(pageCpuMs), 2)} ms per page | ${cell(spread(pageMs), 2)} ms per page |`,
  );
  console.log(
    `\nAt rest: ${SCHEDULES} schedules of everyMs 60,000 on one consumer: ${commands} Redis commands in ${IDLE_S} s, ` +
      `${(commands / IDLE_S).toFixed(2)} per second (target: at most 2); ${ran} ticks ran.`,
  );
  await app.close();
  admin.disconnect();
  await server.stop();
}

void main();
