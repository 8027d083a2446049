// What refund and penalize cost Redis beside a consume (issue 15: one round trip each, Redis CPU
// per call within 1.5x of a consume), and what blocks and grant ids cost every decision: the
// decide.lua of the commit before them beside this one's. Every call is one EVALSHA on its own
// (no batching), 1,000 keys a round, 64 in flight, 1,000 permits per hour. Each key is half used
// first (not measured: a bucket gives back only what a bucket without the grant would hold, which
// a near-full one does not have room for); then a round consumes one permit on each key, gives
// each grant back (the newest on its key, as a reservation settled right after), and penalizes
// each key one permit. Redis CPU per call is
// the script's time (INFO commandstats, usec of EVALSHA after CONFIG RESETSTAT) and the whole
// server's (INFO cpu, user + sys, network included). `npm run bench -- outcomes` prints the table.
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { RedisNode } from '../test/harness/redis-server.js';
import { COMPILED_SCRIPTS } from '../lib/redis/scripts.generated.js';
import type { RateLimitDecideSpec } from '../lib/redis/script-bindings.generated.js';
import { oneLimitArgs, oneLimitReply, type DecideLayout } from './common/decide-args.js';
import { redisCpuSeconds } from './common/redis-cpu.js';
import { scriptAt } from './common/script-at.js';
import { cell, spread, type Spread } from './common/stats.js';

const LIMIT = 1_000;
const WINDOW_MS = 3_600_000;
const KEYS_PER_ROUND = 1_000;
const IN_FLIGHT = 64;
/** The last commit before grant ids, refunds and blocks (issue 15). */
const BEFORE_COMMIT = '2b0dedb';
const ALGORITHMS = { 'fixed-window': 'fw', 'sliding-window': 'sw', 'token-bucket': 'tb' } as const;

export type OutcomeCall = 'consume' | 'refund' | 'penalize' | 'consume, before blocks and grant ids';

export interface OutcomeRow {
  algorithm: keyof typeof ALGORITHMS;
  call: OutcomeCall;
  /** µs per call: the script (commandstats) and the whole server (INFO cpu). */
  scriptUs: Spread;
  serverUs: Spread;
}

export async function outcomeCost(opts: { host: string; port: number; runs: number; log: (line: string) => void }): Promise<OutcomeRow[]> {
  const raw = new Redis({ host: opts.host, port: opts.port });
  const load = async (source: string) => {
    await raw.script('LOAD', source);
    return createHash('sha1').update(source).digest('hex');
  };
  const script = (name: 'decide' | 'refund' | 'penalize') => load(COMPILED_SCRIPTS[`rate-limit/${name}.lua`].source);
  const [decide, refund, penalize] = await Promise.all([script('decide'), script('refund'), script('penalize')]);
  const beforeSource = scriptAt(BEFORE_COMMIT, 'rate-limit/decide.lua');
  const before = beforeSource === undefined ? undefined : await load(beforeSource);
  if (before === undefined) opts.log(`  decide.lua of ${BEFORE_COMMIT} is not in this clone's history: this commit only`);

  /** `calls` run IN_FLIGHT at a time; Redis CPU per call, script and server. */
  const measure = async <T>(calls: (() => Promise<T>)[]): Promise<{ results: T[]; scriptUs: number; serverUs: number }> => {
    await raw.config('RESETSTAT');
    const cpu = await redisCpuSeconds(raw);
    const results: T[] = new Array(calls.length);
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < calls.length) {
          const i = next++;
          results[i] = await calls[i]!();
        }
      }),
    );
    const server = (await redisCpuSeconds(raw)) - cpu;
    const stats = await raw.info('commandstats');
    const [, count, usec] = /^cmdstat_evalsha:calls=(\d+),usec=(\d+)/m.exec(stats)!;
    return { results, scriptUs: Number(usec) / Number(count), serverUs: (server * 1e6) / calls.length };
  };

  const samples = new Map<string, { algorithm: OutcomeRow['algorithm']; call: OutcomeCall; script: number[]; server: number[] }>();
  const record = (algorithm: OutcomeRow['algorithm'], call: OutcomeCall, m: { scriptUs: number; serverUs: number }) => {
    const id = `${algorithm}|${call}`;
    if (!samples.has(id)) samples.set(id, { algorithm, call, script: [], server: [] });
    samples.get(id)!.script.push(m.scriptUs);
    samples.get(id)!.server.push(m.serverUs);
  };

  let round = 0;
  for (let run = 0; run < opts.runs; run++) {
    for (const [algorithm, code] of Object.entries(ALGORITHMS) as [OutcomeRow['algorithm'], RateLimitDecideSpec['algorithm']][]) {
      round += 1;
      const keys = Array.from({ length: KEYS_PER_ROUND }, (_, i) => `bench:outcomes:${code}:{${round}:${i}}`);
      const limitArgs = [code, LIMIT, WINDOW_MS];
      // each script on state of its own shape
      const consume = (script: string, layout: DecideLayout, key: string, permits: number) =>
        raw
          .callBuffer('EVALSHA', [script, 1, key, '', ...oneLimitArgs(layout, '1', code, LIMIT, WINDOW_MS, permits)])
          .then((reply) => oneLimitReply(reply, code, permits));
      await Promise.all(
        keys.flatMap((key) => [
          consume(decide, 'runs', key, LIMIT / 2),
          ...(before === undefined ? [] : [consume(before, 'rows', `${key}:before`, LIMIT / 2)]),
        ]),
      );
      // the commit before first, then this one: neither always runs on a warmer server
      if (before !== undefined) {
        const old = keys.map((key) => `${key}:before`);
        record(algorithm, 'consume, before blocks and grant ids', await measure(old.map((key) => () => consume(before, 'rows', key, 1))));
      }
      const consumed = await measure(keys.map((key) => () => consume(decide, 'runs', key, 1)));
      record(algorithm, 'consume', consumed);
      const grants = consumed.results.map((reply) => reply.grant);
      const refunded = await measure(keys.map((key, i) => () => raw.evalsha(refund, 1, key, '', ...limitArgs, 1, grants[i]!) as Promise<number[]>));
      if (refunded.results.some(([back]) => back !== 1)) throw new Error(`${algorithm}: a refund gave back nothing`);
      record(algorithm, 'refund', refunded);
      record(algorithm, 'penalize', await measure(keys.map((key) => () => raw.evalsha(penalize, 1, key, '', ...limitArgs, 1))));
      await raw.del(...keys, ...keys.map((key) => `${key}:before`));
    }
    opts.log(`  run ${run + 1}/${opts.runs}: done`);
  }
  raw.disconnect();
  return [...samples.values()].map(({ algorithm, call, script, server }) => ({ algorithm, call, scriptUs: spread(script), serverUs: spread(server) }));
}

/** The rows as a markdown table, each call's figures beside its algorithm's consume. */
export function outcomeTable(rows: OutcomeRow[]): string {
  const lines = ['| algorithm | call | script µs/call | × consume | server µs/call | × consume |', '|---|---|---:|---:|---:|---:|'];
  for (const row of rows) {
    const consume = rows.find((r) => r.algorithm === row.algorithm && r.call === 'consume')!;
    const times = (a: Spread, b: Spread) => `${(a.median / b.median).toFixed(2)}×`;
    lines.push(
      `| ${row.algorithm} | ${row.call} | ${cell(row.scriptUs, 1)} | ${times(row.scriptUs, consume.scriptUs)} | ${cell(row.serverUs, 1)} | ${times(row.serverUs, consume.serverUs)} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

async function main(): Promise<void> {
  const redis = await RedisNode.start({ flavor: 'redis7', own: true });
  try {
    const runs = Number(process.env['BENCH_RUNS'] ?? 5);
    const rows = await outcomeCost({ host: redis.host, port: redis.port, runs, log: (line) => console.error(line) });
    process.stdout.write(outcomeTable(rows));
  } finally {
    await redis.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
