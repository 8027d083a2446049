// ExpiringHashService against the other ways to keep items with a per-item ttl, on redis7,
// redis8, valkey8 and valkey9 (native mode where the server has field expiry): (1) memory per item, as used_memory deltas around a load of 100,000
// items on a server this bench started and flushed (so every key a layout writes counts: hash,
// bucket index, sweep registry, expires entries); (2) how fast two sweepers drain 1,000,000
// expired fields over 100,000 hashes, and how long any single Redis call takes meanwhile.
// `npm run bench:hash`; BENCH_MEMORY_FLAVORS, BENCH_DRAIN_FLAVORS and BENCH_BIG_DRAIN_FLAVORS
// (comma lists, '' for none) pick the servers of each part; BENCH_SHAPES (hash counts, e.g.
// '1000,100000') and BENCH_LAYOUTS (layout names) narrow the memory part, BENCH_MEMORY_RUNS repeats
// it (medians, with the range), BENCH_MEMORY_PARTS=0 skips the breakdown of our bytes, and
// BENCH_JSON names a file for the memory figures. (3) At rest: Redis calls per second from one
// idle process that has used the service, beside one idle DelayQueue consumer, and how long after
// its expiry a field leaves memory and its notification goes out (BENCH_IDLE_FLAVORS,
// BENCH_IDLE_SECONDS, BENCH_IDLE_JSON).
import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { promisify } from 'node:util';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { Redis } from 'ioredis';
import { DelayQueueService, ExpiringHashService, RedisLimitModule, type ExpiredField, type ExpiringHashOptions } from '../lib/index.js';
import { ExpiringHashKeys } from '../lib/expiring-hash/expiring-hash.keys.js';
import { RedisConnection } from '../lib/redis/redis-connection.js';
import { RedisKeys } from '../lib/redis/keys.js';
import { loadScripts, type ScriptName } from '../lib/redis/scripts.js';
import { FIELD_EXPIRY_FLAVORS, type RedisFlavor } from '../test/harness/redis-binary.js';
import { RedisNode } from '../test/harness/redis-server.js';
import { settledMemory } from './common/memory.js';
import { cell as spreadCell, spread } from './common/stats.js';

const FLAVORS: RedisFlavor[] = ['redis7', 'redis8', 'valkey8', 'valkey9'];
// redis7 only by default: each run loads 1.1M fields (1-2 min here) and the whole bench should stay near 6 min
const DRAIN_FLAVORS = (process.env['BENCH_DRAIN_FLAVORS'] ?? 'redis7').split(',').filter(Boolean) as RedisFlavor[];
const BIG_DRAIN_FLAVORS = (process.env['BENCH_BIG_DRAIN_FLAVORS'] ?? 'redis7').split(',').filter(Boolean) as RedisFlavor[];

const ITEMS = 100_000;
const TTL_MS = 30 * 60_000;
const CONCURRENCY = 256;
const PREFIX = 'rl:'; // the module's default, so our keys are as long as a user's would be
const listed = (name: string) => process.env[name]?.split(',').filter(Boolean);
const SHAPES = [
  { name: '1 hash × 100,000 items', hashes: 1 },
  { name: '1,000 hashes × 100 items', hashes: 1_000 },
  // 33,333 × 3 holds 100,000 items as 33,332 hashes of 3 and one of 4
  { name: '33,333 hashes × 3 items', hashes: 33_333 },
  { name: '50,000 hashes × 2 items', hashes: 50_000 },
  { name: '100,000 hashes × 1 item', hashes: 100_000 },
].filter((shape) => listed('BENCH_SHAPES')?.includes(String(shape.hashes)) ?? true);
const MEMORY_RUNS = Number(process.env['BENCH_MEMORY_RUNS'] ?? 1);
// BENCH_MEMORY_PARTS=0 skips the breakdown of our bytes (MEMORY USAGE of every key: slow at 100,000 keys)
const MEMORY_PARTS = process.env['BENCH_MEMORY_PARTS'] !== '0';

const DRAIN_TTL_MS = 3_000;
const KEEP_FIELD = 'profile-000000000000'; // no ttl: keeps the hash key alive, so only the sweeper can drain it

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const user = (i: number) => `user-${String(i).padStart(6, '0')}`;
const field = (i: number) => `order-${String(i).padStart(14, '0')}`; // 20 bytes

/** A 60-byte JSON value: a listpack entry stays <= 64 bytes only if values are this size or less. */
function value(i: number): string {
  const base = `{"id":"${String(i).padStart(8, '0')}","state":"pending","amount":12.5,"note":"x"}`;
  const v = base.length >= 60 ? base.slice(0, 60) : base.replace('"x"', `"${'x'.repeat(61 - base.length)}"`);
  if (v.length !== 60) throw new Error(`value ${i} is ${v.length} bytes`);
  return v;
}

/** Runs task(0..n-1) with `width` calls in flight. */
async function pool(n: number, width: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

/** Raw layouts: pipelined batches of 1,000 items, 4 batches in flight (no client overhead to speak of). */
async function pipelined(client: Redis, n: number, add: (p: ReturnType<Redis['pipeline']>, i: number) => void): Promise<void> {
  await pool(Math.ceil(n / 1000), 4, async (b) => {
    const p = client.pipeline();
    for (let i = b * 1000; i < Math.min(n, (b + 1) * 1000); i++) add(p, i);
    for (const [error] of (await p.exec()) ?? []) if (error) throw error;
  });
}

function boot(url: string, expiringHash: ExpiringHashOptions, commandTimeoutMs = 10_000): Promise<INestApplicationContext> {
  // loaders get a long timeout: a GC pause must not abort a 100,000-item load
  return NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: url, keyPrefix: PREFIX, commandTimeoutMs, expiringHash }), {
    logger: false,
  });
}

interface Ctx {
  admin: Redis;
  index: ExpiringHashService;
  native: ExpiringHashService | undefined;
}
interface Layout {
  row: string;
  /** Only where the server has field expiry. */
  fieldExpiry?: true;
  load(ctx: Ctx, hashes: number): Promise<void>;
}

const ALL_LAYOUTS: Record<string, Layout> = {
  strings: {
    row: '(a) string per item: SET k v PX',
    load: ({ admin }, hashes) => pipelined(admin, ITEMS, (p, i) => p.set(`s:${user(i % hashes)}:${field(i)}`, value(i), 'PX', TTL_MS)),
  },
  plain: {
    row: '(b) plain hash, no expiry (lower bound)',
    load: ({ admin }, hashes) => pipelined(admin, ITEMS, (p, i) => p.hset(`ph:{${user(i % hashes)}}`, field(i), value(i))),
  },
  seed: {
    // the seed's layout: values in a hash, field -> expiry ms in a zset beside it, both keys
    // expiring with their latest field
    row: '(c) hash + companion zset (seed)',
    load: ({ admin }, hashes) =>
      pipelined(admin, ITEMS, (p, i) => {
        const at = Date.now() + TTL_MS;
        const [h, z] = [`sd:{${user(i % hashes)}}`, `sdz:{${user(i % hashes)}}`];
        p.hset(h, field(i), value(i)).zadd(z, at, field(i)).pexpireat(h, at).pexpireat(z, at);
      }),
  },
  index: {
    row: '(d) ours, index mode',
    load: ({ index }, hashes) => pool(ITEMS, CONCURRENCY, (i) => index.set(user(i % hashes), field(i), value(i), TTL_MS)),
  },
  native: {
    row: '(e) ours, native mode',
    fieldExpiry: true,
    load: ({ native }, hashes) => pool(ITEMS, CONCURRENCY, (i) => native!.set(user(i % hashes), field(i), value(i), TTL_MS)),
  },
  rawNative: {
    row: '(f) raw HSET + HPEXPIREAT',
    fieldExpiry: true,
    load: ({ admin }, hashes) =>
      pipelined(admin, ITEMS, (p, i) => {
        const h = `nh:{${user(i % hashes)}}`;
        p.hset(h, field(i), value(i)).call('HPEXPIREAT', h, Date.now() + TTL_MS, 'FIELDS', 1, field(i));
      }),
  },
};

const LAYOUTS = Object.fromEntries(Object.entries(ALL_LAYOUTS).filter(([name]) => listed('BENCH_LAYOUTS')?.includes(name) ?? true));

interface Cell {
  /** One figure per run. */
  bytes: number[];
  keys: number;
  /** Ours: bytes per item in the sweep registry and in bucket indexes (MEMORY USAGE). */
  parts?: [number, number];
}
// results[shape][layout][flavor]
const results = new Map<string, Map<string, Map<RedisFlavor, Cell>>>();
const serverVersions: string[] = [];
const log = (line: string) => console.error(line); // progress on stderr; tables on stdout

async function serverVersion(admin: Redis): Promise<string> {
  const info = await admin.info('server');
  const valkey = /^valkey_version:(\S+)/m.exec(info)?.[1];
  return valkey ? `Valkey ${valkey}` : `Redis ${/^redis_version:(\S+)/m.exec(info)![1]}`;
}

async function memoryRun(flavor: RedisFlavor): Promise<void> {
  const server = await RedisNode.start({ flavor, own: true });
  const admin = new Redis(server.url);
  const version = `${flavor}: ${await serverVersion(admin)}`;
  if (!serverVersions.includes(version)) serverVersions.push(version);
  const apps = [await boot(server.url, { mode: 'index', sweepIntervalMs: 0 })];
  if (FIELD_EXPIRY_FLAVORS.includes(flavor)) apps.push(await boot(server.url, { mode: 'native', sweepIntervalMs: 0 }));
  const ctx: Ctx = { admin, index: apps[0]!.get(ExpiringHashService), native: apps[1]?.get(ExpiringHashService) };
  // warm-up: the script cache (kept across FLUSHALL) and client buffers exist before any baseline
  await ctx.index.set('warm', 'f', 'v', 1000);
  await ctx.native?.set('warm', 'f', 'v', 1000);

  for (const shape of SHAPES) {
    for (const [name, layout] of Object.entries(LAYOUTS)) {
      if (layout.fieldExpiry && !FIELD_EXPIRY_FLAVORS.includes(flavor)) continue;
      await admin.call('FLUSHALL', 'SYNC');
      const before = await settledMemory(admin);
      const started = performance.now();
      await layout.load(ctx, shape.hashes);
      const loadS = (performance.now() - started) / 1000;
      const after = await settledMemory(admin);
      const bytes = (after - before) / ITEMS;
      const byLayout = results.get(shape.name) ?? new Map<string, Map<RedisFlavor, Cell>>();
      results.set(shape.name, byLayout);
      const byFlavor = byLayout.get(name) ?? new Map<RedisFlavor, Cell>();
      byLayout.set(name, byFlavor);
      const keys = await admin.dbsize(); // before the lookup: concurrent runs share the cell
      const cell = byFlavor.get(flavor) ?? { bytes: [], keys };
      cell.bytes.push(bytes);
      byFlavor.set(flavor, cell);
      log(`${flavor} | ${shape.name} | ${layout.row}: ${bytes.toFixed(1)} B/item, ${cell.keys} keys, loaded in ${loadS.toFixed(1)} s`);
      if (name === 'index' || name === 'native') {
        await checkCounts(name === 'index' ? ctx.index : ctx.native!, shape.hashes);
        if (MEMORY_PARTS) {
          cell.parts = await ourParts(admin, shape.hashes);
          log(`  of which sweep registry ${cell.parts[0].toFixed(1)} B/item, bucket indexes ${cell.parts[1].toFixed(1)} B/item`);
        }
      }
    }
  }
  admin.disconnect();
  for (const app of apps) await app.close();
  await server.stop();
}

/** Where our overhead goes: the sweep registry and the bucket indexes of large hashes. */
async function ourParts(admin: Redis, hashes: number): Promise<[number, number]> {
  const hk = new ExpiringHashKeys(new RedisKeys(PREFIX), 16);
  const usage = async (keys: string[]) => {
    let bytes = 0;
    for (let start = 0; start < keys.length; start += 5000) {
      const p = admin.pipeline();
      for (const key of keys.slice(start, start + 5000)) p.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
      for (const [, b] of (await p.exec())!) bytes += Number(b ?? 0);
    }
    return bytes / ITEMS;
  };
  const buckets = await registryBuckets(admin, hk);
  const indexes = Array.from({ length: hk.shards }, (_, s) => hk.registry(s));
  return [await usage([...indexes, ...buckets]), await usage(Array.from({ length: hashes }, (_, h) => hk.hash(user(h)).index))];
}

/** The keys of every bucket the registry's indexes name. */
async function registryBuckets(admin: Redis, hk: ExpiringHashKeys): Promise<string[]> {
  const p = admin.pipeline();
  for (let s = 0; s < hk.shards; s++) p.zrange(hk.registry(s), '0', '-1');
  const named = ((await p.exec()) ?? []).map(([, names]) => names as string[]);
  return named.flatMap((names, s) => names.map((name) => hk.registryBucket(s, name)));
}

/** How many listings the sweep registry holds (a hash is mostly listed once). */
async function listedHashes(admin: Redis, hk: ExpiringHashKeys): Promise<number> {
  const p = admin.pipeline();
  for (const bucket of await registryBuckets(admin, hk)) p.zcard(bucket);
  return sumOf(((await p.exec()) ?? []).map(([, n]) => Number(n)));
}

/** Every item must be counted: the memory figure is worthless if the writes went missing. */
async function checkCounts(service: ExpiringHashService, hashes: number): Promise<void> {
  for (const h of [0, hashes - 1]) {
    const got = await service.count(user(h));
    // item i goes to hash i % hashes: the first ITEMS % hashes hashes hold one more
    const expected = Math.floor(ITEMS / hashes) + (h < ITEMS % hashes ? 1 : 0);
    if (got !== expected) log(`!! count(${user(h)}) = ${got}, expected ${expected}`);
  }
}

const median = (c: Cell) => spread(c.bytes).median;
const bytesText = (c: Cell) => (c.bytes.length > 1 ? spreadCell(spread(c.bytes), 1) : c.bytes[0]!.toFixed(1));

/** The memory figures for `npm run bench`'s report: shape → layout → flavor → bytes per item. */
function writeJson(path: string): void {
  const out: Record<string, Record<string, Record<string, ReturnType<typeof spread>>>> = {};
  for (const [shape, byLayout] of results) {
    for (const [layout, byFlavor] of byLayout) {
      for (const [flavor, c] of byFlavor) ((out[shape] ??= {})[layout] ??= {})[flavor] = spread(c.bytes);
    }
  }
  writeFileSync(path, JSON.stringify(out, null, 2));
}

function printMemory(): void {
  console.log(`\n## Memory per item\n`);
  console.log(
    `Bytes per item = delta of used_memory (less client buffers) ÷ ${ITEMS.toLocaleString('en-US')} after FLUSHALL SYNC on a server this bench started ` +
      `(every key a layout writes counts). 60-byte JSON values, 20-byte field names, ttl 30 min; ours writes through ` +
      `ExpiringHashService.set with ${CONCURRENCY} calls in flight, raw layouts are pipelined.\n`,
  );
  // the servers this run measured, in FLAVORS' order
  const columns = FLAVORS.filter((f) => [...results.values()].some((byLayout) => [...byLayout.values()].some((byFlavor) => byFlavor.has(f))));
  for (const shape of SHAPES) {
    const byLayout = results.get(shape.name)!;
    console.log(`### ${shape.name}\n`);
    console.log(`| layout | ${columns.join(' | ')} |`);
    console.log(`|---|${columns.map(() => '---:').join('|')}|`);
    for (const [name, layout] of Object.entries(LAYOUTS)) {
      const row = byLayout.get(name);
      const cells = columns.map((f) => (row?.get(f) ? bytesText(row.get(f)!) : '–'));
      console.log(`| ${layout.row} | ${cells.join(' | ')} |`);
    }
    for (const name of ['index', 'native']) {
      const cells = columns.map((f) => {
        const ours = byLayout.get(name)?.get(f);
        const strings = byLayout.get('strings')?.get(f);
        return ours && strings ? `${(median(ours) / median(strings)).toFixed(2)}×` : '–';
      });
      console.log(`| ours ${name} ÷ strings | ${cells.join(' | ')} |`);
    }
    for (const name of MEMORY_PARTS ? ['index', 'native'] : []) {
      const cells = columns.map((f) => {
        const parts = byLayout.get(name)?.get(f)?.parts;
        return parts ? `${parts[0].toFixed(1)} / ${parts[1].toFixed(1)}` : '–';
      });
      console.log(`| ours ${name}: of which sweep registry / bucket indexes | ${cells.join(' | ')} |`);
    }
    const keys = Object.entries(LAYOUTS)
      .filter(([name]) => byLayout.has(name))
      .map(([name, l]) => `${l.row.slice(0, 3)} ${[...byLayout.get(name)!.values()][0]!.keys}`);
    console.log(`\nKeys after load: ${keys.join(', ')}\n`);
  }
}

/** PING round trips every 10 ms from a separate process (redis-cli --latency), so Node's own
 * event loop, busy driving the sweepers, does not inflate them. Resolves the max ms seen. */
function latencyProbe(port: number): { stop(): Promise<{ maxMs: number; samples: number }> } {
  let stopped = false;
  let maxMs = 0;
  let samples = 0;
  const run = promisify(execFile);
  const loop = (async () => {
    while (!stopped) {
      try {
        const pending = run('redis-cli', ['-p', String(port), '--latency', '--raw', '-i', '1']);
        // as favoured as the server: a late PING must be the server's doing, not the scheduler's
        if (pending.child.pid) os.setPriority(pending.child.pid, -10);
        const { stdout } = await pending;
        const [, max, , n] = stdout.trim().split(/\s+/).map(Number);
        maxMs = Math.max(maxMs, max!);
        samples += n!;
      } catch {
        return; // no redis-cli: the slowlog still answers
      }
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { maxMs, samples };
    },
  };
}

interface DrainShape {
  hashes: number;
  /** Fields with a ttl per hash; each hash also gets KEEP_FIELD, without one. */
  fields: number;
}
const SPREAD: DrainShape = { hashes: 100_000, fields: 10 };
const ONE_BIG: DrainShape = { hashes: 1, fields: 100_000 };

/** Through ExpiringHashService.set, hash by hash: pipelined EVALSHA of its script was no faster
 * here (~20k calls/s either way: client and server share 2 cores), and this stays the real path. */
async function loadForDrain(service: ExpiringHashService, shape: DrainShape): Promise<void> {
  const perHash = shape.fields + 1;
  await pool(shape.hashes * perHash, 512, (i) => {
    const [u, k] = [user(Math.floor(i / perHash)), i % perHash];
    return k === 0 ? service.set(u, KEEP_FIELD, value(i)) : service.set(u, field(k), value(i), DRAIN_TTL_MS);
  });
}

const sumOf = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const cpuSeconds = async (admin: Redis) => {
  const info = await admin.info('cpu');
  return Number(/^used_cpu_user:([\d.]+)/m.exec(info)![1]) + Number(/^used_cpu_sys:([\d.]+)/m.exec(info)![1]);
};

async function drainRun(flavor: RedisFlavor, shape: DrainShape): Promise<string[]> {
  const server = await RedisNode.start({ flavor, own: true });
  const admin = new Redis(server.url);
  const version = `${flavor}: ${await serverVersion(admin)}`;
  if (!serverVersions.includes(version)) serverVersions.push(version);
  const keys = new RedisKeys(PREFIX);
  const hk = new ExpiringHashKeys(keys, 16); // the module's default sweepShards
  const registered = () => listedHashes(admin, hk);
  const fields = shape.hashes * shape.fields;

  const loader = await boot(server.url, { mode: 'index', sweepIntervalMs: 0 });
  const loadStarted = performance.now();
  await loadForDrain(loader.get(ExpiringHashService), shape);
  const loadS = (performance.now() - loadStarted) / 1000;
  await loader.close();
  await sleep(DRAIN_TTL_MS + 500); // every field has now expired; no sweeper has run yet
  const listed = await registered();
  const sampleLen = await admin.hlen(hk.hash(user(Math.floor(shape.hashes / 2))).hash);
  const memBefore = await settledMemory(admin);

  await admin.config('SET', 'slowlog-log-slower-than', '500');
  await admin.config('SET', 'slowlog-max-len', '100000');
  await admin.call('SLOWLOG', 'RESET');
  await admin.config('RESETSTAT');

  // two instances sharing the registry, as two app replicas would; the default commandTimeoutMs
  const sweepers = [];
  for (let i = 0; i < 2; i++) sweepers.push(await boot(server.url, { mode: 'index', sweepIntervalMs: 100 }, 500));
  const calls = new Map<ScriptName, number>();
  const failures: string[] = [];
  for (const app of sweepers) {
    // the module logs nothing here (logger: false): count what its outage log would report
    const connection = app.get(RedisConnection);
    const report = connection.reportFailure.bind(connection);
    connection.reportFailure = (error) => {
      failures.push(error.message);
      report(error);
    };
    // the lowest call the runner has: every script the module calls passes it
    const scripts = connection.scripts;
    const send = scripts.send.bind(scripts);
    scripts.send = (name, call) => {
      calls.set(name, (calls.get(name) ?? 0) + 1);
      return send(name, call);
    };
  }
  // this machine is shared: keep other processes from descheduling the server in the middle of
  // a call, or the slowlog measures the scheduler rather than the scripts
  os.setPriority(Number(/^process_id:(\d+)/m.exec(await admin.info('server'))![1]), -10);
  const load1 = os.loadavg()[0]!;
  const cpuBefore = await cpuSeconds(admin);
  const probe = latencyProbe(server.port);
  const started = performance.now();
  // a service call starts each instance's sweeper
  await Promise.all(sweepers.map((app) => app.get(ExpiringHashService).count('drain-probe')));
  // done when no hash is left in the registry: a sweep forgets a hash only once it holds no
  // field with a ttl (checked against every hash below)
  // (leased hashes stay in the registry until released, so a batch whose lease is lost shows up)
  let drainMs = NaN;
  const marks: [number, number][] = [
    [0.5, NaN],
    [0.99, NaN],
  ];
  while (performance.now() - started < 120_000) {
    const left = await registered();
    for (const mark of marks) if (Number.isNaN(mark[1]) && left <= listed * (1 - mark[0])) mark[1] = performance.now() - started;
    if (left === 0) {
      drainMs = performance.now() - started;
      break;
    }
    await sleep(20);
  }
  const cpu = (await cpuSeconds(admin)) - cpuBefore;
  const latency = await probe.stop();
  for (const app of sweepers) await app.close();

  const shaToName = new Map(loadScripts().map((s) => [s.sha1, s.name as string]));
  const slowLen = Number(await admin.call('SLOWLOG', 'LEN'));
  const slow = ((await admin.call('SLOWLOG', 'GET', String(slowLen))) as [number, number, number, string[]][]).map(([, , us, args]) => {
    const command = args[0]!.toLowerCase();
    return { us, command, script: command === 'evalsha' ? (shaToName.get(args[1]!) ?? 'unknown sha') : command === 'eval' ? 'EVAL' : '' };
  });
  const stats = await admin.info('commandstats');
  const evalsha = /^cmdstat_evalsha:calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/m.exec(stats);
  const memAfter = await settledMemory(admin);

  // every hash must hold exactly KEEP_FIELD and the meta field now
  const lengths = new Map<number, number>();
  for (let start = 0; start < shape.hashes; start += 5000) {
    const p = admin.pipeline();
    for (let h = start; h < Math.min(shape.hashes, start + 5000); h++) p.hlen(hk.hash(user(h)).hash);
    for (const [, n] of (await p.exec())!) lengths.set(n as number, (lengths.get(n as number) ?? 0) + 1);
  }
  const dbsize = await admin.dbsize();
  admin.disconnect();
  await server.stop();

  // Redis 7+ also logs commands a script runs: those are not calls anyone waited on separately
  const scriptCalls = slow.filter((s) => s.script);
  const inner = slow.filter((s) => !s.script);
  const byScript = new Map<string, number[]>();
  for (const { script, us } of scriptCalls) byScript.set(script, [...(byScript.get(script) ?? []), us]);
  const summary = (us: number[]) => {
    const sorted = [...us].sort((a, b) => a - b);
    return `${us.length}, median ${sorted[Math.floor(sorted.length / 2)]} µs, max ${sorted[sorted.length - 1]} µs`;
  };
  const innerMax = inner.reduce((m, s) => (s.us > m.us ? s : m), { us: 0, command: '-' });
  const n = (x: number) => x.toLocaleString('en-US');
  return [
    `### ${flavor}: ${n(fields)} expired fields in ${n(shape.hashes)} hash${shape.hashes > 1 ? 'es' : ''} (${n(shape.fields)} each), index mode\n`,
    `- load: ${n(shape.hashes * (shape.fields + 1))} ExpiringHashService.set calls (512 in flight, one client) in ${loadS.toFixed(1)} s ` +
      `(${((shape.hashes * (shape.fields + 1)) / loadS).toFixed(0)}/s); ${n(listed)} hash(es) in the sweep registry; HLEN of a sample hash before the sweep: ${sampleLen}`,
    `- drain: 2 sweeper instances (sweepIntervalMs 100) emptied the registry in **${(drainMs / 1000).toFixed(2)} s** ` +
      `(${n(Math.round(fields / (drainMs / 1000)))} fields/s; ${marks.map(([q, ms]) => `${q * 100}% of hashes in ${(ms / 1000).toFixed(2)} s`).join(', ')}); Redis CPU meanwhile ${cpu.toFixed(2)} s; 1-min load average at the start ${load1.toFixed(2)} on ${os.cpus().length} cores`,
    `- script calls by the sweepers: ${[...calls].map(([name, c]) => `${name} ${n(c)}`).join(', ')}; ` +
      `failures they reported: ${failures.length}${failures.length ? ` (first: ${failures[0]})` : ''}`,
    `- EVALSHA on the server: ${evalsha ? `${n(Number(evalsha[1]))} calls, ${evalsha[3]} µs mean wall time` : 'n/a'}; ` +
      `Redis CPU per swept field ${((cpu * 1e6) / fields).toFixed(2)} µs`,
    `- script calls over 0.5 ms (SLOWLOG): ${scriptCalls.length}` +
      (scriptCalls.length ? ` — ${[...byScript].map(([s, us]) => `${s}: ${summary(us)}`).join('; ')}` : ''),
    `- other commands over 0.5 ms (run inside scripts, or polls): ${inner.length}${inner.length ? `, max ${innerMax.us} µs (${innerMax.command})` : ''}`,
    `- PING from a separate process every 10 ms (redis-cli --latency, ${latency.samples} samples): max ${latency.maxMs} ms`,
    `- after: HLEN per hash ${[...lengths].map(([len, c]) => `${len} ×${n(c)}`).join(', ')}; DBSIZE ${dbsize}; ` +
      `used_memory ${(memBefore / 2 ** 20).toFixed(1)} MiB → ${(memAfter / 2 ** 20).toFixed(1)} MiB ` +
      `(${((memBefore - memAfter) / fields).toFixed(1)} B freed per field)`,
    '',
  ];
}

const IDLE_FLAVORS = (process.env['BENCH_IDLE_FLAVORS'] ?? 'redis7,redis8').split(',').filter(Boolean) as RedisFlavor[];
const IDLE_SECONDS = Number(process.env['BENCH_IDLE_SECONDS'] ?? 30);
/** Fields (each in its own hash, beside a field without ttl so only the sweeper removes it) whose
 * lag from expiry to removal and to notification is measured. */
const LAG_FIELDS = 200;

interface IdleFigures {
  /** Script calls and all commands per second from one idle process that used ExpiringHashService. */
  hashCallsPerSecond: number;
  hashCommandsPerSecond: number;
  /** The same from one DelayQueue consumer on an empty queue. */
  queueCallsPerSecond: number;
  queueCommandsPerSecond: number;
  /** ms from expiry until HLEN showed the field gone / until its notification was handled. */
  removalLagMs: ReturnType<typeof spread>;
  notifyLagMs: ReturnType<typeof spread>;
}

/** Script calls and all commands a server served (less INFO, which the bench sends itself). */
async function served(admin: Redis): Promise<[number, number]> {
  let scripts = 0;
  let all = 0;
  for (const [, name, calls] of (await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (name === 'info') continue;
    all += Number(calls);
    if (name!.startsWith('eval')) scripts += Number(calls);
  }
  return [scripts, all];
}

/** Calls per second on `admin`'s server while `idle` runs for IDLE_SECONDS. */
async function idleRate(admin: Redis): Promise<[number, number]> {
  const [scripts, all] = await served(admin);
  const started = performance.now();
  await sleep(IDLE_SECONDS * 1000);
  const [scripts2, all2] = await served(admin);
  const seconds = (performance.now() - started) / 1000;
  return [(scripts2 - scripts) / seconds, (all2 - all) / seconds];
}

async function idleRun(flavor: RedisFlavor): Promise<IdleFigures> {
  const [hashServer, queueServer] = await Promise.all([RedisNode.start({ flavor, own: true }), RedisNode.start({ flavor, own: true })]);
  const [hashAdmin, queueAdmin] = [new Redis(hashServer.url), new Redis(queueServer.url)];
  // the module's defaults, as an application instance runs it
  const app = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: hashServer.url, keyPrefix: PREFIX }), { logger: false });
  const queueApp = await NestFactory.createApplicationContext(RedisLimitModule.forRoot({ redis: queueServer.url, keyPrefix: PREFIX }), { logger: false });
  const hash = app.get(ExpiringHashService);
  const delivered = new Map<string, number>();
  app.get(DelayQueueService).consume<ExpiredField>('lag-expired', ({ payload }) => void delivered.set(payload.key, Date.now()));
  const consumer = queueApp.get(DelayQueueService).consume('idle-queue', () => undefined);
  await hash.setIfBelow('idle-owner', 'slot', 'v', 3_600_000, 3, { notify: 'idle-expired' });
  await hash.set('idle-owner', 'kept', 'v');
  await sleep(2000); // start-up: the first look at every registry shard, the consumers' first claims
  const [[hashCalls, hashCommands], [queueCalls, queueCommands]] = await Promise.all([idleRate(hashAdmin), idleRate(queueAdmin)]);

  // lag: fields expiring over 2 s, each beside a field without ttl (its hash key never expires)
  const keys = new RedisKeys(PREFIX);
  const expiries = new Map<string, number>();
  const start = Date.now() + 1000;
  await pool(LAG_FIELDS, 32, async (i) => {
    const owner = `lag-${i}`;
    await hash.set(owner, 'keep', 'v');
    const at = start + Math.floor((i * 2000) / LAG_FIELDS);
    await hash.set(owner, 'f', value(i), at - Date.now(), { notify: 'lag-expired' });
    expiries.set(owner, at);
  });
  const removed = new Map<string, number>();
  while (removed.size < LAG_FIELDS && Date.now() < start + 30_000) {
    const owners = [...expiries.keys()].filter((o) => !removed.has(o));
    const p = hashAdmin.pipeline();
    for (const owner of owners) p.hlen(keys.build('eh', owner));
    const lens = (await p.exec())!.map(([, n]) => Number(n));
    const seen = Date.now();
    owners.forEach((owner, i) => {
      if (lens[i]! <= 2) removed.set(owner, seen); // the meta field and 'keep' remain
    });
    await sleep(20);
  }
  while (delivered.size < LAG_FIELDS && Date.now() < start + 30_000) await sleep(50);
  const lag = (at: Map<string, number>) => spread(at.size ? [...at].map(([owner, t]) => t - expiries.get(owner)!) : [NaN]);
  const figures: IdleFigures = {
    hashCallsPerSecond: hashCalls,
    hashCommandsPerSecond: hashCommands,
    queueCallsPerSecond: queueCalls,
    queueCommandsPerSecond: queueCommands,
    removalLagMs: lag(removed),
    notifyLagMs: lag(delivered),
  };
  if (removed.size < LAG_FIELDS || delivered.size < LAG_FIELDS) log(`!! ${flavor}: ${removed.size} removed, ${delivered.size} notified of ${LAG_FIELDS}`);
  await consumer.stop();
  await Promise.all([app.close(), queueApp.close()]);
  hashAdmin.disconnect();
  queueAdmin.disconnect();
  await Promise.all([hashServer.stop(), queueServer.stop()]);
  return figures;
}

function printIdle(byFlavor: Map<RedisFlavor, IdleFigures>): void {
  console.log(`## At rest
`);
  console.log(
    `One process with the module's defaults that has used ExpiringHashService (a slot with a notification due in an hour, a field ` +
      `without ttl), beside one DelayQueue consumer on an empty queue, each on its own server (every server flavor at the same time); calls counted from INFO commandstats ` +
      `over ${IDLE_SECONDS} s. Then ${LAG_FIELDS} fields with notifications expiring over 2 s, each in a hash whose key does not expire ` +
      `(only the sweeper removes them): ms from expiry until HLEN showed the field gone (polled every 20 ms) and until its notification was handled.\n`,
  );
  const flavors = [...byFlavor.keys()];
  const row = (label: string, cell: (f: IdleFigures) => string) => console.log(`| ${label} | ${flavors.map((f) => cell(byFlavor.get(f)!)).join(' | ')} |`);
  console.log(`| figure | ${flavors.join(' | ')} |`);
  console.log(`|---|${flavors.map(() => '---:').join('|')}|`);
  row('ExpiringHash process at rest: script calls/s (all commands/s)', (f) => `${f.hashCallsPerSecond.toFixed(2)} (${f.hashCommandsPerSecond.toFixed(2)})`);
  row('DelayQueue consumer at rest: script calls/s (all commands/s)', (f) => `${f.queueCallsPerSecond.toFixed(2)} (${f.queueCommandsPerSecond.toFixed(2)})`);
  row('expiry → field gone from memory, ms: median (max)', (f) => `${f.removalLagMs.median.toFixed(0)} (${f.removalLagMs.max.toFixed(0)})`);
  row('expiry → notification handled, ms: median (max)', (f) => `${f.notifyLagMs.median.toFixed(0)} (${f.notifyLagMs.max.toFixed(0)})`);
  console.log('');
}

async function main(): Promise<void> {
  const started = performance.now();
  const memoryFlavors = (process.env['BENCH_MEMORY_FLAVORS'] ?? FLAVORS.join(',')).split(',').filter(Boolean) as RedisFlavor[];
  // bytes in Redis do not depend on CPU contention: the runs go side by side, each on its own server
  await Promise.all(
    Array.from({ length: MEMORY_RUNS }, async () => {
      for (const flavor of memoryFlavors) await memoryRun(flavor);
    }),
  );
  if (results.size) printMemory();
  if (process.env['BENCH_JSON']) writeJson(process.env['BENCH_JSON']);
  if (IDLE_FLAVORS.length > 0) {
    // the flavors idle at once, each on servers of their own: timers pace an idle process, and the
    // lag test loads 2 cores by a few per cent
    const figures = await Promise.all(IDLE_FLAVORS.map(idleRun));
    const idle = new Map(IDLE_FLAVORS.map((flavor, i) => [flavor, figures[i]!]));
    printIdle(idle);
    if (process.env['BENCH_IDLE_JSON']) writeFileSync(process.env['BENCH_IDLE_JSON'], JSON.stringify(Object.fromEntries(idle), null, 2));
  }
  if (DRAIN_FLAVORS.length + BIG_DRAIN_FLAVORS.length > 0) {
    console.log(`## Sweep drain\n`);
    console.log(
      `Fields with a ${DRAIN_TTL_MS / 1000} s ttl, plus one field without a ttl per hash so that no hash key expires by itself ` +
        `(only the sweeper can drain them), written with no sweeper running; two sweepers start once every field has expired. ` +
        `Timed until the sweep registry is empty, then every hash is checked. Durations are wall time on a shared 2-core machine ` +
        `(redis-server reniced to -10 for the drain): a descheduled server thread still shows up as a slow call, ` +
        `see the line on commands inside scripts, which are O(1) or O(12) here.\n`,
    );
  }
  for (const flavor of DRAIN_FLAVORS) console.log((await drainRun(flavor, SPREAD)).join('\n'));
  // one hash past the 128-field threshold: swept through its bucket index, at most 1,000 fields a call
  for (const flavor of BIG_DRAIN_FLAVORS) console.log((await drainRun(flavor, ONE_BIG)).join('\n'));
  if (serverVersions.length) console.log(`Servers: ${serverVersions.join(', ')}.`);
  console.log(`Total run ${((performance.now() - started) / 1000).toFixed(0)} s.`);
}

await main();
