// The ceiling: redis-benchmark (C, 50 connections) calling EVALSHA of our fixed-window decision
// on 10,000 random keys, one decision per call as a lone request sends it. Nothing in Node can
// send single decisions faster; batching several per call (as the library does under load) can.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { COMPILED_SCRIPTS } from '../lib/redis/scripts.generated.js';
import { spread, type Spread } from './common/stats.js';

const run = promisify(execFile);

export interface CeilingRow {
  pipeline: number;
  perSecond: Spread;
}

export async function ceiling(opts: { host: string; port: number; requests: number; runs: number; log: (l: string) => void }): Promise<CeilingRow[]> {
  const admin = new Redis({ host: opts.host, port: opts.port });
  const source = COMPILED_SCRIPTS['rate-limit/decide.lua'].source;
  const sha = createHash('sha1').update(source).digest('hex');
  await admin.script('LOAD', source);
  const rows: CeilingRow[] = [];
  const perSecond = new Map<number, number[]>([
    [1, []],
    [16, []],
  ]);
  try {
    for (let r = 0; r < opts.runs; r++) {
      for (const pipeline of perSecond.keys()) {
        await admin.flushall();
        const args = ['-h', opts.host, '-p', String(opts.port), '-c', '50', '-P', String(pipeline), '-n', String(opts.requests), '-r', '10000', '--csv'];
        const command = ['EVALSHA', sha, '1', 'rl:fw:{user-__rand_int__}', '', '1', 'fw', '1000', '60000', '1', '1', '1', '1', '1'];
        const { stdout } = await run('redis-benchmark', [...args, ...command]);
        // --csv: a header line, then "test","rps",...
        const rps = Number(stdout.trim().split('\n').at(-1)!.split(',')[1]!.replaceAll('"', ''));
        perSecond.get(pipeline)!.push(rps);
        opts.log(`  ceiling run ${r + 1}/${opts.runs} -P ${pipeline}: ${rps.toFixed(0)}/s`);
      }
    }
  } finally {
    admin.disconnect();
  }
  for (const [pipeline, runs] of perSecond) rows.push({ pipeline, perSecond: spread(runs) });
  return rows;
}
