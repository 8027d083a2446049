// Side-by-side throughput and latency of a rate-limit decision: nest-redis-limit's three
// algorithms against rate-limiter-flexible (RateLimiterRedis, its fixed window) on the same
// redis-server, the same keys and the same concurrency; then a stack of two limits (ours: one
// atomic call; rate-limiter-flexible: RateLimiterUnion, one call per limit); then acquire()'s
// spread. Rounds alternate between contenders; medians are reported. `npm run bench`.
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterUnion } from 'rate-limiter-flexible';
import { RateLimiterService, RedisLimitModule, type RateLimitAlgorithm } from '../lib/index.js';
import { RedisNode } from '../test/harness/redis-server.js';

const CALLS = Number(process.env['BENCH_CALLS'] ?? 20_000);
const CONCURRENCY = 64;
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 5);
const USERS = 1000;

type Call = (user: string) => Promise<unknown>;

interface Sample {
  opsPerSec: number;
  p50: number;
  p99: number;
  /** Redis CPU per decision: the sum of usec in INFO commandstats over the calls made. */
  redisUs: number;
}

async function redisMicroseconds(client: Redis): Promise<number> {
  const stats = await client.info('commandstats');
  let usec = 0;
  for (const match of stats.matchAll(/^cmdstat_(\w+(?:\|\w+)?):calls=\d+,usec=(\d+)/gm)) {
    if (match[1] !== 'info' && match[1] !== 'config|resetstat') usec += Number(match[2]);
  }
  return usec;
}

async function measure(call: Call, client: Redis): Promise<Sample> {
  await client.config('RESETSTAT');
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < CALLS) {
        const i = next++;
        const t = performance.now();
        await call(`user-${i % USERS}`);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  const redisUs = (await redisMicroseconds(client)) / CALLS;
  return { opsPerSec: CALLS / seconds, p50: at(0.5), p99: at(0.99), redisUs };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const redis = await RedisNode.start();
  const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: redis.url, keyPrefix: 'bench:' }), {
    logger: false,
  });
  const limiter = app.get(RateLimiterService);
  const client = new Redis(redis.url);
  // generous limits: the benchmark measures deciding, and most calls are granted
  const windowMs = 60_000;
  const limit = 1_000_000;
  const rlf = new RateLimiterRedis({ storeClient: client, keyPrefix: 'bench-rlf', points: limit, duration: windowMs / 1000 });
  const rlfPerSecond = new RateLimiterRedis({ storeClient: client, keyPrefix: 'bench-rlf-s', points: limit, duration: 1 });
  const rlfUnion = new RateLimiterUnion(rlfPerSecond, rlf);
  const ours = (algorithm: RateLimitAlgorithm): Call => (user) => limiter.consume(user, { limit, windowMs, algorithm });

  const contenders: Record<string, Call> = {
    'nest-redis-limit fixed-window': ours('fixed-window'),
    'nest-redis-limit sliding-window (exact)': ours('sliding-window'),
    'nest-redis-limit token-bucket': ours('token-bucket'),
    'rate-limiter-flexible RateLimiterRedis (fixed window)': (user) => rlf.consume(user),
    'nest-redis-limit stack of 2 (one call)': (user) =>
      limiter.decide([
        { key: user, scope: 's', policy: { limit, windowMs: 1000, algorithm: 'fixed-window' } },
        { key: user, scope: 'm', policy: { limit, windowMs, algorithm: 'fixed-window' } },
      ]),
    'rate-limiter-flexible RateLimiterUnion of 2': (user) => rlfUnion.consume(user),
  };

  for (const call of Object.values(contenders)) await measure(call, client); // warm-up: JIT, connections, scripts
  const samples: Record<string, Sample[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, call] of Object.entries(contenders)) {
      await client.flushdb();
      (samples[name] ??= []).push(await measure(call, client));
    }
  }

  console.log(`\n${CALLS} calls per round, ${CONCURRENCY} in flight, ${USERS} keys, ${ROUNDS} rounds, medians; redis-server on loopback\n`);
  console.log('| contender | decisions/s | p50 ms | p99 ms | Redis µs/decision |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [name, runs] of Object.entries(samples)) {
    const m = (f: (s: Sample) => number) => median(runs.map(f));
    const cells = [m((s) => s.opsPerSec).toFixed(0), m((s) => s.p50).toFixed(2), m((s) => s.p99).toFixed(2), m((s) => s.redisUs).toFixed(1)];
    console.log(`| ${name} | ${cells.join(' | ')} |`);
  }

  // acquire(): 20 callers on 5 per second, each waiting its turn on timers
  const spreads: number[] = [];
  for (let round = 0; round < 3; round++) {
    const started = performance.now();
    const finished = await Promise.all(
      Array.from({ length: 20 }, () => limiter.acquire(`acquire-${round}`, { limit: 5, windowMs: 1000 }).then(() => performance.now() - started)),
    );
    spreads.push(Math.max(...finished));
  }
  console.log(`\nacquire(): 20 concurrent callers on 5/s all granted; last one after ${spreads.map((s) => (s / 1000).toFixed(3)).join(' s, ')} s (ideal 3.000 s)`);

  client.disconnect();
  await app.close();
  await redis.stop();
}

void main();
