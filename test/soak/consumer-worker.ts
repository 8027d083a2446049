// A soak consumer: handles the delay messages the web workers enqueue, and the expiry
// notifications of lapsed MaxPending slots. Each completed handler appends the id (for a
// notification, "<key>/<field>") to this process' file before returning (a synchronous write: a
// SIGKILL cannot lose a line already written), so the controller can tell handled-once from
// handled-twice.
import 'reflect-metadata';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DelayQueueService, RedisLimitEvents, RedisLimitModule, RetryLater, type ExpiredField } from '../../lib/index.js';
import { now, runWorker, shareClock, SOAK, type WorkerConfig } from './config.js';

const config = JSON.parse(process.argv[2]!) as WorkerConfig;
shareClock(config.clockOffsetMs);

@Module({
  imports: [RedisLimitModule.forRoot({ redis: config.redisUrl, keyPrefix: SOAK.keyPrefix, commandTimeoutMs: SOAK.commandTimeoutMs })],
})
class ConsumerModule {}

async function main(): Promise<() => Promise<string>> {
  const app = await NestFactory.createApplicationContext(ConsumerModule, { logger: ['error', 'warn'] });
  const file = join(config.dir, `${config.name}.handled`);
  appendFileSync(file, '');
  const { concurrency, visibilityTimeoutMs, timeoutMs, maxAttempts, backoffMs, maxBackoffMs, rateLimit, concurrencyPerKey } = SOAK.queue;
  // each handler run that ended on its own (its signal never fired): tenant, start, end, for the
  // controller to count a tenant's handlers at once
  const runs = join(config.dir, `${config.name}.runs`);
  appendFileSync(runs, '');
  // each adaptive limit a RetryLater with pauseKey left, for the controller to check its bounds
  const adaptive = join(config.dir, `${config.name}.adaptive`);
  appendFileSync(adaptive, '');
  // each delay message whose ack was given up (an outage outlasted its lease): delivered again
  const unacked = join(config.dir, `${config.name}.unacked`);
  appendFileSync(unacked, '');
  // each recurring tick handled, and each range of ticks a consumer found missed
  const ticks = join(config.dir, `${config.name}.ticks`);
  appendFileSync(ticks, '');
  const missed = join(config.dir, `${config.name}.missed`);
  appendFileSync(missed, '');
  const ticksUnacked = join(config.dir, `${config.name}.ticks-unacked`);
  appendFileSync(ticksUnacked, '');
  app.get(RedisLimitEvents).on((event) => {
    if (event.type === 'redis-limit.queue.ticks-missed') appendFileSync(missed, `${event.from} ${event.to}\n`);
    if (event.type === 'redis-limit.queue.unacknowledged' && event.queue === SOAK.recurring.queue) appendFileSync(ticksUnacked, `${event.id}\n`);
    if (event.type === 'redis-limit.queue.retry-later' && event.adaptiveLimit !== undefined) appendFileSync(adaptive, `${event.adaptiveLimit}\n`);
    if (event.type === 'redis-limit.queue.unacknowledged' && event.queue === SOAK.queue.name) appendFileSync(unacked, `${event.id}\n`);
  });
  const consumer = app.get(DelayQueueService).consume<{ id: string }>(
    SOAK.queue.name,
    async (message) => {
      const start = now();
      try {
        const roll = Math.random();
        // an upstream's 429 for the tenant now and then
        if (roll < 0.05) throw new RetryLater(Math.floor(Math.random() * 200), { pauseKey: roll < 0.02 });
        // an overrun rejects with the signal's AbortError at the deadline, before the write: a
        // timed-out attempt must never count as handled
        await sleep(roll < 0.07 ? timeoutMs * 2 : Math.random() * 20, undefined, { signal: message.signal });
        appendFileSync(file, `${message.payload.id}\n`);
      } finally {
        // a run whose signal fired (timeout, lease lost, stop) may outlive its slot: not counted
        if (!message.signal.aborted) appendFileSync(runs, `${tenantOf(message.payload.id)} ${start} ${now()}\n`);
      }
    },
    {
      concurrency,
      visibilityTimeoutMs,
      timeoutMs,
      maxAttempts,
      backoffMs,
      maxBackoffMs,
      rateLimit: { limit: rateLimit.limit, windowMs: rateLimit.windowMs, key: (m) => tenantOf(m.payload.id), adaptive: true },
      concurrencyPerKey: { limit: concurrencyPerKey.limit, key: (m) => tenantOf(m.payload.id) },
    },
  );
  const tickConsumer = app.get(DelayQueueService).consume(SOAK.recurring.queue, (message) => appendFileSync(ticks, `${message.id}\n`), {
    maxAttempts: SOAK.queue.maxAttempts,
    visibilityTimeoutMs: SOAK.queue.visibilityTimeoutMs,
  });
  const lapsed = join(config.dir, `${config.name}.lapsed`);
  appendFileSync(lapsed, '');
  const notices = app.get(DelayQueueService).consume<ExpiredField>(SOAK.pending.notify, ({ payload }) => {
    appendFileSync(lapsed, `${payload.key}/${payload.field}\n`);
  });
  return async () => {
    await Promise.all([consumer.stop(), notices.stop(), tickConsumer.stop()]);
    await app.close();
    return file;
  };
}

/** A message's tenant: one of SOAK.queue.rateLimit.tenants, from its id. */
function tenantOf(id: string): string {
  let sum = 0;
  for (let i = 0; i < id.length; i++) sum += id.charCodeAt(i);
  return `t${sum % SOAK.queue.rateLimit.tenants}`;
}

runWorker(main);
