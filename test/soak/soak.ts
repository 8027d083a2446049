// `npm run soak [-- --duration <s>]`: the soak and fault run. Two web workers (Nest apps with the
// library's guards, each driving itself over loopback HTTP and enqueuing delay messages) and two
// consumer processes share a redis-server this run starts (appendonly on, a free loopback port),
// while this controller injects faults in turn: SIGSTOP/SIGCONT longer than commandTimeoutMs,
// SCRIPT FLUSH, CLIENT KILL TYPE normal, a restart, SIGKILL of a consumer. At the end it checks
// the invariants over the workers' logs, prints them as figures, and exits 1 on any violation.
// The outcome-aware routes have their own: countIf (failures only), blockMs lockouts, the refusal
// cache's hits under a flood, and failMode 'local' (each worker's share of a limit during outages);
// @MaxConcurrent its cap per key across the workers.
import 'reflect-metadata';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { DelayQueueService, ExpiringHashService, RedisLimitModule, type QueueSize } from '../../lib/index.js';
import { RedisNode } from '../harness/redis-server.js';
import { clockOffset, now, SOAK, type FromWorker, type WebLog, type WorkerConfig } from './config.js';
import { FAULTS, inject, PAUSE_MS, type Fault } from './faults.js';
import {
  checkCacheHits,
  checkConcurrency,
  checkCountIf,
  checkAdaptiveLimits,
  checkDelivery,
  checkLocalGrants,
  checkLockout,
  checkFixedWindow,
  checkMaxPending,
  checkOutageLatency,
  checkSlidingWindow,
  checkTokenBucket,
  expectedTicks,
  fixedWindowCounts,
  type Grant,
  type Violation,
} from './invariants.js';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '180' },
    'fault-every': { type: 'string', default: '6' },
    rate: { type: 'string', default: '60' },
  },
});
const DURATION_S = positive('duration');
const FAULT_EVERY_S = positive('fault-every');
const RATE = positive('rate');
const BOUND_MS = SOAK.commandTimeoutMs + 100;

function positive(name: keyof typeof args): number {
  const value = Number(args[name]);
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`--${name} must be a positive number, got ${args[name]}`);
  return value;
}

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const log = (line: string) => console.log(`[soak ${((now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}`);
const started = now();

interface Worker {
  name: string;
  child: ChildProcess;
  exited: Promise<number | null>;
}

function spawnWorker(script: string, config: WorkerConfig): Promise<Worker> {
  const child = fork(here(script), [JSON.stringify(config)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    child.once('message', (message: FromWorker) =>
      message.type === 'ready' ? resolve({ name: config.name, child, exited }) : reject(new Error(`unexpected ${message.type}`)),
    );
    void exited.then((code) => reject(new Error(`${config.name} exited with ${code} before it was ready`)));
  });
}

/** Asks a worker to stop; resolves with the path of the log it wrote. */
function stopWorker(worker: Worker): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${worker.name} did not stop within 60 s`)), 60_000);
    worker.child.on('message', (message: FromWorker) => {
      if (message.type === 'stopped') {
        clearTimeout(timer);
        resolve(message.log);
      }
    });
    worker.child.send({ type: 'stop' });
  });
}

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'nrl-soak-'));
  const redis = await RedisNode.start({ own: true, args: ['--appendonly', 'yes'] });
  const admin = new Redis(redis.url);
  admin.on('error', () => undefined); // refused while the server restarts: expected, and it reconnects
  log(`redis-server ${redis.url} (appendonly yes); logs in ${dir}; ${DURATION_S} s, a fault every ${FAULT_EVERY_S} s`);

  // the controller's own view: MaxPending counts sampled while the run goes on, and the queue's size
  @Module({ imports: [RedisLimitModule.forRoot({ redis: redis.url, keyPrefix: SOAK.keyPrefix, commandTimeoutMs: 1000 })] })
  class ControllerModule {}
  const ctx = await NestFactory.createApplicationContext(ControllerModule, { logger: ['error'] });
  const hash = ctx.get(ExpiringHashService);
  const queue = ctx.get(DelayQueueService);

  const workerConfig = (name: string): WorkerConfig => ({ name, redisUrl: redis.url, dir, rate: RATE, enqueueRate: 20, clockOffsetMs: clockOffset() });
  const consumers: Worker[] = [];
  let consumerCount = 0;
  const startConsumer = async () => {
    consumers.push(await spawnWorker('./consumer-worker.js', workerConfig(`c${(consumerCount += 1)}`)));
  };
  await startConsumer();
  await startConsumer();
  const webs = await Promise.all(['w1', 'w2'].map((name) => spawnWorker('./web-worker.js', workerConfig(name))));
  log(`2 web workers (${RATE} req/s and 20 delay messages/s each), 2 consumers: running`);

  // a recurring schedule, replaced again and again (the same interval, a new payload) while it ticks
  const { queue: ticksQueue, name: tickName, everyMs, replaceEveryMs } = SOAK.recurring;
  const { nextRunAt: firstTick } = await queue.schedule(ticksQueue, tickName, { everyMs, payload: 0 });
  let replacing = true;
  let replaced = 0;
  const replacer = (async () => {
    while (replacing) {
      await sleep(replaceEveryMs);
      // a fault may refuse one: the schedule keeps ticking as it was
      if (
        await queue.schedule(ticksQueue, tickName, { everyMs, payload: (replaced % 2) + 1 }).then(
          () => true,
          () => false,
        )
      )
        replaced += 1;
    }
  })();

  const crashed: string[] = [];
  const faultCounts = new Map<Fault, number>();
  const target = {
    redis,
    admin,
    killConsumer: async () => {
      const victim = consumers.splice(Math.floor(Math.random() * consumers.length), 1)[0]!;
      victim.child.kill('SIGKILL');
      await victim.exited;
      crashed.push(victim.name);
      await startConsumer();
      return `${victim.name} (replaced by c${consumerCount})`;
    },
  };

  // sample every owner's pending count while the run goes on
  let sampling = true;
  const peakCount = new Map<string, number>();
  const sampler = (async () => {
    while (sampling) {
      await Promise.all(
        Array.from({ length: SOAK.pending.owners }, async (_, i) => {
          const owner = `u${i}`;
          const count = await hash.count(`${SOAK.pending.name}:${owner}`).catch(() => -1);
          peakCount.set(owner, Math.max(peakCount.get(owner) ?? 0, count));
        }),
      );
      await sleep(100);
    }
  })();

  const end = started + DURATION_S * 1000;
  let next = 0;
  await sleep(Math.min(3000, DURATION_S * 250));
  while (now() < end - 2000) {
    const fault = FAULTS[next++ % FAULTS.length]!;
    const done = await inject(fault, target);
    faultCounts.set(fault, (faultCounts.get(fault) ?? 0) + 1);
    log(done);
    await sleep(Math.max(0, Math.min(FAULT_EVERY_S * 1000, end - now())));
  }
  await sleep(Math.max(0, end - now()));

  log('stopping the web workers');
  const webLogs = (await Promise.all(webs.map(stopWorker))).map((file) => JSON.parse(readFileSync(file, 'utf8')) as WebLog);
  replacing = false;
  await replacer;
  while (
    !(await queue.unschedule(ticksQueue, tickName).then(
      () => true,
      () => false,
    ))
  )
    await sleep(200);
  log(`recurring schedule: replaced ${replaced} times, removed`);
  // every message is due within maxDelayMs; one leased by a killed consumer comes back after its lease
  const drainBy = now() + SOAK.queue.maxDelayMs + SOAK.queue.visibilityTimeoutMs + 20_000;
  let size = await queue.size(SOAK.queue.name);
  while (size.scheduled + size.inFlight > 0 && now() < drainBy) {
    await sleep(200);
    size = await queue.size(SOAK.queue.name);
  }
  log(`queue after the drain: ${JSON.stringify(size)}`);
  let ticksLeft = await queue.size(ticksQueue);
  while (ticksLeft.scheduled + ticksLeft.inFlight > 0 && now() < drainBy) {
    await sleep(200);
    ticksLeft = await queue.size(ticksQueue);
  }
  log(`recurring ticks after the drain: ${JSON.stringify(ticksLeft)}`);
  // every unpaid slot lapses within ttlMs of the last reservation; this process sweeps (it called
  // the service) and so delivers their notifications
  const lapseBy = now() + SOAK.pending.ttlMs + 20_000;
  let notices = await queue.size(SOAK.pending.notify);
  for (;;) {
    const armed = await admin.keys(`${SOAK.keyPrefix}ehn:*`);
    const waiting = (await Promise.all(armed.map((key) => admin.hlen(key)))).reduce((a, b) => a + b, 0);
    notices = await queue.size(SOAK.pending.notify);
    if ((waiting === 0 && notices.scheduled + notices.inFlight === 0) || now() > lapseBy) break;
    await sleep(200);
  }
  log(`lapse notifications after the drain: ${JSON.stringify(notices)}`);
  await Promise.all(consumers.map(stopWorker));
  sampling = false;
  await sampler;

  const violations = [...judge(webLogs, dir, crashed, peakCount, faultCounts), ...judgeTicks(dir, crashed, firstTick, ticksLeft)];
  await ctx.close();
  admin.disconnect();
  await redis.stop();
  // a failed run's logs stay for a look: the times below are ms on the soak's one clock (now())
  if (violations.length === 0) rmSync(dir, { recursive: true, force: true });
  log(violations.length === 0 ? 'every invariant held' : `${violations.length} violation(s); logs kept in ${dir}, started at ${started}:`);
  for (const v of violations) console.log(`  ${v.invariant}: ${v.detail}`);
  return violations.length === 0 ? 0 : 1;
}

/** Checks the invariants and prints the figures; returns the violations. */
function judge(webLogs: WebLog[], dir: string, crashed: string[], peakCount: Map<string, number>, faults: Map<Fault, number>): Violation[] {
  const violations: Violation[] = [];
  const grants = (route: keyof WebLog['grants']): Grant[] => webLogs.flatMap((w) => w.grants[route].map(([key, start, end]) => ({ key, start, end })));
  const answers = webLogs.flatMap((w) => w.answers);
  const row = (label: string, value: string) => console.log(`| ${label} | ${value} |`);

  console.log(`\n## Soak: ${DURATION_S} s, ${[...faults.values()].reduce((a, b) => a + b, 0)} faults\n`);
  console.log('| figure | value |\n|---|---|');
  row('faults injected', FAULTS.map((f) => `${f} ${faults.get(f) ?? 0}`).join(', '));
  for (const f of FAULTS) if (!faults.get(f)) violations.push({ invariant: 'coverage', detail: `no ${f} fault was injected: run longer` });

  // rate limits: grants never above the limit, from the grant log
  const limits: [keyof WebLog['grants'], string, Violation[]][] = [
    ['hot', `fixed window ${SOAK.hot.limit}/${SOAK.hot.windowMs} ms`, checkFixedWindow(grants('hot'), SOAK.hot.limit, SOAK.hot.windowMs)],
    [
      'sliding',
      `sliding window ${SOAK.sliding.limit}/${SOAK.sliding.windowMs} ms`,
      checkSlidingWindow(grants('sliding'), SOAK.sliding.limit, SOAK.sliding.windowMs),
    ],
    [
      'cold',
      `token buckets ${SOAK.cold.limit}/${SOAK.cold.windowMs} ms on ${SOAK.cold.keys} keys`,
      checkTokenBucket(grants('cold'), SOAK.cold.limit, SOAK.cold.windowMs),
    ],
    [
      'funnel',
      `funnel ${SOAK.funnel.capacity}/${SOAK.funnel.leakingDurationMs} ms`,
      checkTokenBucket(grants('funnel'), SOAK.funnel.capacity, SOAK.funnel.leakingDurationMs),
    ],
    ['flood', `fixed window ${SOAK.flood.limit}/${SOAK.flood.windowMs} ms, flooded`, checkFixedWindow(grants('flood'), SOAK.flood.limit, SOAK.flood.windowMs)],
    [
      'lock',
      `sliding window ${SOAK.lock.limit}/${SOAK.lock.windowMs} ms on ${SOAK.lock.keys} keys`,
      checkSlidingWindow(grants('lock'), SOAK.lock.limit, SOAK.lock.windowMs),
    ],
  ];
  for (const [route, what, found] of limits) {
    const mine = answers.filter((a) => a[0] === route);
    const by = (status: number) => mine.filter((a) => a[3] === status).length;
    row(
      `/${route}: ${what}`,
      `${mine.length} requests: ${grants(route).length} granted by Redis, ${by(429)} refused, ${by(503)} × 503, ` +
        `${mine.filter((a) => a[3] === 200 && a[4] === 1).length} passed unchecked; ${found.length === 0 ? 'never above the limit' : `${found.length} violation(s)`}`,
    );
    violations.push(...found);
    if (grants(route).length === 0) violations.push({ invariant: 'coverage', detail: `/${route} granted nothing` });
  }
  violations.push(...judgeOutcomes(webLogs, answers));
  const peak = Math.max(0, ...fixedWindowCounts(grants('hot'), SOAK.hot.windowMs).values());
  row('/hot: most grants in one fixed window', `${peak} (limit ${SOAK.hot.limit})`);

  // answers: only the statuses each failMode allows, and outage answers within the bound
  const allowed: Record<string, number[]> = {
    hot: [200, 429, 503],
    cold: [200, 429, 503],
    funnel: [200, 429, 503],
    sliding: [200, 429],
    order: [201, 429, 503],
    login: [200, 401, 429, 503],
    lock: [200, 429, 503],
    flood: [200, 429, 503],
    local: [200, 429],
    exports: [200, 429, 503],
  };
  for (const [route, statuses] of Object.entries(allowed)) {
    const odd = answers.filter((a) => a[0] === route && !statuses.includes(a[3]));
    if (odd.length > 0)
      violations.push({ invariant: 'status', detail: `/${route}: ${odd.length} answers with status ${[...new Set(odd.map((a) => a[3]))].join(', ')}` });
  }
  const outage = checkOutageLatency(
    answers.filter((a) => a[0] !== 'pay').map(([route, start, end, , failMode]) => ({ route, start, end, failMode: failMode === 1 })),
    BOUND_MS,
  );
  row(
    'answers by failMode (503 closed, unchecked pass open)',
    `${outage.failModeAnswers}, in at most ${outage.maxMs.toFixed(0)} ms (p99 ${outage.p99Ms.toFixed(0)} ms; bound commandTimeoutMs + 100 = ${BOUND_MS} ms)`,
  );
  violations.push(...outage.violations);
  if (outage.failModeAnswers === 0)
    violations.push({ invariant: 'coverage', detail: 'no request was answered by failMode: the faults did not reach the guards' });
  const all = answers.map((a) => a[2] - a[1]).sort((a, b) => a - b);
  row(
    'every answer, arrival to finish',
    `${all.length} answers, p50 ${(all[Math.floor(all.length / 2)] ?? 0).toFixed(1)} ms, p99 ${(all[Math.floor(all.length * 0.99)] ?? 0).toFixed(1)} ms, max ${(all[all.length - 1] ?? 0).toFixed(0)} ms`,
  );
  row('outages logged (RedisLimitEvents, per worker)', webLogs.map((w) => `${w.name} ${w.counters.outages}`).join(', '));
  row('client errors (connection, 5 s timeout)', String(webLogs.reduce((s, w) => s + w.clientErrors, 0)));
  row('performance.timeOrigin clocks off the shared one (per worker, ms)', webLogs.map((w) => `${w.name} ${w.originSkewMs.toFixed(2)}`).join(', '));

  // MaxPending: never more than max slots certainly held, and never more counted by Redis
  const slots = webLogs.flatMap((w) =>
    w.slots.map(([owner, , reservedStart, reservedEnd, release]) => ({
      owner,
      reservedStart,
      reservedEnd,
      ttlMs: SOAK.pending.ttlMs,
      ...(release >= 0 ? { releaseStart: release } : {}),
    })),
  );
  const pending = checkMaxPending(slots, SOAK.pending.max);
  violations.push(...pending);
  const sampled = Math.max(0, ...peakCount.values());
  if (sampled > SOAK.pending.max)
    violations.push({ invariant: 'max-pending', detail: `count() saw ${sampled} pending for one owner, max ${SOAK.pending.max}` });
  const refusedOrders = answers.filter((a) => a[0] === 'order' && a[3] === 429).length;
  row(
    `@MaxPending(${SOAK.pending.max}) on ${SOAK.pending.owners} owners`,
    `${slots.length} slots reserved, ${refusedOrders} refused (429); highest count() sampled ${sampled}; ${pending.length === 0 ? 'never above max' : `${pending.length} violation(s)`}`,
  );

  // lapsed slots: each notified once (twice only after its consumer was killed); a paid slot may be
  // notified when it was paid around its expiry, and a slot whose reservation failed under a fault
  // (a 503 or no answer) may have been written all the same
  const unpaid = webLogs.flatMap((w) => w.slots.filter((s) => s[4] < 0).map(([owner, slot]) => `${SOAK.pending.name}:${owner}/${slot}`));
  const paid = webLogs.flatMap((w) => w.slots.filter((s) => s[4] >= 0).map(([owner, slot]) => `${SOAK.pending.name}:${owner}/${slot}`));
  const known = new Set([...unpaid, ...paid]);
  const paidSet = new Set(paid);
  const lapsed = readHandled(dir, 'lapsed');
  const unlogged = new Set(lapsed.filter((h) => !known.has(h.id)).map((h) => h.id));
  const failedOrders = answers.filter((a) => a[0] === 'order' && a[3] >= 500).length + webLogs.reduce((n, w) => n + w.clientErrors, 0);
  const notified = checkDelivery(
    unpaid,
    paid,
    lapsed.filter((h) => known.has(h.id)),
    crashed,
  );
  violations.push(...notified.violations);
  if (unlogged.size > failedOrders) {
    violations.push({
      invariant: 'unknown',
      detail: `${unlogged.size} lapse notifications of slots never reserved, more than the ${failedOrders} reservations that failed`,
    });
  }
  row(
    '@MaxPending lapse notifications',
    `${unpaid.length} slots left unpaid, ${notified.lost} of them never notified, ${notified.duplicatesWithoutCrash} notified twice without a crash, ` +
      `${notified.duplicatesAfterCrash} twice after a consumer was killed; ${paid.length} paid (${lapsed.filter((h) => paidSet.has(h.id)).length} notified, paid about when they lapsed); ` +
      `${unlogged.size} notified whose reservation failed (of ${failedOrders})`,
  );

  // delay messages: each handled at least once; exactly once unless its consumer was killed
  const handled = readHandled(dir);
  const unacked = readHandled(dir, 'unacked').map((h) => h.id);
  const delivery = checkDelivery(
    webLogs.flatMap((w) => w.enqueued),
    webLogs.flatMap((w) => w.uncertain),
    handled,
    crashed,
    unacked,
  );
  violations.push(...delivery.violations);
  row(
    'delay messages',
    `${webLogs.reduce((s, w) => s + w.enqueued.length, 0)} enqueued (+${webLogs.reduce((s, w) => s + w.uncertain.length, 0)} whose enqueue failed), ` +
      `${delivery.handled} handled, ${delivery.lost} lost, ${delivery.duplicatesWithoutCrash} handled twice without a crash, ` +
      `${delivery.duplicatesAfterCrash} twice after a consumer was killed (${crashed.join(', ') || 'none'}), ` +
      `${delivery.duplicatesUnacknowledged} twice after their ack was given up in an outage (${unacked.length} given up, redis-limit.queue.unacknowledged)`,
  );

  // adaptive limits: never below 1, never above the configured limit, and some were halved
  const adaptive = readHandled(dir, 'adaptive').map((h) => Number(h.id));
  const { limit } = SOAK.queue.rateLimit;
  const bounds = checkAdaptiveLimits(adaptive, limit);
  violations.push(...bounds);
  row(
    'adaptive rate limits',
    `${adaptive.length} adaptive limits reported (each RetryLater with pauseKey), lowest ${adaptive.length === 0 ? '-' : Math.min(...adaptive)}, highest ${adaptive.length === 0 ? '-' : Math.max(...adaptive)} (of ${limit}); ` +
      `${bounds.length === 0 ? 'never outside [1, limit]' : `${bounds.length} violation(s)`}`,
  );
  // concurrencyPerKey: never more than its limit of a tenant's handlers at once, across processes
  const runs = readHandled(dir, 'runs').map(({ id }) => {
    const [key, start, end] = id.split(' ');
    return { key: key!, start: Number(start), end: Number(end) };
  });
  const perTenant = checkConcurrency(runs, SOAK.queue.concurrencyPerKey.limit);
  violations.push(...perTenant.violations);
  row(
    'concurrency per tenant',
    `${runs.length} handler runs that ended on their own, at most ${perTenant.most} of one tenant at once (limit ${SOAK.queue.concurrencyPerKey.limit}); ` +
      `${perTenant.violations.length === 0 ? 'never above it' : `${perTenant.violations.length} violation(s)`}`,
  );
  // @MaxConcurrent: never more than its limit of a key's requests in their handlers at once, across
  // the web workers (failMode 'closed': every handler that ran held a slot)
  const exportRuns = webLogs.flatMap((w) => w.exports.map(([key, start, end]) => ({ key, start, end })));
  const perKey = checkConcurrency(exportRuns, SOAK.concurrent.limit);
  violations.push(...perKey.violations);
  const exportAnswers = (status: number) => answers.filter((a) => a[0] === 'exports' && a[3] === status).length;
  row(
    `@MaxConcurrent(${SOAK.concurrent.limit}) on ${SOAK.concurrent.keys} keys`,
    `${exportRuns.length} requests ran, ${exportAnswers(429)} refused (429), ${exportAnswers(503)} × 503; at most ${perKey.most} of one key at once; ` +
      `${perKey.violations.length === 0 ? 'never above the limit' : `${perKey.violations.length} violation(s)`}`,
  );
  if (exportAnswers(429) === 0) violations.push({ invariant: 'coverage', detail: '@MaxConcurrent never refused: the route never met its cap' });
  console.log('');
  return violations;
}

/** The recurring schedule: every tick ran (but ranges a consumer reported missed), none twice
 * without a crash or a given-up ack to explain it, none that was not a tick. */
function judgeTicks(dir: string, crashed: string[], first: number, left: QueueSize): Violation[] {
  const { name, everyMs } = SOAK.recurring;
  const handled = readHandled(dir, 'ticks');
  const missed = readHandled(dir, 'missed').map(({ id }) => id.split(' ').map(Number) as [number, number]);
  const last = Math.max(first, ...handled.map((h) => Number(h.id.slice(h.id.lastIndexOf('@') + 1))));
  const expected = expectedTicks(name, first, last, everyMs, missed);
  const delivery = checkDelivery(
    expected,
    [],
    handled,
    crashed,
    readHandled(dir, 'ticks-unacked').map((h) => h.id),
  );
  const violations = delivery.violations.map((v) => ({ ...v, invariant: `ticks-${v.invariant}` }));
  if (left.dead > 0) violations.push({ invariant: 'ticks-dead', detail: `${left.dead} ticks died` });
  if (expected.length < 10) violations.push({ invariant: 'coverage', detail: `only ${expected.length} ticks: the schedule hardly ran` });
  console.log(
    `| recurring schedule, every ${everyMs} ms, replaced every ${SOAK.recurring.replaceEveryMs} ms | ${expected.length} ticks due, ${delivery.handled} ran, ` +
      `${delivery.lost} skipped, ${delivery.duplicatesWithoutCrash} twice without a crash, ${delivery.duplicatesAfterCrash} twice after a consumer was killed, ` +
      `${delivery.duplicatesUnacknowledged} twice after an ack was given up; ${missed.length} ranges missed while no consumer ran |`,
  );
  return violations;
}

/** The outcome-aware routes: countIf, blockMs, the refusal cache and failMode 'local'. */
function judgeOutcomes(webLogs: WebLog[], answers: WebLog['answers']): Violation[] {
  const row = (label: string, value: string) => console.log(`| ${label} | ${value} |`);
  const verdict = (found: Violation[], ok: string) => (found.length === 0 ? ok : `${found.length} violation(s)`);
  const refusals = (route: string) =>
    webLogs.flatMap((w) =>
      w.refusals.filter((r) => r[0] === route).map(([, key, start, end, blocked, cached]) => ({ key, start, end, blocked, cached: cached === 1, by: w.name })),
    );
  const by = (route: string, status: number) => answers.filter((a) => a[0] === route && a[3] === status).length;
  const violations: Violation[] = [];

  const logins = webLogs.flatMap((w) =>
    w.logins.map(([key, start, end, failed, refundedBy]) => ({
      key,
      start,
      end,
      failed: failed === 1,
      by: w.name,
      ...(refundedBy >= 0 ? { refundedBy } : {}),
    })),
  );
  // a request answered 503 may still have been run by a paused Redis once it resumed
  const uncertain = refusals('login-503').map(({ key, start, end }) => ({ key, start, until: end + PAUSE_MS }));
  const countIf = checkCountIf(logins, refusals('login'), uncertain, SOAK.login.limit, SOAK.login.windowMs, SOAK.login.invalidationMs);
  violations.push(...countIf);
  const failed = logins.filter((g) => g.failed).length;
  row(
    `/login/:acct: countIf failures, sliding window ${SOAK.login.limit}/${SOAK.login.windowMs} ms on ${SOAK.login.accounts} keys`,
    `${logins.length} granted (${failed} failed, ${logins.length - failed} succeeded, ${logins.filter((g) => g.refundedBy !== undefined).length} refunds seen), ` +
      `${by('login', 429)} refused, ${by('login', 503)} × 503; ${verdict(countIf, 'failures never above the limit, no refusal under it')}`,
  );
  if (failed === 0 || by('login', 429) === 0) violations.push({ invariant: 'coverage', detail: '/login: no failed grant or no refusal' });

  const lockouts = refusals('lock').filter((r) => r.blocked === 1);
  const lock = checkLockout(
    webLogs.flatMap((w) => w.grants.lock.map(([key, start, end]) => ({ key, start, end }))),
    lockouts,
    SOAK.lock.blockMs,
  );
  violations.push(...lock);
  row(
    `/lock/:k: blockMs ${SOAK.lock.blockMs}`,
    `${by('lock', 429)} refused, ${lockouts.length} of them set a lockout; ${verdict(lock, `no grant within ${SOAK.lock.blockMs} ms of one`)}`,
  );
  if (lockouts.length === 0) violations.push({ invariant: 'coverage', detail: '/lock: no refusal set a lockout' });

  const hits = Object.fromEntries(webLogs.map((w) => [w.name, w.counters.refusalCacheHits]));
  const cache = checkCacheHits(hits);
  violations.push(...cache);
  // a cache that refused what Redis would grant would leave the flooded windows short of the limit
  const flood = [
    ...fixedWindowCounts(
      webLogs.flatMap((w) => w.grants.flood.map(([key, start, end]) => ({ key, start, end }))),
      SOAK.flood.windowMs,
    ).values(),
  ];
  row(
    'refusal cache hits (RedisLimitEvents, per worker)',
    `${webLogs.map((w) => `${w.name} ${w.counters.refusalCacheHits}`).join(', ')} (/flood refused ${by('flood', 429)} times); ` +
      `/flood windows with ${SOAK.flood.limit} grants certainly inside: ${flood.filter((n) => n === SOAK.flood.limit).length} of ${flood.length}`,
  );

  const local = checkLocalGrants(
    Object.fromEntries(webLogs.map((w) => [w.name, w.localGrants.map(([key, start, end]) => ({ key, start, end }))])),
    SOAK.local.limit,
    SOAK.local.divisor,
    SOAK.local.windowMs,
  );
  violations.push(...local);
  const byRedis = webLogs.flatMap((w) => w.grants.local.map(([key, start, end]) => ({ key, start, end })));
  const redis = checkFixedWindow(byRedis, SOAK.local.limit, SOAK.local.windowMs);
  violations.push(...redis);
  const decisions = webLogs.map((w) => `${w.name} ${w.counters.localDecisions.allowed} granted, ${w.counters.localDecisions.refused} refused`);
  row(
    `/local: fixed window ${SOAK.local.limit}/${SOAK.local.windowMs} ms, failMode 'local', localDivisor ${SOAK.local.divisor}`,
    `${answers.filter((a) => a[0] === 'local').length} requests: ${byRedis.length} granted by Redis (${verdict(redis, 'never above the limit')}), ` +
      `${by('local', 429)} refused, ${by('local', 503)} × 503; local decisions ${decisions.join('; ')}: ` +
      `${verdict(local, `never above ceil(${SOAK.local.limit}/${SOAK.local.divisor}) per worker per window`)}`,
  );
  if (webLogs.every((w) => w.localGrants.length === 0)) violations.push({ invariant: 'coverage', detail: '/local: nothing was granted locally' });
  return violations;
}

/** Every consumer's handled ids (or lapse notifications: kind 'lapsed'), with the consumer's name. */
function readHandled(dir: string, kind = 'handled'): { id: string; consumer: string }[] {
  const out: { id: string; consumer: string }[] = [];
  for (let c = 1; ; c++) {
    let text: string;
    try {
      text = readFileSync(join(dir, `c${c}.${kind}`), 'utf8');
    } catch {
      return out;
    }
    for (const id of text.split('\n')) if (id) out.push({ id, consumer: `c${c}` });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
