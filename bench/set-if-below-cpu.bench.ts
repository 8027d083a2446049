// Redis CPU and memory per setIfBelow call (the @MaxPending path) in one mode on one server:
// used_cpu_user + used_cpu_sys (INFO cpu) around BENCH_CALLS calls, and used_memory around them
// (less client buffers and the Lua heap), for owners that end up holding 1, 2 and 3 slots (cap 3,
// 30 min ttl, 60-byte values, 32 calls in flight), BENCH_RUNS times on a fresh server each
// (medians, with the range). The commands the scripts ran (INFO commandstats) show which write
// path they took.
// `npm run bench -- set-if-below-cpu`; BENCH_FLAVOR (default redis8), BENCH_MODE (native),
// BENCH_CALLS (20000), BENCH_RUNS (3), BENCH_SERVER_ARGS (extra redis-server arguments, split on
// spaces: '--rename-command HSETEX ""' takes HSETEX away, as on Redis 7.4).
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { ExpiringHashService, RedisLimitModule, type ExpiringHashOptions } from '../lib/index.js';
import type { RedisFlavor } from '../test/harness/redis-binary.js';
import { RedisNode } from '../test/harness/redis-server.js';
import { redisCpuSeconds } from './common/redis-cpu.js';
import { cell, spread } from './common/stats.js';

const FLAVOR = (process.env['BENCH_FLAVOR'] ?? 'redis8') as RedisFlavor;
const MODE = (process.env['BENCH_MODE'] ?? 'native') as NonNullable<ExpiringHashOptions['mode']>;
const CALLS = Number(process.env['BENCH_CALLS'] ?? 20_000);
const RUNS = Number(process.env['BENCH_RUNS'] ?? 3);
const SERVER_ARGS = (process.env['BENCH_SERVER_ARGS'] ?? '').split(' ').filter(Boolean);
const PER_OWNER = [1, 2, 3];
const MAX = 3;
const TTL_MS = 30 * 60_000;
const IN_FLIGHT = 32;
const VALUE = 'x'.repeat(60);

async function pool(n: number, width: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

/** used_memory without what is not the data: client buffers, and the Lua heap (Redis 8 counts it
 * in used_memory, and its garbage comes and goes with the collector), once a keyspace table that
 * grew has finished rehashing. */
async function usedMemory(admin: Redis): Promise<number> {
  for (let tries = 0; ; tries++) {
    const info = await admin.info('memory');
    const stat = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
    if (stat('mem_overhead_db_hashtable_rehashing') === 0 || tries === 20) {
      return stat('used_memory') - stat('mem_clients_normal') - stat('used_memory_vm_eval');
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The calls per command the scripts made since the last RESETSTAT, for the write commands. */
async function writeCommands(admin: Redis): Promise<string> {
  const stats = await admin.info('commandstats');
  const calls = (name: string) => Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
  return ['hset', 'hsetex', 'hpexpireat', 'pexpireat'].map((name) => `${name} ${calls(name)}`).join(', ');
}

interface Sample {
  cpuUs: number;
  bytes: number;
  commands: string;
}

/** One shape on a flushed server: CALLS calls, owners filled slot by slot. */
async function measure(service: ExpiringHashService, admin: Redis, perOwner: number): Promise<Sample> {
  await admin.flushall();
  await admin.config('RESETSTAT');
  const owners = Math.floor(CALLS / perOwner);
  const memoryBefore = await usedMemory(admin);
  const cpuBefore = await redisCpuSeconds(admin);
  await pool(owners * perOwner, IN_FLIGHT, async (i) => {
    const { accepted } = await service.setIfBelow(`unpaid:user-${i % owners}`, `slot-${Math.floor(i / owners)}`, VALUE, TTL_MS, MAX);
    if (!accepted) throw new Error(`call ${i} was refused`);
  });
  const cpu = (await redisCpuSeconds(admin)) - cpuBefore;
  const bytes = (await usedMemory(admin)) - memoryBefore;
  return { cpuUs: (cpu * 1e6) / (owners * perOwner), bytes: bytes / (owners * perOwner), commands: await writeCommands(admin) };
}

async function main(): Promise<void> {
  const samples = new Map<number, Sample[]>(PER_OWNER.map((n) => [n, []]));
  let mode = '';
  for (let run = 0; run < RUNS; run++) {
    const server = await RedisNode.start({ flavor: FLAVOR, own: true, args: SERVER_ARGS });
    const admin = new Redis(server.url);
    const app = await NestFactory.createApplicationContext(
      RedisLimitModule.forRoot({ redis: server.url, keyPrefix: 'rl:', expiringHash: { mode: MODE, sweepIntervalMs: 0 } }),
      { logger: false },
    );
    try {
      const service = app.get(ExpiringHashService);
      mode = await service.mode();
      for (const perOwner of PER_OWNER) samples.get(perOwner)!.push(await measure(service, admin, perOwner));
    } finally {
      await app.close();
      admin.disconnect();
      await server.stop();
    }
  }
  console.log(
    `${FLAVOR} ${mode} mode, ${CALLS.toLocaleString('en-US')} setIfBelow calls per shape, ${RUNS} runs${SERVER_ARGS.length ? `, server ${SERVER_ARGS.join(' ')}` : ''}`,
  );
  console.log('| per owner | Redis CPU per call, µs | bytes per item | write commands (last run) |');
  console.log('|---|---|---|---|');
  for (const [perOwner, runs] of samples) {
    const cpu = spread(runs.map((s) => s.cpuUs));
    const bytes = spread(runs.map((s) => s.bytes));
    console.log(`| ${perOwner} | ${cell(cpu, 2)} | ${cell(bytes, 1)} | ${runs[runs.length - 1]!.commands} |`);
  }
}

await main();
