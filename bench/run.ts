// `npm run bench`: every comparison in one run on this machine, written to BENCHMARKS.md and
// benchmarks.svg. Sections run one after another (never two loads at once on 2 cores; only memory
// measurements, and timer-paced ones, share their time: see below):
// ceiling, decisions, http, flood, sliding, bound, outcomes, memory, queue, queue-ops, flow. BENCH_SECTIONS (comma list) picks fewer; BENCH_RUNS,
// BENCH_CALLS, BENCH_HTTP_SECONDS and BENCH_RATE_SECONDS scale them down for a quick look (the report says so).
//
// The whole run stays under 10 minutes. At afa46c8 the sections took 534 s (8.9 min: ceiling 4,
// decisions 77, http 178, flood 69, sliding 14, outcomes 1, memory 97 = ExpiringHash's memory runs
// about 63 + its at-rest part 2 × 17, queue 94). Issue 16 adds three measurements (section 5a):
// - enqueue throughput: 3 rounds × 2 modes × 2 contenders of 20,000 messages, about 10 s of CPU-bound
//   load on a quiet machine: alone, in section queue-ops;
// - memory per scheduled message: 3 runs × 2 contenders, about 10 s, beside ExpiringHash's memory runs
//   (bytes do not depend on CPU; each on servers of its own), costing those a few seconds;
// - the rate limit: 30 whole seconds per contender, about 33 s with start-up; both contenders at once,
//   in processes and on servers of their own, beside the at-rest part, which in turn runs its two
//   server flavors at once (17 s instead of 34): all of them timer-paced (an idle process; 100 handler
//   starts a second per contender), a few per cent of the machine, and their figures are counts and
//   ~500 ms lags set by timers, not CPU.
// So memory becomes about 63 + 3 + 33 = 99 s and queue-ops about 10 s: 534 + 2 + 10 = 546 s, 9.1 min,
// and about 10 s more for the install check and the compile that `npm run bench` does first.
// Issue 30 adds section 6 (flow): Redis CPU per concurrency slot, about 40 s, three contenders
// against an upstream of unknown limit, 35 s each, and deadlines, about 20 s: about 3 min. The last full run before it took
// 12.5 min (3e42513), so the whole run is now about 15.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { RedisNode } from '../test/harness/redis-server.js';
import { ceiling, type CeilingRow } from './ceiling.bench.js';
import { barChart, type Bar } from './chart.js';
import { cell, formatRatio, ratio, type Spread } from './common/stats.js';
import { decisionThroughput, LIMIT, WINDOW_MS, type DecisionRow, type KeyShape } from './decisions.bench.js';
import { FLOOD_LIMIT, FLOOD_WINDOW_MS, floodCost, type FloodRow } from './flood.bench.js';
import { HTTP_LIMIT, HTTP_WINDOW_MS, httpOverhead, type HttpRow, type ROUTES } from './http.bench.js';
import { outcomeCost, outcomeTable, type OutcomeRow } from './outcomes.bench.js';
import { slidingWindowCost, SW_LIMIT, SW_SMALL_GRANTS, type SlidingRow } from './sliding-window.bench.js';
import { BOUND_LIMIT, BOUND_WINDOW_MS, windowBound, type BoundRow } from './window-bound.bench.js';
import { queueOpsReport, type QueueOpsFigures } from './queue-ops.report.js';

const ALL_SECTIONS = ['ceiling', 'decisions', 'http', 'flood', 'sliding', 'bound', 'outcomes', 'memory', 'queue', 'queue-ops', 'flow'];
const SECTIONS = process.env['BENCH_SECTIONS']?.split(',') ?? ALL_SECTIONS;
const RUNS = Number(process.env['BENCH_RUNS'] ?? 3);
const CALLS = Number(process.env['BENCH_CALLS'] ?? 200_000);
const IN_FLIGHT = 256;
const CEILING_REQUESTS = Math.min(CALLS, 50_000);
// The HTTP and flood ratios swing most from run to run on this 2-core machine (autocannon, the app
// and Redis share it): they take 5 runs where the rest take 3. 8 HTTP rows × 5 runs at 4 s a load:
// under 3 minutes; 4 flood rows × 5 runs at 3 s: about 75 s; the whole run stays inside its 10.
const HTTP_RUNS = RUNS === 3 ? 5 : RUNS;
const FULL_HTTP_SECONDS = 4;
const HTTP_SECONDS = Number(process.env['BENCH_HTTP_SECONDS'] ?? FULL_HTTP_SECONDS);
const FLOOD_SECONDS = Math.min(HTTP_SECONDS, 3);
// issue 16 measures the rate limit over 30 s
const FULL_RATE_SECONDS = 30;
const RATE_SECONDS = Number(process.env['BENCH_RATE_SECONDS'] ?? FULL_RATE_SECONDS);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BUILD = fileURLToPath(new URL('./', import.meta.url));

const log = (line: string) => console.error(line);
const started = performance.now();
const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { cwd: ROOT }).toString().trim();
const pkgVersion = (name: string) => (JSON.parse(readFileSync(`${ROOT}bench/node_modules/${name}/package.json`, 'utf8')) as { version: string }).version;

/** A child bench that also writes its figures to the file BENCH_JSON names: its tables and those figures. */
async function childWithJson<T>(script: string, env: Record<string, string>): Promise<[string, T]> {
  const json = `${os.tmpdir()}/nrl-bench-${script.replace(/\.js$/, '')}-${process.pid}.json`;
  const tables = await child(script, { ...env, BENCH_JSON: json });
  return [tables, JSON.parse(readFileSync(json, 'utf8')) as T];
}

/** Runs one of the standalone benches as a child; its tables (stdout) go into the report. */
function child(script: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [`${BUILD}${script}`], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${script} exited with ${code}`))));
  });
}

async function main(): Promise<void> {
  const md: string[] = [];
  const panels: { title: string; unit: string; bars: Bar[] }[] = [];
  const headlines: string[] = [];
  const redis = await RedisNode.start({ flavor: 'redis7', own: true });
  const admin = new Redis(redis.url);
  const redisVersion = /^redis_version:(\S+)/m.exec(await admin.info('server'))![1];
  admin.disconnect();
  const { host, port } = redis;

  let ceilingRows: CeilingRow[] = [];
  let decisionRows: DecisionRow[] = [];
  let httpRows: HttpRow[] = [];
  let floodRows: FloodRow[] = [];
  let slidingRows: SlidingRow[] = [];
  let boundRows: BoundRow[] = [];
  let outcomeRows: OutcomeRow[] = [];
  let memoryTables = '';
  let memory: Record<string, Record<string, Record<string, Spread>>> | undefined;
  let idle: Record<string, { hashCallsPerSecond: number; queueCallsPerSecond: number; removalLagMs: Spread; notifyLagMs: Spread }> | undefined;
  let queueTables = '';
  let queue: Record<string, QueueSummary> | undefined;
  // issue 16's figures (section 5a)
  const queueOps: QueueOpsFigures & { tables: { enqueue?: string; memory?: string; rate?: string } } = { tables: {} };
  const sectionSeconds: string[] = [];
  const timed = async (name: string, run: () => Promise<void>) => {
    if (!SECTIONS.includes(name)) return;
    const t = performance.now();
    log(`== ${name}`);
    await run();
    sectionSeconds.push(`${name} ${((performance.now() - t) / 1000).toFixed(0)} s`);
  };

  try {
    await timed('ceiling', async () => {
      ceilingRows = await ceiling({ host, port, requests: CEILING_REQUESTS, runs: RUNS, log });
    });
    await timed('decisions', async () => {
      decisionRows = await decisionThroughput({ host, port, calls: CALLS, inFlight: IN_FLIGHT, runs: RUNS, log });
    });
    await timed('http', async () => {
      httpRows = await httpOverhead({ redisHost: host, redisPort: port, connections: 50, seconds: HTTP_SECONDS, runs: HTTP_RUNS, log });
    });
    await timed('flood', async () => {
      floodRows = await floodCost({ redisHost: host, redisPort: port, connections: 50, seconds: FLOOD_SECONDS, runs: HTTP_RUNS, log });
    });
    await timed('sliding', async () => {
      slidingRows = await slidingWindowCost({ host, port, runs: RUNS, log });
    });
    await timed('bound', async () => {
      boundRows = await windowBound({ host, port, log });
    });
    await timed('outcomes', async () => {
      outcomeRows = await outcomeCost({ host, port, runs: RUNS, log });
    });
  } finally {
    await redis.stop();
  }
  // issue 16's memory per message and rate limit: in the memory section when both run (see the top)
  const queueMemory = async () => {
    [queueOps.tables.memory, queueOps.memory] = await childWithJson<NonNullable<QueueOpsFigures['memory']>>('delay-queue-memory.bench.js', {
      BENCH_ROUNDS: String(RUNS),
    });
  };
  const queueRate = async () => {
    [queueOps.tables.rate, queueOps.rate] = await childWithJson<NonNullable<QueueOpsFigures['rate']>>('delay-queue-rate.bench.js', {
      BENCH_RATE_SECONDS: String(RATE_SECONDS),
    });
  };
  const alsoQueueOps = SECTIONS.includes('queue-ops');
  await timed('memory', async () => {
    const idleJson = `${os.tmpdir()}/nrl-bench-idle-${process.pid}.json`;
    const skip = { BENCH_DRAIN_FLAVORS: '', BENCH_BIG_DRAIN_FLAVORS: '' };
    const [[hashMemory, hashFigures]] = await Promise.all([
      childWithJson<NonNullable<typeof memory>>('expiring-hash.bench.js', {
        ...skip,
        BENCH_MEMORY_FLAVORS: 'redis8,valkey9',
        BENCH_SHAPES: '1000,33333,50000,100000',
        BENCH_LAYOUTS: 'strings,plain,index,native',
        BENCH_MEMORY_RUNS: String(RUNS),
        BENCH_MEMORY_PARTS: '0',
        BENCH_IDLE_FLAVORS: '',
      }),
      alsoQueueOps && queueMemory(),
    ]);
    memory = hashFigures;
    const [atRest] = await Promise.all([
      child('expiring-hash.bench.js', {
        ...skip,
        BENCH_MEMORY_FLAVORS: '',
        BENCH_IDLE_FLAVORS: 'redis7,redis8',
        BENCH_IDLE_SECONDS: process.env['BENCH_IDLE_SECONDS'] ?? '10',
        BENCH_IDLE_JSON: idleJson,
      }),
      alsoQueueOps && queueRate(),
    ]);
    const untimed = (tables: string) => tables.replace(/^Total run.*$/m, '').trim(); // the section's seconds say it
    memoryTables = `${untimed(hashMemory)}\n\n${untimed(atRest)}`;
    idle = JSON.parse(readFileSync(idleJson, 'utf8'));
  });
  await timed('queue', async () => {
    const json = `${os.tmpdir()}/nrl-bench-queue-${process.pid}.json`;
    queueTables = await child('delay-queue.bench.js', {
      BENCH_ROUNDS: String(RUNS),
      BENCH_TRICKLE_SECONDS: process.env['BENCH_TRICKLE_SECONDS'] ?? '3',
      BENCH_IDLE_SECONDS: process.env['BENCH_IDLE_SECONDS'] ?? '5',
      BENCH_IDLE_SETTLE_MS: process.env['BENCH_IDLE_SETTLE_MS'] ?? '1000',
      BENCH_JSON: json,
    });
    queue = JSON.parse(readFileSync(json, 'utf8'));
  });
  await timed('queue-ops', async () => {
    [queueOps.tables.enqueue, queueOps.enqueue] = await childWithJson<NonNullable<QueueOpsFigures['enqueue']>>('delay-queue-enqueue.bench.js', {
      BENCH_ROUNDS: String(RUNS),
    });
    if (!queueOps.memory) await queueMemory();
    if (!queueOps.rate) await queueRate();
  });

  // issue 30's flow control: Redis CPU per slot, and consumers against an upstream of unknown limit
  // (about 40 s and 3 x 35 s), and deadlines (about 20 s), each on a redis-server of its own
  let flow: { slots?: [string, SlotFigures]; upstream?: [string, UpstreamFigures]; timeouts?: [string, TimeoutFigures] } = {};
  await timed('flow', async () => {
    flow = {
      slots: await childWithJson<SlotFigures>('slots-cpu.bench.js', { BENCH_RUNS: String(RUNS) }),
      upstream: await childWithJson<UpstreamFigures>('adaptive-upstream.bench.js', {}),
      timeouts: await childWithJson<TimeoutFigures>('timeouts.bench.js', {}),
    };
  });

  // ---- the report ------------------------------------------------------------------------------
  const commit =
    sh('git', ['rev-parse', '--short', 'HEAD']) + (sh('git', ['status', '--porcelain', '--', 'lib', 'lua']) ? ' (with uncommitted changes to lib/lua)' : '');
  const scaled =
    RUNS !== 3 || CALLS !== 200_000 || HTTP_SECONDS !== FULL_HTTP_SECONDS || RATE_SECONDS !== FULL_RATE_SECONDS || SECTIONS.length !== ALL_SECTIONS.length;
  md.push('# Benchmarks', '');
  md.push(
    `Written by \`npm run bench\` (bench/run.ts) on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC at commit ${commit}; ` +
      `the whole run took ${((performance.now() - started) / 60_000).toFixed(1)} min (${sectionSeconds.join(', ')}).` +
      (scaled
        ? ` **Scaled-down run** (BENCH_RUNS=${RUNS}, BENCH_CALLS=${CALLS}, BENCH_HTTP_SECONDS=${HTTP_SECONDS}, BENCH_RATE_SECONDS=${RATE_SECONDS}, sections ${SECTIONS.join(',')}): not the figures to quote.`
        : ''),
    '',
  );
  md.push(
    `Machine: ${os.availableParallelism()} cores (${os.cpus()[0]?.model ?? 'cpu'}), Linux ${os.release()}, Node ${process.version}; ` +
      `redis-server ${redisVersion} (Debian) on loopback, started by the bench with \`--save ''\`, shared by client and server, ` +
      `so figures are for comparing side by side, not absolute capacity. Every figure is the median of ${RUNS} runs (HTTP and flood: ${HTTP_RUNS}) with the min–max range; ` +
      `contenders alternate within each run.`,
    '',
  );
  md.push(
    `Versions: nest-redis-limit (this commit) with ioredis ${pkgVersion('ioredis')} and Nest ${pkgVersion('@nestjs/core')}; ` +
      `rate-limiter-flexible ${pkgVersion('rate-limiter-flexible')}; @nest-lab/throttler-storage-redis ${pkgVersion('@nest-lab/throttler-storage-redis')} ` +
      `with @nestjs/throttler ${pkgVersion('@nestjs/throttler')}; BullMQ ${pkgVersion('bullmq')}; autocannon ${pkgVersion('autocannon')} (bench/package.json).`,
    '',
  );
  md.push('![Headline comparisons](benchmarks.svg)', '');
  md.push('HEADLINES', '');

  const ceilingOf = (pipeline: number) => ceilingRows.find((r) => r.pipeline === pipeline)?.perSecond;
  if (ceilingRows.length) {
    md.push('## 1. Ceiling: redis-benchmark', '');
    md.push(
      `\`redis-benchmark -c 50 -P <P> -n ${CEILING_REQUESTS} -r 10000 EVALSHA <decide.lua> 1 rl:fw:{user-__rand_int__} '' 1 fw 1000 60000 1 1 1 1 1\`: ` +
        'our fixed-window decision, one per call, from C. The most single decisions Redis itself can take here.',
      '',
      '| pipeline | calls/s |',
      '|---|---:|',
      ...ceilingRows.map((r) => `| -P ${r.pipeline} | ${cell(r.perSecond)} |`),
      '',
    );
  }

  const row = (name: string, shape: KeyShape, pipelining = 'off') =>
    decisionRows.find((r) => r.name === name && r.shape === shape && r.pipelining === pipelining);
  const OURS = ['fixed-window', 'sliding-window', 'sliding-window-counter', 'token-bucket', 'funnel'].map((a) => `nest-redis-limit ${a}`);
  const RLF = 'rate-limiter-flexible RateLimiterRedis';
  const THROTTLER = '@nest-lab/throttler-storage-redis increment';
  const NAIVE = 'naive INCR then EXPIRE (no Lua)';
  const BARE = 'bare EVALSHA of our fixed-window script';
  if (decisionRows.length) {
    md.push('## 2. Decision throughput from one Node process', '');
    md.push(
      `${CALLS.toLocaleString('en-US')} calls per run, ${IN_FLIGHT} in flight, limit ${LIMIT} per ${WINDOW_MS / 1000} s for everyone ` +
        '(10,000 keys: 20 calls each, all granted; one hot key: 1,000 granted, then refusals). ' +
        'Ours: `RateLimiterService.consume` / `.funnel` through the module, which sends the decisions made in one turn of the event loop as one script call. ' +
        'rate-limiter-flexible: `RateLimiterRedis.consume` (a refusal is its rejection). throttler-storage-redis: `increment(key, ttl, limit, blockDuration, name)` called directly. ' +
        'Naive: `INCR`, then `PEXPIRE` when the count is 1 (two round trips on a first hit; a crash between them leaves a counter without expiry). ' +
        "Bare EVALSHA: ioredis `evalsha` of our decide.lua, one decision per call, nothing around it. Pipelining: ioredis `enableAutoPipelining` on the contender's client " +
        '(off is the default everywhere). CPU per call: this Node process (`process.cpuUsage`) and redis-server (INFO cpu, user + sys).',
      '',
    );
    for (const shape of ['10k-keys', 'hot-key'] as KeyShape[]) {
      md.push(`### ${shape === '10k-keys' ? '10,000 keys' : 'One hot key'}`, '');
      md.push('| contender | auto-pipelining | decisions/s | p50 ms | p99 ms | Node µs/call | Redis µs/call |', '|---|---|---:|---:|---:|---:|---:|');
      for (const r of decisionRows.filter((x) => x.shape === shape)) {
        const name = r.kind === 'ours' ? `**${r.name}**` : r.name;
        md.push(
          `| ${name} | ${r.pipelining} | ${cell(r.perSecond)} | ${cell(r.p50Ms, 2)} | ${cell(r.p99Ms, 2)} | ${cell(r.nodeUs, 1)} | ${cell(r.redisUs, 1)} |`,
        );
      }
      md.push('');
      const cols: [string, Spread | undefined][] = [
        ['÷ rate-limiter-flexible', row(RLF, shape)?.perSecond],
        ['÷ throttler-storage-redis', row(THROTTLER, shape)?.perSecond],
        ['÷ naive INCR+EXPIRE', row(NAIVE, shape)?.perSecond],
        ['÷ bare EVALSHA', row(BARE, shape)?.perSecond],
        ['÷ ceiling -P 1', ceilingOf(1)],
        ['÷ ceiling -P 16', ceilingOf(16)],
      ];
      const present = cols.filter(([, s]) => s !== undefined) as [string, Spread][];
      md.push(`| ours (pipelining off), ${shape} | ${present.map(([c]) => c).join(' | ')} |`, `|---|${present.map(() => '---:').join('|')}|`);
      for (const name of OURS) {
        const ours = row(name, shape)?.perSecond;
        if (!ours) continue;
        // paired per run, except the ceiling, which ran apart: medians only
        md.push(
          `| ${name.replace('nest-redis-limit ', '')} | ${present.map(([c, s]) => formatRatio(ratio(ours, s, !c.startsWith('÷ ceiling')))).join(' | ')} |`,
        );
      }
      md.push('');
    }
    const on = row(OURS[0]!, '10k-keys', 'auto')?.perSecond;
    const off = row(OURS[0]!, '10k-keys')?.perSecond;
    if (on && off) md.push(`Auto-pipelining on ÷ off, our fixed window on 10,000 keys: ${formatRatio(ratio(on, off))}.`, '');
    const fw = row(OURS[0]!, '10k-keys')?.perSecond;
    const rlf = row(RLF, '10k-keys')?.perSecond;
    const thr = row(THROTTLER, '10k-keys')?.perSecond;
    const bare = row(BARE, '10k-keys')?.perSecond;
    if (fw && rlf && thr && bare) {
      headlines.push(
        `- **Decisions, 10,000 keys** (our fixed window, ${cell(fw)}/s): ${formatRatio(ratio(fw, rlf))} rate-limiter-flexible, ` +
          `${formatRatio(ratio(fw, thr))} throttler-storage-redis, ${formatRatio(ratio(fw, bare))} a bare EVALSHA loop of the same script` +
          (ceilingOf(1)
            ? `, ${(fw.median / ceilingOf(1)!.median).toFixed(2)}× the redis-benchmark ceiling at -P 1 (${(fw.median / ceilingOf(16)!.median).toFixed(2)}× at -P 16).`
            : '.'),
      );
    }
    const bars = (shape: KeyShape): Bar[] =>
      [...OURS, RLF, THROTTLER, NAIVE, BARE].flatMap((name) => {
        const s = row(name, shape)?.perSecond;
        return s
          ? [
              {
                label: name.replace('@nest-lab/', '').replace(' RateLimiterRedis', '').replace(' increment', ''),
                ...s,
                ours: name.startsWith('nest-redis-limit'),
              },
            ]
          : [];
      });
    panels.push({ title: 'Decisions from one Node process, 10,000 keys, 256 in flight', unit: 'decisions/s', bars: bars('10k-keys') });
  }

  if (httpRows.length) {
    const of = (route: keyof typeof ROUTES) => httpRows.find((r) => r.route === route)!;
    const plain = of('no guard');
    const ours = of('@RateLimit (nest-redis-limit)');
    const slots = of('@MaxConcurrent (nest-redis-limit)');
    const defaults = of('defaultLimits (nest-redis-limit)');
    // defaultLimits against the unguarded route of its own process: two processes differ by more
    // than the guard costs (130 against 115 µs/req for the same guard path in one run)
    const defaultsPlain = of('defaultLimits app, @SkipRateLimit route');
    const thr = of('@nestjs/throttler + throttler-storage-redis');
    const gqlPlain = of('GraphQL, no guard');
    const gqlOurs = of('GraphQL, @RateLimit (nest-redis-limit)');
    const gqlThr = of('GraphQL, @nestjs/throttler + throttler-storage-redis');
    const isGraphQL = (r: HttpRow) => r.route.startsWith('GraphQL');
    md.push('## 3. HTTP overhead', '');
    md.push(
      `\`autocannon -c 50 -d ${HTTP_SECONDS}\` against the sample app's quote route (Express, bench/http-app.ts), five ways: ` +
        `no guard; \`@RateLimit({ limit: ${HTTP_LIMIT}, windowMs: ${HTTP_WINDOW_MS}, algorithm: 'fixed-window' })\`; ` +
        `\`@MaxConcurrent(${HTTP_LIMIT}, { name: 'quotes' })\` (a slot taken before the handler and given back when the response ends, never refused here); the same limit as the module's ` +
        "`defaultLimits` on an undecorated route (a server process of its own, as defaults apply to every route of an app), beside that app's own `@SkipRateLimit()` route as its baseline; and " +
        '`@UseGuards(ThrottlerGuard)` with the same limit on `@nestjs/throttler` storing in Redis through `@nest-lab/throttler-storage-redis`. ' +
        'Then the same quote as a GraphQL query (`POST /graphql`, Apollo on Express as in the sample app, bench/graphql-app.module.ts, a third server process), three ways: ' +
        "no guard; the same `@RateLimit`; and the throttler's documented GraphQL set-up, a `ThrottlerGuard` subclass whose `getRequestResponse` " +
        'reads `req` and `res` from `GqlExecutionContext`, with the same limit and Redis storage. ' +
        'All limits key by client IP (one key here) and are never reached: the rows measure deciding, not refusing ' +
        '(a GraphQL answer without the quote counts in the non-2xx column).',
      '',
      '| route | req/s | p50 ms | p99 ms | app CPU µs/req | Redis CPU µs/req | non-2xx | errors |',
      '|---|---:|---:|---:|---:|---:|---:|---:|',
      ...httpRows.map(
        (r) =>
          `| ${r.route} | ${cell(r.perSecond)} | ${cell(r.p50Ms, 1)} | ${cell(r.p99Ms, 1)} | ${cell(r.appUs)} | ${cell(r.redisUs, 1)} | ${r.non2xx} | ${r.errors} |`,
      ),
      '',
      `@RateLimit ÷ no guard: ${formatRatio(ratio(ours.perSecond, plain.perSecond))}; @MaxConcurrent ÷ no guard: ${formatRatio(ratio(slots.perSecond, plain.perSecond))}; defaultLimits ÷ its app's @SkipRateLimit route: ${formatRatio(ratio(defaults.perSecond, defaultsPlain.perSecond))} (÷ no guard: ${formatRatio(ratio(defaults.perSecond, plain.perSecond))}); ` +
        `throttler ÷ no guard: ${formatRatio(ratio(thr.perSecond, plain.perSecond))}; ` +
        `@RateLimit ÷ throttler: ${formatRatio(ratio(ours.perSecond, thr.perSecond))}. ` +
        `GraphQL: @RateLimit ÷ no guard: ${formatRatio(ratio(gqlOurs.perSecond, gqlPlain.perSecond))}; throttler ÷ no guard: ${formatRatio(ratio(gqlThr.perSecond, gqlPlain.perSecond))}; ` +
        `@RateLimit ÷ throttler: ${formatRatio(ratio(gqlOurs.perSecond, gqlThr.perSecond))} (ranges: the ratios within each run).`,
      '',
    );
    headlines.push(
      `- **HTTP**: a \`@RateLimit\` route serves ${formatRatio(ratio(ours.perSecond, plain.perSecond))} the req/s of the same route with no guard ` +
        `(under defaultLimits: ${formatRatio(ratio(defaults.perSecond, defaultsPlain.perSecond))} of a skipped route of the same app; @nestjs/throttler + Redis storage: ${formatRatio(ratio(thr.perSecond, plain.perSecond))}); ` +
        `ours ÷ throttler ${formatRatio(ratio(ours.perSecond, thr.perSecond))}. ` +
        `A \`@RateLimit\` GraphQL query: ${formatRatio(ratio(gqlOurs.perSecond, gqlPlain.perSecond))} of the unguarded query ` +
        `(the throttler's GraphQL guard: ${formatRatio(ratio(gqlThr.perSecond, gqlPlain.perSecond))}).`,
    );
    const bars = (rows: HttpRow[]) =>
      rows.map((r) => ({ label: r.route.replace('GraphQL, ', ''), ...r.perSecond, ours: r.route.endsWith('(nest-redis-limit)') }));
    panels.push({ title: `HTTP, autocannon -c 50 -d ${HTTP_SECONDS}, quote route`, unit: 'req/s', bars: bars(httpRows.filter((r) => !isGraphQL(r))) });
    panels.push({ title: `GraphQL (Apollo), autocannon -c 50 -d ${HTTP_SECONDS}, quote query`, unit: 'req/s', bars: bars(httpRows.filter(isGraphQL)) });
  }

  if (floodRows.length) {
    const of = (route: FloodRow['route']) => floodRows.find((r) => r.route === route)!;
    const plain = of('no guard');
    const cached = of('@RateLimit, refusal cache (nest-redis-limit)');
    const uncached = of('@RateLimit, refusalCache: false (nest-redis-limit)');
    const rlf = of('rate-limiter-flexible, inMemoryBlockOnConsumed');
    md.push('## 3a. A flood from one key over its limit', '');
    md.push(
      `\`autocannon -c 50 -d ${FLOOD_SECONDS}\` against the quote route (Express, bench/flood-app.ts) whose every request counts against one key ` +
        `already over its limit (a \`key\` function returning one fixed key, ${FLOOD_LIMIT} per ${FLOOD_WINDOW_MS / 3_600_000} h; the warm-up takes the one grant), four ways: ` +
        'no guard (the baseline: it serves the quote); `@RateLimit` with the refusal cache (the default); `@RateLimit` with the module option ' +
        '`refusalCache: false` (a server process of its own), where Redis decides every refusal (decide.lua; the refusals that arrive in one turn ' +
        "of the event loop share one EVALSHA); and rate-limiter-flexible's `RateLimiterRedis` " +
        'in a Nest guard with `inMemoryBlockOnConsumed: limit + 1` and `inMemoryBlockDuration` unset (the key is blocked in memory from its first ' +
        'refusal for its msBeforeNext; a set duration would be a guess), answering 429 with the Retry-After and X-RateLimit-* headers its docs set, as ours does. Redis commands per response: the delta of INFO commandstats ' +
        "around each load, summed over every command but the bench's own INFO, so the commands a script runs count too (decide.lua's HMGET " +
        'and TIME); script calls: EVALSHA and EVAL alone, the round trips the library makes. Refused and other: responses ' +
        'over all runs (429, and anything else: a grant or a failure).',
      '',
      "| route | req/s | p50 ms | p99 ms | Redis commands/req (scripts' included) | script calls/req | app CPU µs/req | Redis CPU µs/req | refused | other | errors |",
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...floodRows.map(
        (r) =>
          `| ${r.route} | ${cell(r.perSecond)} | ${cell(r.p50Ms, 1)} | ${cell(r.p99Ms, 1)} | ${cell(r.commands, 4)} | ${cell(r.scripts, 4)} | ${cell(r.appUs)} | ${cell(r.redisUs, 2)} | ${r.refused} | ${r.other} | ${r.errors} |`,
      ),
      '',
      `Refused req/s ÷ no guard: refusal cache ${formatRatio(ratio(cached.perSecond, plain.perSecond))}; refusalCache: false ${formatRatio(ratio(uncached.perSecond, plain.perSecond))}; ` +
        `rate-limiter-flexible ${formatRatio(ratio(rlf.perSecond, plain.perSecond))}. Refusal cache ÷ rate-limiter-flexible: ${formatRatio(ratio(cached.perSecond, rlf.perSecond))}; ` +
        `÷ refusalCache: false: ${formatRatio(ratio(cached.perSecond, uncached.perSecond))} (ranges: the ratios within each run). ` +
        'Targets (issue 15): at most 0.01 Redis commands per refused request, and at least 0.95× the unguarded req/s.',
      '',
    );
    headlines.push(
      `- **Flood from one key over its limit**: with the refusal cache, ${cached.commands.median.toFixed(4)} Redis commands per refused request ` +
        `(${uncached.commands.median.toFixed(2)} without it) at ${formatRatio(ratio(cached.perSecond, plain.perSecond))} the unguarded route's req/s ` +
        `(without it ${formatRatio(ratio(uncached.perSecond, plain.perSecond))}; rate-limiter-flexible's in-memory block ${formatRatio(ratio(rlf.perSecond, plain.perSecond))}, ` +
        `${rlf.commands.median.toFixed(4)} commands per refusal).`,
    );
    panels.push({
      title: `Flood from one key over its limit, autocannon -c 50 -d ${FLOOD_SECONDS}`,
      unit: 'req/s; all refused but no guard',
      bars: floodRows.map((r) => ({ label: r.route.replace(' (nest-redis-limit)', ''), ...r.perSecond, ours: r.route.endsWith('(nest-redis-limit)') })),
    });
  }

  if (slidingRows.length) {
    md.push('## 3b. Sliding window: cost of one decision by permits', '');
    md.push(
      `\`bench/sliding-window.bench.ts\`: one EVALSHA of decide.lua on a fresh key, limit ${SW_LIMIT.toLocaleString('en-US')} per 60 s, ` +
        'granting the permits shown, then a decision on the same key for the whole limit (refused unless the key was empty), and ' +
        `${SW_SMALL_GRANTS.toLocaleString('en-US')} or more single-permit grants followed by a refusal whose retry time depends on all of them (each grant ` +
        'member carries the running total of permits granted on its key, so the grants a refusal waits for are found by binary search: O(log² grants) ' +
        'Redis calls, no walk). Redis CPU: INFO commandstats usec of that one call after CONFIG RESETSTAT; size: MEMORY USAGE ... SAMPLES 0 of the key after it. ' +
        '0.1 kept one sorted-set member per permit; it is not run at 3,000,000 permits (about 20 s with Redis blocked and a 369 MB key, issue 13).',
      '',
      '| decision | Redis µs, this commit | Redis µs, 0.1 | bytes after, this commit | bytes after, 0.1 |',
      '|---|---:|---:|---:|---:|',
    );
    for (const scenario of [...new Set(slidingRows.map((r) => r.scenario))]) {
      const ours = slidingRows.find((r) => r.scenario === scenario && r.contender === 'this commit');
      const old = slidingRows.find((r) => r.scenario === scenario && r.contender === '0.1');
      md.push(
        `| ${scenario} | ${ours ? cell(ours.redisUs) : '–'} | ${old ? cell(old.redisUs) : '–'} | ${ours ? cell(ours.bytes) : '–'} | ${old ? cell(old.bytes) : '–'} |`,
      );
    }
    md.push('');
  }

  if (boundRows.length) {
    md.push('## 3b2. Window algorithms: the most granted in any span of windowMs', '');
    md.push(
      `\`bench/window-bound.bench.ts\`: limit ${BOUND_LIMIT} per ${BOUND_WINDOW_MS / 1000} s, decide.lua at explicit times (exact figures, the same on any machine). ` +
        'Adversary: single permits asked for until refused at the last ms of a window, at the first ms of the next and at its last ms but one. ' +
        'Random: arrivals at 1.5 × the limit rate for 50 windows (exponential gaps, one seed), a permit each. ' +
        `The sliding window counter's bound is 2 × limit - 1 = ${2 * BOUND_LIMIT - 1} (docs/how-it-works.md); the exact window's is the limit.`,
      '',
      '| algorithm | traffic | most in any span of windowMs | granted / asked |',
      '|---|---|---:|---:|',
      ...boundRows.map((r) => `| ${r.algorithm} | ${r.traffic} | ${r.most} | ${r.granted.toLocaleString('en-US')} / ${r.asked.toLocaleString('en-US')} |`),
      '',
    );
  }

  if (outcomeRows.length) {
    md.push('## 3c. refund and penalize beside consume', '');
    md.push(
      '`bench/outcomes.bench.ts` (also `npm run bench -- outcomes`): each call one EVALSHA on its own (no batching), 1,000 keys a round, 64 in flight, ' +
        '1,000 permits per hour, each key half used first (not measured). A round consumes one permit on each key, refunds that grant (by its grant id), ' +
        'then penalizes each key one permit; beside them, a consume by the decide.lua of the commit before grant ids, refunds and blocks. ' +
        'Script µs: INFO commandstats usec of EVALSHA ÷ calls after CONFIG RESETSTAT; server µs: INFO cpu (user + sys, network included) ÷ calls. ' +
        'Target (issue 15): one round trip each (true by construction: one EVALSHA a call), Redis CPU per call within 1.5× of a consume.',
      '',
      outcomeTable(outcomeRows).trim(),
      '',
    );
    const worst = outcomeRows
      .filter((r) => r.call === 'refund' || r.call === 'penalize')
      .map((r) => ({ r, x: r.scriptUs.median / outcomeRows.find((c) => c.algorithm === r.algorithm && c.call === 'consume')!.scriptUs.median }))
      .sort((a, b) => b.x - a.x)[0];
    if (worst)
      headlines.push(
        `- **refund and penalize**: one EVALSHA each; the costliest, ${worst.r.algorithm} ${worst.r.call}, takes ${worst.x.toFixed(2)}× a consume's script time (target: within 1.5×).`,
      );
  }

  if (memory) {
    md.push('## 4. Memory per item: ExpiringHashService', '');
    md.push(
      'From `bench/expiring-hash.bench.ts` (also `npm run bench:hash`), run here with BENCH_SHAPES=1000,33333,50000,100000 BENCH_LAYOUTS=strings,plain,index,native ' +
        `BENCH_MEMORY_FLAVORS=redis8,valkey9 BENCH_MEMORY_RUNS=${RUNS}: 100,000 items as 100, 3, 2 and 1 per user, ` +
        'on Redis 8.0 (Debian trixie) and Valkey 9.1 (Debian unstable), where both modes run: index mode (hash + bucket index, as on Redis 7 ' +
        'and Valkey 8) and native mode (hash-field expiry). Redis 7 and Valkey 8 figures: `npm run bench:hash` and docs/benchmarks.md.',
      '',
      demote(memoryTables.trim()),
      '',
    );
    const get = (shape: string, layout: string, flavor: string) => memory?.[shape]?.[layout]?.[flavor];
    const line = (shape: string, label: string, flavor = 'redis8', server = 'Redis 8') => {
      const strings = get(shape, 'strings', flavor);
      const plain = get(shape, 'plain', flavor);
      const index = get(shape, 'index', flavor);
      const native = get(shape, 'native', flavor);
      if (!strings || !index || !native || !plain) return;
      headlines.push(
        `- **Memory, ${label}** (${server}): index mode ${index.median.toFixed(0)} B/item, native mode ${native.median.toFixed(0)} B/item, ` +
          `against ${strings.median.toFixed(0)} B for one string key with PEXPIRE per item and ${plain.median.toFixed(0)} B for a bare hash without ttl.`,
      );
    };
    line('1,000 hashes × 100 items', '100 items per user');
    line('33,333 hashes × 3 items', '3 items per user');
    line('50,000 hashes × 2 items', '2 items per user');
    line('100,000 hashes × 1 item', '1 item per user');
    line('33,333 hashes × 3 items', '3 items per user', 'valkey9', 'Valkey 9');
    for (const [flavor, f] of Object.entries(idle ?? {})) {
      headlines.push(
        `- **ExpiringHash at rest** (${flavor}): ${f.hashCallsPerSecond.toFixed(2)} Redis script calls/s from an idle process that has used the service ` +
          `(one DelayQueue consumer: ${f.queueCallsPerSecond.toFixed(2)}); an expired field leaves memory ${f.removalLagMs.median.toFixed(0)} ms ` +
          `(max ${f.removalLagMs.max.toFixed(0)}) after its expiry, and its notification is handled ${f.notifyLagMs.median.toFixed(0)} ms (max ${f.notifyLagMs.max.toFixed(0)}) after it.`,
      );
    }
  }

  if (queue) {
    md.push('## 5. DelayQueue beside BullMQ', '');
    md.push(
      'From `bench/delay-queue.bench.ts` (also `npm run bench:queue`), run here with ' +
        `BENCH_ROUNDS=${RUNS} BENCH_TRICKLE_SECONDS=${process.env['BENCH_TRICKLE_SECONDS'] ?? '3'} BENCH_IDLE_SECONDS=${process.env['BENCH_IDLE_SECONDS'] ?? '5'} ` +
        '(the standalone bench defaults to 10 s and 30 s; the idle consumers claim once per 5 s, so a 5 s window sees one claim each).',
      '',
      demote(
        queueTables
          .replace(/^## .*\n/m, '')
          .replace(/^Command: .*\n/m, '')
          .trim(),
      ),
      '',
    );
    const ours = queue['ours'];
    const bull = queue['bullmq'];
    if (ours?.trickle.p99 && bull?.trickle.p99 && ours.burst.drainedMs && bull.burst.drainedMs) {
      headlines.push(
        `- **DelayQueue** (4 consumers): trickle lateness p99 ${ours.trickle.p99.median.toFixed(1)} ms vs BullMQ ${bull.trickle.p99.median.toFixed(1)} ms; ` +
          `a 20,000-message burst drained in ${ours.burst.drainedMs.median.toFixed(0)} ms vs ${bull.burst.drainedMs.median.toFixed(0)} ms; ` +
          `idle ${ours.idle.commandsPerConsumerPerSecond?.median.toFixed(2)} vs ${bull.idle.commandsPerConsumerPerSecond?.median.toFixed(2)} Redis commands per consumer per second; ` +
          `lost ${ours.lost}, duplicated ${ours.duplicates}.`,
      );
      panels.push({
        title: 'DelayQueue: 20,000 messages due at once, time to drain',
        unit: 'ms, lower is better',
        bars: [
          { label: 'nest-redis-limit DelayQueue', ...ours.burst.drainedMs, ours: true },
          { label: 'BullMQ delayed jobs', ...bull.burst.drainedMs, ours: false },
        ],
      });
    }
  }

  const opsTables = [queueOps.tables.enqueue, queueOps.tables.memory, queueOps.tables.rate].filter((t) => t !== undefined);
  if (opsTables.length) {
    md.push('## 5a. DelayQueue operations beside BullMQ (issue 16)', '');
    md.push(
      'From `bench/delay-queue-enqueue.bench.ts`, `bench/delay-queue-memory.bench.ts` and `bench/delay-queue-rate.bench.ts` ' +
        `(also \`npm run bench -- delay-queue-enqueue\` and so on), run here with BENCH_ROUNDS=${RUNS} BENCH_RATE_SECONDS=${RATE_SECONDS}; ` +
        'every contender run on a redis-server of its own, BullMQ with its default options.' +
        (SECTIONS.includes('memory')
          ? " The memory per message loaded beside section 4's memory runs (bytes do not depend on CPU), and the rate limit ran beside section 4's at-rest part " +
            '(both timer-paced, a few per cent of the machine), each on servers and in processes of its own.'
          : ''),
      '',
      ...opsTables.map((t) => `${t.trim()}\n`),
    );
    const ops = queueOpsReport(queueOps);
    headlines.push(...ops.headlines);
    panels.push(...ops.panels);
  }

  if (flow.slots && flow.upstream && flow.timeouts) {
    const [slotTable, slots] = flow.slots;
    const [upstreamTable, upstream] = flow.upstream;
    const [timeoutTable, timeouts] = flow.timeouts;
    md.push('## 6. Flow control per tenant (issue 30)', '');
    md.push(
      'From `bench/slots-cpu.bench.ts`, `bench/adaptive-upstream.bench.ts` and `bench/timeouts.bench.ts` (also `npm run bench -- slots-cpu` and so on), ' +
        `each on a redis-server of its own; the upstream's contenders one after the other, one run each. The HTTP cost of \`@MaxConcurrent\` is in section 3.`,
      '',
      demote(slotTable.trim()),
      '',
      demote(upstreamTable.trim()),
      '',
      demote(timeoutTable.trim()),
      '',
    );
    const row = (contender: string) => upstream.results.find((r) => r.contender === contender);
    const [adaptive, told, bullmq] = [row('adaptive'), row('told'), row('bullmq')];
    const served = (r: UpstreamFigures['results'][number] | undefined) =>
      r === undefined ? 'not run' : `mean ${r.mean.toFixed(1)}, lowest tenant ${r.lowest.toFixed(1)}, ${(r.refusedShare * 100).toFixed(1)}% refused`;
    const slot = httpRows.find((r) => r.route === '@MaxConcurrent (nest-redis-limit)');
    const plain = httpRows.find((r) => r.route === 'no guard');
    headlines.push(
      `- **Concurrency slots**: an acquire plus its release costs ${slots.slotUs.median.toFixed(1)} µs of Redis CPU, ` +
        `${formatRatio(ratio(slots.slotUs, slots.slidingUs))} a sliding-window consume and ${formatRatio(ratio(slots.slotUs, slots.fixedUs))} a fixed-window one (target: within 2×)` +
        (slot && plain
          ? `; a \`@MaxConcurrent\` route serves ${formatRatio(ratio(slot.perSecond, plain.perSecond))} the req/s of the same route without it (target: at least 0.9×).`
          : '.'),
      `- **An upstream of unknown limit** (${upstream.trueLimit} calls per tenant per second, 429 above; 10 tenants, ${upstream.seconds} s after ${upstream.warmup} s of warm-up), served per tenant-second: ` +
        `adaptive consumers guessing twice the limit ${served(adaptive)} (target: every tenant at least ${upstream.target}, at most 2% refused); ` +
        `told the limit ${served(told)}; BullMQ's global limiter with RateLimitError ${served(bullmq)}.`,
      `- **Deadlines** (timeoutMs ${timeouts.timeoutMs}, a handler that ignores its signal): the signal fires ${timeouts.signal.p99.toFixed(1)} ms late at p99 ` +
        `(max ${timeouts.signal.max.toFixed(1)}), the retry starts ${timeouts.retry.p99.toFixed(1)} ms after signal + backoff at p99 (max ${timeouts.retry.max.toFixed(1)}); ` +
        `target: both within 50 ms at p99 (${timeouts.complete} of ${timeouts.messages} messages).`,
    );
  }

  const report = md.join('\n').replace('HEADLINES', headlines.length ? `## Headlines\n\n${headlines.join('\n')}` : '');
  writeFileSync(`${ROOT}BENCHMARKS.md`, `${report.trimEnd()}\n`);
  writeFileSync(`${ROOT}benchmarks.svg`, barChart('nest-redis-limit beside the alternatives (this machine, one run of npm run bench)', panels));
  log(`wrote BENCHMARKS.md and benchmarks.svg in ${((performance.now() - started) / 60_000).toFixed(1)} min`);
}

/** A child bench's headings, one level down: they sit inside a section of this report. */
const demote = (markdown: string) => markdown.replace(/^(#{2,5}) /gm, '#$1 ');

/** slots-cpu.bench.ts's figures: Redis µs per operation. */
interface SlotFigures {
  slotUs: Spread;
  slidingUs: Spread;
  fixedUs: Spread;
}

/** adaptive-upstream.bench.ts's figures. */
interface UpstreamFigures {
  target: number;
  trueLimit: number;
  seconds: number;
  warmup: number;
  results: { contender: string; name: string; lowest: number; highest: number; mean: number; refusedShare: number }[];
}

/** timeouts.bench.ts's figures: lateness in ms. */
interface TimeoutFigures {
  messages: number;
  complete: number;
  timeoutMs: number;
  backoffMs: number;
  signal: { p50: number; p99: number; max: number };
  retry: { p50: number; p99: number; max: number };
}

interface QueueSummary {
  trickle: { p50?: Spread; p95?: Spread; p99?: Spread; max?: Spread };
  burst: { drainedMs?: Spread; perSecond?: Spread };
  idle: { commandsPerConsumerPerSecond?: Spread };
  lost: number;
  duplicates: number;
}

await main();
