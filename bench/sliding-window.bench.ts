// What one sliding-window decision costs Redis, by permits: the script's CPU time (INFO
// commandstats, usec of the one EVALSHA after CONFIG RESETSTAT) and the key's size after it
// (MEMORY USAGE ... SAMPLES 0), for this commit's decide.lua beside 0.1's, which stored one
// sorted-set member per permit (issue 13, item 2). Each figure is a fresh key, limit 3,000,000
// per 60 s.
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { COMPILED_SCRIPTS } from '../lib/redis/scripts.generated.js';
import { layoutOf, oneLimitArgs, type DecideLayout } from './common/decide-args.js';
import { scriptAt } from './common/script-at.js';
import { spread, type Spread } from './common/stats.js';

export const SW_LIMIT = 3_000_000;
const WINDOW_MS = 60_000;
/** Permits per decision. 0.1 is not run at 3,000,000: it held Redis for about 20 s and left a
 * 369 MB key (issue 13), which would only slow the bench down. */
export const SW_PERMITS = [1, 1_000, 1_000_000, 3_000_000];
const OLD_MAX_PERMITS = 1_000_000;
/** Single-permit grants before a refusal whose retry time depends on all of them (our worst
 * case: the grants a refusal waits for are found by binary search over their running totals). */
export const SW_SMALL_GRANTS = 10_000;
/** The same on more grants, to show the search grows with log(grants). */
const SW_MORE_GRANTS = [SW_SMALL_GRANTS, 100_000];
/** The last commit with 0.1's sliding window (one member per permit). */
const OLD_COMMIT = 'fc8dbe4';

export interface SlidingRow {
  contender: 'this commit' | '0.1';
  /** e.g. 'grant of 1,000 permits'. */
  scenario: string;
  redisUs: Spread;
  /** MEMORY USAGE of the key after the decision, bytes. */
  bytes: Spread;
}

export async function slidingWindowCost(opts: { host: string; port: number; runs: number; log: (line: string) => void }): Promise<SlidingRow[]> {
  const raw = new Redis({ host: opts.host, port: opts.port });
  const contenders: { name: SlidingRow['contender']; sha: string; layout: DecideLayout }[] = [];
  for (const [name, source] of [
    ['this commit', COMPILED_SCRIPTS['rate-limit/decide.lua'].source],
    ['0.1', scriptAt(OLD_COMMIT, 'rate-limit/decide.lua')],
  ] as const) {
    if (source === undefined) {
      opts.log(`  0.1's script is not in this clone's history (${OLD_COMMIT}): this commit only`);
      continue;
    }
    await raw.script('LOAD', source);
    contenders.push({ name, sha: createHash('sha1').update(source).digest('hex'), layout: layoutOf(source) });
  }
  let keyNo = 0;
  const layouts = new Map(contenders.map(({ sha, layout }) => [sha, layout]));
  const decide = (sha: string, key: string, permits: number) =>
    raw.evalsha(sha, 1, key, '', ...oneLimitArgs(layouts.get(sha)!, '1', 'sw', SW_LIMIT, WINDOW_MS, permits));
  /** Redis CPU of one decision, in µs. */
  const timed = async (sha: string, key: string, permits: number) => {
    await raw.config('RESETSTAT');
    await decide(sha, key, permits);
    const stats = await raw.info('commandstats');
    return Number(/^cmdstat_evalsha:calls=1,usec=(\d+)/m.exec(stats)![1]);
  };
  const bytes = async (key: string) => Number(await raw.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));

  const samples = new Map<string, { row: Omit<SlidingRow, 'redisUs' | 'bytes'>; us: number[]; bytes: number[] }>();
  const record = (contender: SlidingRow['contender'], scenario: string, us: number, size: number) => {
    const id = `${contender}|${scenario}`;
    if (!samples.has(id)) samples.set(id, { row: { contender, scenario }, us: [], bytes: [] });
    samples.get(id)!.us.push(us);
    samples.get(id)!.bytes.push(size);
  };

  for (let run = 0; run < opts.runs; run++) {
    for (const { name, sha } of contenders) {
      for (const permits of SW_PERMITS) {
        if (name === '0.1' && permits > OLD_MAX_PERMITS) continue;
        const key = `bench:sw:{${++keyNo}}`;
        const what = `${permits.toLocaleString('en-US')} permit${permits === 1 ? '' : 's'}`;
        record(name, `grant of ${what}`, await timed(sha, key, permits), await bytes(key));
        // the next decision on that key, refused: it walks the one grant for its retry time
        record(name, `then a refusal of ${SW_LIMIT.toLocaleString('en-US')} (after ${what})`, await timed(sha, key, SW_LIMIT), await bytes(key));
        await raw.del(key);
        opts.log(`  ${name}, ${permits} permits: done`);
      }
      for (const grants of SW_MORE_GRANTS) {
        const key = `bench:sw:{${++keyNo}}`;
        for (let i = 0; i < grants; i += 500) await Promise.all(Array.from({ length: 500 }, () => decide(sha, key, 1)));
        const scenario = `${grants.toLocaleString('en-US')} grants of 1, then a refusal of ${SW_LIMIT.toLocaleString('en-US')}`;
        record(name, scenario, await timed(sha, key, SW_LIMIT), await bytes(key));
        await raw.del(key);
      }
    }
  }
  raw.disconnect();
  return [...samples.values()].map(({ row, us, bytes }) => ({ ...row, redisUs: spread(us), bytes: spread(bytes) }));
}
