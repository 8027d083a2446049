// A separate Node process consuming one delay queue: argv[2] is JSON
//   { libDir, redis, recorder, keyPrefix, queue, consume?: ConsumeOptions, blockId?: string, blockMs?: number,
//     handleMs?: number, rateKey?: string, slotKey?: string }
// (`redis`, the module's connection, and `recorder`, the test's own: a URL or `{ cluster: { nodes } }`). It boots RedisLimitModule.forRoot({ redis, keyPrefix }) in a Nest application context and
// consumes `queue` with DelayQueueService.consume. Every delivery is recorded with its own ioredis
// client: RPUSH `<keyPrefix>started` when the handler begins and RPUSH `<keyPrefix>handled` just
// before it resolves, each entry JSON { id, attempt, pid, at }. The handler for `blockId` blocks
// `blockMs` (to be killed mid-handler); every handler takes `handleMs` (default 0). With `rateKey`, a
// `consume.rateLimit` keys messages by that payload field, and with `slotKey` a `consume.concurrencyPerKey`. Prints one JSON line { event: 'ready', pid } once consuming;
// on SIGTERM closes the application (which stops the consumer), prints
// { event: 'stopped', pid, handled } and exits 0. Library warnings and errors go to stderr.
import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { NestFactory } from '@nestjs/core';
import { Cluster, Redis } from 'ioredis';

const config = JSON.parse(process.argv[2]);
const { libDir, redis, recorder: recordTo, keyPrefix, queue, consume = {}, blockId, blockMs = 0, handleMs = 0, rateKey, slotKey } = config;
if (rateKey !== undefined) consume.rateLimit = { ...consume.rateLimit, key: (message) => message.payload[rateKey] };
if (slotKey !== undefined) consume.concurrencyPerKey = { ...consume.concurrencyPerKey, key: (message) => message.payload[slotKey] };
const { RedisLimitModule, DelayQueueService } = await import(`${libDir}/index.js`);

const toStderr =
  (level) =>
  (...parts) =>
    process.stderr.write(`[${process.pid} ${level}] ${parts.map(String).join(' ')}\n`);
const logger = { log() {}, debug() {}, verbose() {}, warn: toStderr('warn'), error: toStderr('error'), fatal: toStderr('fatal') };

const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis, keyPrefix }), { logger });
// offline queue on, retried: a record is never dropped because Redis blinked
const recorder =
  typeof recordTo === 'string'
    ? new Redis(recordTo, { maxRetriesPerRequest: null })
    : new Cluster(recordTo.cluster.nodes, { redisOptions: { maxRetriesPerRequest: null } });
recorder.on('error', () => undefined);

let handled = 0;
const record = (list, message) =>
  recorder.rpush(`${keyPrefix}${list}`, JSON.stringify({ id: message.id, attempt: message.attempt, pid: process.pid, at: Date.now() }));

const consumer = app.get(DelayQueueService).consume(
  queue,
  async (message) => {
    await record('started', message);
    if (message.id === blockId) await sleep(blockMs);
    if (handleMs > 0) await sleep(handleMs);
    await record('handled', message);
    handled += 1;
  },
  consume,
);

let stopping = false;
process.on('SIGTERM', () => {
  if (stopping) return;
  stopping = true;
  void (async () => {
    await consumer.stop();
    await app.close();
    await recorder.quit();
    process.stdout.write(`${JSON.stringify({ event: 'stopped', pid: process.pid, handled })}\n`);
    process.exit(0);
  })().catch((error) => {
    process.stderr.write(`[${process.pid}] shutdown failed: ${error?.stack ?? error}\n`);
    process.exit(1);
  });
});

process.stdout.write(`${JSON.stringify({ event: 'ready', pid: process.pid })}\n`);
