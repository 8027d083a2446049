// Memory per scheduled message: DelayQueueService beside BullMQ 6 delayed jobs, each with its
// default options (ours: the default key prefix and generated ids; BullMQ: its default prefix and
// counter ids, its job hash per job, delayed zset, marker and events stream). N (20,000) messages
// due in an hour with a 100-byte JSON payload, loaded in calls of 1,000 (enqueueMany / addBulk run
// the same scripts as one at a time) on a fresh redis-server per contender run, after a warm-up
// and FLUSHALL SYNC, so every key either one writes counts. Bytes per message = used_memory delta
// (less client buffers) ÷ N; then MEMORY USAGE ... SAMPLES 0 of every key, grouped by kind, says
// where the bytes go (the rest is the keyspace table and allocator rounding).
// Bytes do not depend on CPU contention: every run of both contenders goes side by side, each on
// its own server. `npm run bench -- delay-queue-memory`; BENCH_ROUNDS (3), BENCH_MEMORY_N,
// BENCH_JSON (a file for the figures `npm run bench` reads).
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { DelayQueueService, RedisLimitModule } from '../lib/index.js';
import { RedisNode } from '../test/harness/redis-server.js';
import { settledMemory } from './common/memory.js';
import { DELAY_MS, PAYLOAD, PAYLOAD_BYTES } from './common/queue-message.js';
import { cell, formatRatio, ratio, spread, type Spread } from './common/stats.js';

type Contender = 'ours' | 'bullmq';
const N = Number(process.env['BENCH_MEMORY_N'] ?? 20_000);
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const BATCH = 1000;
const QUEUE = 'reminders';
const TARGET = 0.5; // issue 16: at most half of BullMQ's bytes per delayed job
const NAME: Record<Contender, string> = { ours: 'nest-redis-limit DelayQueue', bullmq: 'BullMQ 6.7 delayed job' };

/** Bytes of every key of one kind after the load (a BullMQ job's id in its key name reads `<id>`). */
interface KeyKind {
  kind: string;
  encoding: string;
  keys: number;
  bytes: number;
}

interface Run {
  bytesPerMessage: number;
  keys: number;
  kinds: KeyKind[];
}

/** One contender's run: N messages into a fresh server, bytes per message and where they went. */
async function measure(contender: Contender): Promise<Run> {
  const server = await RedisNode.start({ own: true });
  const admin = new Redis(server.url);
  try {
    let add: (count: number) => Promise<unknown>;
    let close: () => Promise<unknown>;
    if (contender === 'ours') {
      const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: server.url }), { logger: ['error', 'warn'] });
      const queues = app.get(DelayQueueService);
      add = (count) =>
        queues.enqueueMany(
          QUEUE,
          Array.from({ length: count }, () => ({ payload: PAYLOAD, delayMs: DELAY_MS })),
        );
      close = () => app.close();
    } else {
      const queue = new Queue(QUEUE, { connection: { host: server.host, port: server.port, maxRetriesPerRequest: null } });
      await queue.waitUntilReady();
      add = (count) => queue.addBulk(Array.from({ length: count }, () => ({ name: 'reminder', data: PAYLOAD, opts: { delay: DELAY_MS } })));
      close = () => queue.close();
    }
    // warm-up: scripts cached (FLUSHALL keeps them) and connections up before the baseline
    await add(1);
    await admin.call('FLUSHALL', 'SYNC');
    const before = await settledMemory(admin);
    for (let sent = 0; sent < N; sent += BATCH) await add(Math.min(BATCH, N - sent));
    const after = await settledMemory(admin);
    const run = { bytesPerMessage: (after - before) / N, keys: await admin.dbsize(), kinds: await keyKinds(admin) };
    await close();
    return run;
  } finally {
    admin.disconnect();
    await server.stop();
  }
}

/** MEMORY USAGE of every key, summed by kind. */
async function keyKinds(admin: Redis): Promise<KeyKind[]> {
  const kinds = new Map<string, KeyKind>();
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'COUNT', 1000);
    cursor = next;
    const p = admin.pipeline();
    for (const key of keys) p.call('MEMORY', 'USAGE', key, 'SAMPLES', '0').call('OBJECT', 'ENCODING', key);
    const replies = (await p.exec())!.map(([error, reply]) => {
      if (error) throw error;
      return reply;
    });
    keys.forEach((key, i) => {
      const kind = key.replace(/:\d+$/, ':<id>');
      const entry = kinds.get(kind) ?? { kind, encoding: String(replies[2 * i + 1]), keys: 0, bytes: 0 };
      entry.keys += 1;
      entry.bytes += Number(replies[2 * i]);
      kinds.set(kind, entry);
    });
  } while (cursor !== '0');
  return [...kinds.values()].sort((a, b) => b.bytes - a.bytes);
}

export interface QueueMemoryFigures {
  /** Bytes per scheduled message, over the runs. */
  ours: Spread;
  bullmq: Spread;
  /** Keys after the load of N messages (first run). */
  keys: Record<Contender, number>;
  n: number;
}

const runs: Record<Contender, Run[]> = { ours: [], bullmq: [] };
await Promise.all(
  Array.from({ length: ROUNDS }, async () => {
    for (const contender of ['ours', 'bullmq'] as Contender[]) runs[contender].push(await measure(contender));
  }),
);
const bytes = (c: Contender) => spread(runs[c].map((r) => r.bytesPerMessage));
const ours = bytes('ours');
const bullmq = bytes('bullmq');
const where = (run: Run) =>
  [
    ...run.kinds.map((k) => `\`${k.kind}\` (${k.encoding}${k.keys > 1 ? ` ×${k.keys.toLocaleString('en-US')}` : ''}) ${(k.bytes / N).toFixed(1)}`),
    `keyspace and rounding ${(run.bytesPerMessage - run.kinds.reduce((sum, k) => sum + k.bytes, 0) / N).toFixed(1)}`,
  ].join('; ');
const perMessage = (c: Contender) => `${runs[c][0]!.keys.toLocaleString('en-US')} (${(runs[c][0]!.keys / N).toFixed(4)})`;
process.stdout.write(
  [
    `### Memory per scheduled message: ${N.toLocaleString('en-US')} delayed messages, ${PAYLOAD_BYTES}-byte payload`,
    '',
    `${N.toLocaleString('en-US')} messages due in an hour, each contender with its default options (ours: key prefix \`rl:\`, generated ids; ` +
      'BullMQ: prefix `bull`, counter ids), loaded in calls of 1,000 (enqueueMany / addBulk) on a fresh redis-server after a warm-up and FLUSHALL SYNC. ' +
      `Bytes per message: used_memory delta (less client buffers) ÷ ${N.toLocaleString('en-US')}, median (min–max) of ${ROUNDS} runs side by side. ` +
      'Where they go: MEMORY USAGE ... SAMPLES 0 of every key after the load, by kind (with its OBJECT ENCODING), ÷ messages (first run); the rest is the keyspace table and allocator rounding. ' +
      "BullMQ's events stream is trimmed near 10,000 entries (two per delayed job here), so its share falls as a queue grows. " +
      `Target (issue 16): at most ${TARGET}× BullMQ's bytes per delayed job.`,
    '',
    '| contender | bytes per message | keys after the load (per message) | where the bytes go, per message | ÷ BullMQ | target |',
    '|---|---:|---:|---|---:|---|',
    `| ${NAME.ours} | ${cell(ours, 1)} | ${perMessage('ours')} | ${where(runs.ours[0]!)} | ${formatRatio(ratio(ours, bullmq))} | <= ${TARGET}× |`,
    `| ${NAME.bullmq} | ${cell(bullmq, 1)} | ${perMessage('bullmq')} | ${where(runs.bullmq[0]!)} | | |`,
    '',
  ].join('\n'),
);
if (process.env['BENCH_JSON']) {
  const figures: QueueMemoryFigures = { ours, bullmq, keys: { ours: runs.ours[0]!.keys, bullmq: runs.bullmq[0]!.keys }, n: N };
  writeFileSync(process.env['BENCH_JSON'], JSON.stringify(figures, null, 2));
}
process.exit(0);
