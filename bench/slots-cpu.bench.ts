// Redis CPU per concurrency slot (issue 30's target: an acquire plus its release within 2x one
// consume): RateLimiterService.acquireSlot then release(), beside consume() with the default
// algorithm (the exact sliding window) and with the fixed window, on 10,000 keys, 64 calls in
// flight, through the module. Redis CPU is used_cpu_user + used_cpu_sys (INFO cpu) around
// BENCH_CALLS operations; the three alternate within each of BENCH_RUNS runs on one fresh server,
// medians with the range. `npm run bench -- slots-cpu`; in `npm run bench`, its section 6 (the
// figures also go to the file BENCH_JSON names).
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { RateLimiterService, RedisLimitModule } from '../lib/index.js';
import { RedisNode } from '../test/harness/redis-server.js';
import { redisCpuSeconds } from './common/redis-cpu.js';
import { cell, spread } from './common/stats.js';

const CALLS = Number(process.env['BENCH_CALLS'] ?? 50_000);
const RUNS = Number(process.env['BENCH_RUNS'] ?? 3);
const KEYS = 10_000;
const IN_FLIGHT = 64;

async function pool(n: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

async function main(): Promise<void> {
  const server = await RedisNode.start();
  const admin = new Redis(server.rawConnection);
  const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: server.connection, keyPrefix: 'slots:', refusalCache: false }), {
    logger: false,
  });
  const limiter = app.get(RateLimiterService);
  const contenders: Record<string, (i: number) => Promise<unknown>> = {
    'acquireSlot + release (limit 5)': async (i) => {
      const slot = await limiter.acquireSlot(`k${i % KEYS}`, { limit: 5, name: 'exports' });
      await slot?.release();
    },
    'consume, sliding window (default)': (i) => limiter.consume(`k${i % KEYS}`, { limit: 1_000_000, windowMs: 60_000 }),
    'consume, fixed window': (i) => limiter.consume(`k${i % KEYS}`, { limit: 1_000_000, windowMs: 60_000, algorithm: 'fixed-window' }),
  };
  const samples: Record<string, number[]> = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
  for (let run = 0; run < RUNS; run++) {
    for (const [name, call] of Object.entries(contenders)) {
      (globalThis as { gc?: () => void }).gc?.();
      const before = await redisCpuSeconds(admin);
      await pool(CALLS, call);
      samples[name]!.push((((await redisCpuSeconds(admin)) - before) * 1e6) / CALLS);
    }
  }
  const median = (name: string) => spread(samples[name]!).median;
  const slot = median('acquireSlot + release (limit 5)');
  const json = process.env['BENCH_JSON'];
  if (json) {
    const [slotUs, slidingUs, fixedUs] = Object.keys(contenders).map((name) => spread(samples[name]!));
    writeFileSync(json, JSON.stringify({ slotUs, slidingUs, fixedUs }));
  }
  console.log('### Redis CPU per concurrency slot');
  console.log(`\n${CALLS.toLocaleString('en')} operations per run, ${RUNS} runs, ${KEYS.toLocaleString('en')} keys, ${IN_FLIGHT} in flight\n`);
  console.log('| operation | Redis µs per operation | acquire + release ÷ this |');
  console.log('|---|---:|---:|');
  for (const name of Object.keys(contenders)) {
    console.log(`| ${name} | ${cell(spread(samples[name]!), 1)} | ${name.startsWith('acquire') ? '—' : `${(slot / median(name)).toFixed(2)}x`} |`);
  }
  await app.close();
  admin.disconnect();
  await server.stop();
}

void main();
