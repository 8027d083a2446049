// One consumer process of the delay-queue bench (bench/delay-queue.bench.ts forks two): it
// starts `consumers` consumers of one queue — nest-redis-limit `consume()` calls on one
// application context, or BullMQ Workers — whose handler only records when it started. On
// 'stop' it shuts down cleanly and sends the records back over IPC.
import 'reflect-metadata';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { NestFactory } from '@nestjs/core';
import { Worker, type Job } from 'bullmq';
import { DelayQueueService, RedisLimitModule, type DelayedMessage } from '../lib/index.js';
import { RedisConnection } from '../lib/redis/redis-connection.js';
import type { ScriptCall, ScriptReply } from '../lib/redis/scripts.js';
import { now } from './delay-queue.clock.js';

export type Contender = 'ours' | 'bullmq';

export interface WorkerConfig {
  contender: Contender;
  url: string;
  queue: string;
  /** Consumers in this process. */
  consumers: number;
  concurrency: number;
  /** Key prefix of nest-redis-limit (the producer uses the same). */
  keyPrefix: string;
  /** Watch the event loop with a 1 ms timer (costs ~1,000 wake-ups/s: trickle only). */
  monitorLoop: boolean;
}

/** What a process sends back on 'stop'. Per handled message: i, runAt, handler start, consumer. */
export interface WorkerReport {
  handled: { i: number[]; runAt: number[]; start: number[]; consumer: number[] };
  /** ours only: every claim and ack script call (sent, replied: wall-clock ms; n: messages). */
  claims: { sent: number; replied: number; n: number }[];
  acks: { sent: number; replied: number; n: number }[];
  /** Per handled message (ours): the index in `claims` of the claim that delivered it. */
  claimOf: number[];
  /** Per handled message (ours): the consumer's estimate of server clock − local clock (ms) right
   * after the claim that delivered it; it plans the next wake-up. One machine: truly ~0. */
  offsets: number[];
  cpuMs: number;
  /** Between 'mark' and 'stop': how late a 1 ms timer fired (event-loop delay), and GC pauses. */
  loopDelayP50: number;
  loopDelayP99: number;
  loopDelayMax: number;
  gcPauses: number;
  gcPauseMaxMs: number;
  gcPauseTotalMs: number;
  errors: string[];
}

export type ParentMessage = { type: 'stop' } | { type: 'mark' };
export type ChildMessage = { type: 'ready'; clockSkewMs: number } | { type: 'report'; report: WorkerReport };

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2]!) as WorkerConfig;
  const report: WorkerReport = {
    handled: { i: [], runAt: [], start: [], consumer: [] },
    claims: [],
    acks: [],
    claimOf: [],
    offsets: [],
    cpuMs: 0,
    loopDelayP50: NaN,
    loopDelayP99: NaN,
    loopDelayMax: NaN,
    gcPauses: 0,
    gcPauseMaxMs: 0,
    gcPauseTotalMs: 0,
    errors: [],
  };
  const record = (i: number, runAt: number, consumer: number, claim = -1) => {
    report.handled.start.push(now());
    report.handled.i.push(i);
    report.handled.runAt.push(runAt);
    report.handled.consumer.push(consumer);
    report.claimOf.push(claim);
  };
  let cpu = process.cpuUsage();
  const loop = monitorEventLoopDelay({ resolution: 1 });
  if (config.monitorLoop) loop.enable();
  let gcFrom = Infinity;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.startTime < gcFrom) continue;
      report.gcPauses++;
      report.gcPauseTotalMs += entry.duration;
      report.gcPauseMaxMs = Math.max(report.gcPauseMaxMs, entry.duration);
    }
  }).observe({ entryTypes: ['gc'] });
  let stop: () => Promise<void>;

  if (config.contender === 'ours') {
    const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: config.url, keyPrefix: config.keyPrefix }), {
      logger: ['error', 'warn'],
    });
    // Instrumentation for the diagnosis: time every claim and ack round trip and note which
    // claim delivered which message. One wrapper around the library's script runner; the
    // library itself is untouched.
    // The wrapper sits on the lowest script call the runner has (`send`, which `call` goes
    // through), so every claim and ack passes it exactly once.
    const scripts = app.get(RedisConnection).scripts;
    const send = scripts.send.bind(scripts);
    const claimById = new Map<string, number>();
    const timed: typeof scripts.send = (name, call) => {
      const sent = now();
      const pending = send(name, call);
      if (name !== 'queueClaim' && name !== 'queueAck') return pending;
      void pending.then(
        (reply) => {
          const replied = now();
          if (name === 'queueAck') {
            report.acks.push({ sent, replied, n: (call as ScriptCall<'queueAck'>).args.leases.length });
          } else {
            const { messages } = reply as ScriptReply<'queueClaim'>;
            const index = report.claims.push({ sent, replied, n: messages.length }) - 1;
            for (const { id } of messages) claimById.set(id, index);
          }
        },
        (error: Error) => report.errors.push(`${name}: ${error.message}`),
      );
      return pending;
    };
    scripts.send = timed;
    const queues = app.get(DelayQueueService);
    for (let c = 0; c < config.consumers; c++) {
      // a private field of the library's consumer, read for the diagnosis only (NaN if renamed)
      let consumer: { schedule?: { offsetMs?: number } } = {};
      consumer = queues.consume<{ i: number }>(
        config.queue,
        (msg: DelayedMessage<{ i: number }>) => {
          record(msg.payload.i, msg.runAt, c, claimById.get(msg.id) ?? -1);
          report.offsets.push(consumer.schedule?.offsetMs ?? NaN);
          claimById.delete(msg.id);
        },
        { concurrency: config.concurrency },
      ) as unknown as { schedule?: { offsetMs?: number } };
    }
    stop = () => app.close();
  } else {
    const { hostname, port } = new URL(config.url);
    const workers: Worker[] = [];
    for (let c = 0; c < config.consumers; c++) {
      const worker = new Worker(
        config.queue,
        async (job: Job<{ i: number }>) => {
          record(job.data.i, job.timestamp + (job.opts.delay ?? 0), c);
        },
        { connection: { host: hostname, port: Number(port), maxRetriesPerRequest: null }, concurrency: config.concurrency },
      );
      worker.on('error', (error) => report.errors.push(`worker: ${error.message}`));
      worker.on('failed', (_job, error) => report.errors.push(`job failed: ${error.message}`));
      workers.push(worker);
    }
    await Promise.all(workers.map((w) => w.waitUntilReady()));
    stop = async () => {
      await Promise.all(workers.map((w) => w.close()));
    };
  }

  process.on('message', (message: ParentMessage) => {
    if (message.type === 'mark') {
      cpu = process.cpuUsage();
      loop.reset();
      gcFrom = performance.now();
      return;
    }
    void (async () => {
      const used = process.cpuUsage(cpu);
      report.cpuMs = (used.user + used.system) / 1000;
      // the histogram is in ns and counts the 1 ms resolution itself: subtract it
      if (config.monitorLoop) {
        report.loopDelayP50 = loop.percentile(50) / 1e6 - 1;
        report.loopDelayP99 = loop.percentile(99) / 1e6 - 1;
        report.loopDelayMax = loop.max / 1e6 - 1;
      }
      gcFrom = Infinity;
      try {
        await stop();
      } catch (error) {
        report.errors.push(`stop: ${(error as Error).message}`);
      }
      process.send!({ type: 'report', report } satisfies ChildMessage, () => process.exit(0));
    })();
  });
  process.send!({ type: 'ready', clockSkewMs: now() - Date.now() } satisfies ChildMessage);
}

main().catch((error: unknown) => {
  console.error('delay-queue worker failed:', error);
  process.exit(1);
});
