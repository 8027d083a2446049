// Issue 31's exactly-once target for recurring schedules: 3 instances (modules with connections
// of their own, in this process) consume one queue on one fresh redis-server while a schedule of
// `everyMs: 100` ticks for BENCH_SECONDS (default 60) and is replaced 200 times meanwhile, from
// every instance in turn (the same interval, a new payload each time). Counts the ticks due from
// the first to the last, those that ran, those that ran twice and those skipped.
// `npm run bench -- recurring-exactly-once`.
import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { NestFactory } from '@nestjs/core';
import { DelayQueueService, RedisLimitEvents, RedisLimitModule } from '../lib/index.js';
import { RedisNode } from '../test/harness/redis-server.js';

const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 60);
const EVERY_MS = 100;
const UPSERTS = 200;
const INSTANCES = 3;
const QUEUE = 'ticks';

async function main(): Promise<void> {
  const server = await RedisNode.start();
  const apps = await Promise.all(
    Array.from({ length: INSTANCES }, () =>
      NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: server.connection, keyPrefix: 'once:' }), { logger: ['error'] }),
    ),
  );
  const queues = apps.map((app) => app.get(DelayQueueService));
  const ran: number[] = [];
  let missed = 0;
  for (const app of apps) app.get(RedisLimitEvents).on((event) => void (event.type === 'redis-limit.queue.ticks-missed' && (missed += 1)));
  const consumers = queues.map((queue) => queue.consume(QUEUE, (message) => void ran.push(Number(message.id.slice(message.id.lastIndexOf('@') + 1)))));
  const { nextRunAt: first } = await queues[0]!.schedule(QUEUE, 'tick', { everyMs: EVERY_MS, payload: 0 });
  for (let i = 1; i <= UPSERTS; i++) {
    await sleep((SECONDS * 1000) / UPSERTS);
    await queues[i % INSTANCES]!.schedule(QUEUE, 'tick', { everyMs: EVERY_MS, payload: i });
  }
  await queues[0]!.unschedule(QUEUE, 'tick');
  await sleep(1000);
  await Promise.all(consumers.map((c) => c.stop()));
  const last = Math.max(...ran);
  const due = (last - first) / EVERY_MS + 1;
  const distinct = new Set(ran);
  let skipped = 0;
  for (let tick = first; tick <= last; tick += EVERY_MS) if (!distinct.has(tick)) skipped += 1;
  console.log('### Recurring schedule, exactly once');
  console.log(
    `\n${INSTANCES} instances, everyMs ${EVERY_MS}, ${SECONDS} s, ${UPSERTS} replacements: ${due} ticks due, ${distinct.size} ran, ` +
      `${ran.length - distinct.size} twice, ${skipped} skipped, ${missed} reported missed.`,
  );
  await Promise.all(apps.map((app) => app.close()));
  await server.stop();
}

void main();
