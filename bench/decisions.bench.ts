// Decision throughput from one Node process: our algorithms beside rate-limiter-flexible,
// @nest-lab/throttler-storage-redis and the seed's naive INCR-then-EXPIRE, on one redis-server,
// with the same limits, keys and concurrency. Contenders alternate within each run, so a noisy
// moment on this shared machine hurts one run of everyone rather than every run of one.
import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { NestFactory } from '@nestjs/core';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { Redis, type RedisOptions } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { RateLimiterService, RedisLimitModule, type RateLimitAlgorithm } from '../lib/index.js';
import { COMPILED_SCRIPTS } from '../lib/redis/scripts.generated.js';
import { oneLimitArgs, oneLimitReply } from './common/decide-args.js';
import { redisCpuSeconds } from './common/redis-cpu.js';
import { spread, type Spread } from './common/stats.js';

export const LIMIT = 1000;
export const WINDOW_MS = 60_000;
const PREFIX = 'rl:';

export type KeyShape = '10k-keys' | 'hot-key';
export type Pipelining = 'auto' | 'off';

export interface DecisionOptions {
  host: string;
  port: number;
  calls: number;
  inFlight: number;
  runs: number;
  log: (line: string) => void;
}

export interface Contender {
  name: string;
  /** 'ours' rows are compared with every other kind. */
  kind: 'ours' | 'bare' | 'alternative';
  pipelining: Pipelining;
  shapes: KeyShape[];
  call: (key: string) => Promise<unknown>;
}

export interface DecisionRow {
  name: string;
  kind: Contender['kind'];
  pipelining: Pipelining;
  shape: KeyShape;
  perSecond: Spread;
  p50Ms: Spread;
  p99Ms: Spread;
  /** CPU per call, µs: this Node process, and redis-server (user + sys, from INFO cpu). */
  nodeUs: Spread;
  redisUs: Spread;
  granted: Spread;
}

interface Sample {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  nodeUs: number;
  redisUs: number;
  granted: number;
}

/** `calls` decisions, `inFlight` at a time; a call that resolves to false counts as refused. */
async function measure(call: Contender['call'], keyOf: (i: number) => string, opts: DecisionOptions, admin: Redis): Promise<Sample> {
  // start every contender with an empty heap: the garbage of the one before must not be its cost
  (globalThis as { gc?: () => void }).gc?.();
  const latencies = new Float64Array(opts.calls);
  let next = 0;
  let granted = 0;
  const redisBefore = await redisCpuSeconds(admin);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: opts.inFlight }, async () => {
      while (next < opts.calls) {
        const i = next++;
        const t = performance.now();
        if ((await call(keyOf(i))) !== false) granted++;
        latencies[i] = performance.now() - t;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const redisSeconds = (await redisCpuSeconds(admin)) - redisBefore;
  latencies.sort();
  const at = (q: number) => latencies[Math.min(opts.calls - 1, Math.floor(q * opts.calls))]!;
  return {
    perSecond: opts.calls / seconds,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    nodeUs: (cpu.user + cpu.system) / opts.calls,
    redisUs: (redisSeconds * 1e6) / opts.calls,
    granted: granted / opts.calls,
  };
}

const KEYS: Record<KeyShape, (i: number) => string> = {
  '10k-keys': (i) => `user-${i % 10_000}`,
  'hot-key': () => 'hot',
};

// Every algorithm and every alternative runs on both key shapes with default clients
// (auto-pipelining off); our fixed window with auto-pipelining on, and the bare EVALSHA floor, run
// on 10,000 keys only: the full grid would not fit the 10 minutes `npm run bench` has here.
const AUTO_PIPELINING = new Set(['nest-redis-limit fixed-window']);

function shapesOf(name: string, pipelining: Pipelining): KeyShape[] {
  if (pipelining === 'auto') return AUTO_PIPELINING.has(name) ? ['10k-keys'] : [];
  return name.startsWith('bare ') ? ['10k-keys'] : ['10k-keys', 'hot-key'];
}

/** Builds every contender; `close` releases their clients and apps. */
export async function contenders(host: string, port: number): Promise<{ list: Contender[]; close: () => Promise<void> }> {
  const closers: (() => Promise<unknown>)[] = [];
  const client = (pipelining: Pipelining) => {
    const options: RedisOptions = { host, port, enableAutoPipelining: pipelining === 'auto' };
    const c = new Redis(options);
    closers.push(async () => c.disconnect());
    return c;
  };
  const list: Contender[] = [];

  for (const pipelining of ['auto', 'off'] as const) {
    const app = await NestFactory.createApplicationContext(
      // every decision asks Redis, as the other contenders' do: this section measures decisions,
      // and a hot key over its limit would otherwise be answered from the refusal cache (section 3a)
      RedisLimitModule.forRoot({ redis: { host, port, enableAutoPipelining: pipelining === 'auto' }, keyPrefix: PREFIX, refusalCache: false }),
      { logger: false },
    );
    closers.push(() => app.close());
    const limiter = app.get(RateLimiterService);
    const algorithm = (a: RateLimitAlgorithm, label: string): Contender => ({
      name: `nest-redis-limit ${label}`,
      kind: 'ours',
      pipelining,
      shapes: shapesOf(`nest-redis-limit ${label}`, pipelining),
      call: (key) => limiter.consume(key, { limit: LIMIT, windowMs: WINDOW_MS, algorithm: a }).then((d) => d.allowed),
    });
    list.push(
      algorithm('fixed-window', 'fixed-window'),
      algorithm('sliding-window', 'sliding-window'),
      algorithm('sliding-window-counter', 'sliding-window-counter'),
      algorithm('token-bucket', 'token-bucket'),
    );
    list.push({
      name: 'nest-redis-limit funnel',
      kind: 'ours',
      pipelining,
      shapes: shapesOf('nest-redis-limit funnel', pipelining),
      call: (key) => limiter.funnel(key, { capacity: LIMIT, leakingDurationMs: WINDOW_MS }).then((d) => d.allowed),
    });

    // the floor under our fixed window: the same script, called with EVALSHA and nothing around it
    const raw = client(pipelining);
    const source = COMPILED_SCRIPTS['rate-limit/decide.lua'].source;
    const sha = createHash('sha1').update(source).digest('hex');
    await raw.script('LOAD', source);
    list.push({
      name: 'bare EVALSHA of our fixed-window script',
      kind: 'bare',
      pipelining,
      shapes: shapesOf('bare EVALSHA of our fixed-window script', pipelining),
      call: (key) =>
        raw
          .callBuffer('EVALSHA', [sha, 1, `${PREFIX}fw:{${key}}`, '', ...oneLimitArgs('runs', '1', 'fw', LIMIT, WINDOW_MS, 1)])
          .then((r) => oneLimitReply(r).granted),
    });

    const rlfClient = client(pipelining);
    const rlf = new RateLimiterRedis({ storeClient: rlfClient, keyPrefix: 'rlf', points: LIMIT, duration: WINDOW_MS / 1000 });
    list.push({
      name: 'rate-limiter-flexible RateLimiterRedis',
      kind: 'alternative',
      pipelining,
      shapes: shapesOf('rate-limiter-flexible RateLimiterRedis', pipelining),
      call: (key) =>
        rlf.consume(key).then(
          () => true,
          (refusal: unknown) => {
            if (refusal instanceof RateLimiterRes) return false;
            throw refusal;
          },
        ),
    });

    const storage = new ThrottlerStorageRedisService(client(pipelining));
    list.push({
      name: '@nest-lab/throttler-storage-redis increment',
      kind: 'alternative',
      pipelining,
      shapes: shapesOf('@nest-lab/throttler-storage-redis increment', pipelining),
      call: (key) => storage.increment(key, WINDOW_MS, LIMIT, WINDOW_MS, 'default').then((r) => !r.isBlocked),
    });

    // the seed's fixed window without its Lua: INCR, then EXPIRE on the first hit (two round
    // trips then, and a crash between them leaves a counter that never expires)
    const naiveClient = client(pipelining);
    list.push({
      name: 'naive INCR then EXPIRE (no Lua)',
      kind: 'alternative',
      pipelining,
      shapes: shapesOf('naive INCR then EXPIRE (no Lua)', pipelining),
      call: async (key) => {
        const k = `naive:{${key}}`;
        const count = await naiveClient.incr(k);
        if (count === 1) await naiveClient.pexpire(k, WINDOW_MS);
        return count <= LIMIT;
      },
    });
  }
  return { list: list.filter((c) => c.shapes.length > 0), close: async () => void (await Promise.all(closers.map((c) => c()))) };
}

export async function decisionThroughput(opts: DecisionOptions): Promise<DecisionRow[]> {
  const admin = new Redis({ host: opts.host, port: opts.port });
  const { list, close } = await contenders(opts.host, opts.port);
  const samples = new Map<string, { contender: Contender; shape: KeyShape; runs: Sample[] }>();
  const order = list.flatMap((contender) => contender.shapes.map((shape) => ({ contender, shape })));
  try {
    // warm-up: JIT, connections, script caches
    for (const { contender, shape } of order) await measure(contender.call, KEYS[shape], { ...opts, calls: Math.min(opts.calls, 5_000) }, admin);
    for (let run = 0; run < opts.runs; run++) {
      // alternate the order between runs so no contender always follows the same neighbour
      const ordered = run % 2 === 0 ? order : [...order].reverse();
      for (const { contender, shape } of ordered) {
        await admin.flushall();
        const sample = await measure(contender.call, KEYS[shape], opts, admin);
        const id = `${contender.name}|${contender.pipelining}|${shape}`;
        const entry = samples.get(id) ?? { contender, shape, runs: [] };
        entry.runs.push(sample);
        samples.set(id, entry);
        opts.log(`  decisions run ${run + 1}/${opts.runs} ${shape} pipelining=${contender.pipelining} ${contender.name}: ${sample.perSecond.toFixed(0)}/s`);
      }
    }
  } finally {
    await close();
    admin.disconnect();
  }
  return [...samples.values()].map(({ contender, shape, runs }) => {
    const of = (f: (s: Sample) => number) => spread(runs.map(f));
    return {
      name: contender.name,
      kind: contender.kind,
      pipelining: contender.pipelining,
      shape,
      perSecond: of((s) => s.perSecond),
      p50Ms: of((s) => s.p50Ms),
      p99Ms: of((s) => s.p99Ms),
      nodeUs: of((s) => s.nodeUs),
      redisUs: of((s) => s.redisUs),
      granted: of((s) => s.granted),
    };
  });
}
