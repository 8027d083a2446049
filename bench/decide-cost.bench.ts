// Where a decision's microseconds go inside decide.lua: batches of 128 stacks of one limit, as
// DecisionBatcher sends them, per algorithm, on 10,000 keys (every decision a grant) and on one
// hot key (limit 1,000: after the first thousand grants, batches of refusals). From INFO
// commandstats after CONFIG RESETSTAT: EVALSHA's usec ÷ decisions (the script's own time, its
// commands included), and each command the script ran, calls and usec per decision. With
// BEFORE=<commit>, that commit's decide.lua runs beside this one's on the same server, the two
// alternating within each run. `npm run bench -- decide-cost`; BENCH_RUNS (3), BENCH_BATCHES (1,000).
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { COMPILED_SCRIPTS } from '../lib/redis/scripts.generated.js';
import { RedisNode } from '../test/harness/redis-server.js';
import { layoutOf, oneLimitArgs, type DecideLayout } from './common/decide-args.js';
import { scriptAt } from './common/script-at.js';
import { cell, spread } from './common/stats.js';

const BATCH = 128;
const KEYS = 10_000;
const LIMIT = 1_000;
const WINDOW_MS = 60_000;
const ALGORITHMS = ['fw', 'sw', 'sc', 'tb'] as const;
const SHAPES = { '10,000 keys': (i: number) => `user-${i % KEYS}`, 'one hot key': () => 'hot' } as const;

interface Script {
  name: string;
  sha: string;
  layout: DecideLayout;
}

/** usec per decision of EVALSHA, and of each command the script ran (calls and usec per decision). */
function costs(stats: string, decisions: number): { script: number; commands: Map<string, { calls: number; usec: number }> } {
  const commands = new Map<string, { calls: number; usec: number }>();
  let script = 0;
  for (const [, name, calls, usec] of stats.matchAll(/^cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/gm)) {
    if (name === 'evalsha') script = Number(usec) / decisions;
    else if (!['config|resetstat', 'info', 'flushall', 'script|load'].includes(name!)) {
      commands.set(name!, { calls: Number(calls) / decisions, usec: Number(usec) / decisions });
    }
  }
  return { script, commands };
}

async function main(): Promise<void> {
  const runs = Number(process.env['BENCH_RUNS'] ?? 3);
  const batches = Number(process.env['BENCH_BATCHES'] ?? 1_000);
  const before = process.env['BEFORE'];
  const server = await RedisNode.start();
  const url = new URL(server.url);
  const raw = new Redis({ host: url.hostname, port: Number(url.port) });
  try {
    const sources: [string, string | undefined][] = [['this commit', COMPILED_SCRIPTS['rate-limit/decide.lua'].source]];
    if (before !== undefined) sources.push([before, scriptAt(before, 'rate-limit/decide.lua')]);
    const scripts: Script[] = [];
    for (const [name, source] of sources) {
      if (source === undefined) throw new Error(`decide.lua of ${name} is not in this clone's history`);
      await raw.script('LOAD', source);
      scripts.push({ name, sha: createHash('sha1').update(source).digest('hex'), layout: layoutOf(source) });
    }
    const samples = new Map<string, { script: number[]; commands: Map<string, { calls: number; usec: number }>[] }>();
    for (let run = 0; run < runs; run++) {
      for (const algorithm of ALGORITHMS) {
        for (const [shape, keyOf] of Object.entries(SHAPES)) {
          const ordered = run % 2 === 0 ? scripts : [...scripts].reverse();
          for (const script of ordered) {
            await raw.flushall();
            await raw.config('RESETSTAT');
            const args = oneLimitArgs(script.layout, '1', algorithm, LIMIT, WINDOW_MS, 1, BATCH);
            for (let b = 0; b < batches; b++) {
              const keys = Array.from({ length: BATCH }, (_, i) => `rl:${algorithm}:{${keyOf(b * BATCH + i)}}`);
              await raw.evalsha(script.sha, keys.length, ...keys, '', ...args);
            }
            const measured = costs(await raw.info('commandstats'), batches * BATCH);
            const id = `${algorithm}|${shape}|${script.name}`;
            const entry = samples.get(id) ?? { script: [], commands: [] };
            entry.script.push(measured.script);
            entry.commands.push(measured.commands);
            samples.set(id, entry);
            console.error(`  run ${run + 1}/${runs} ${algorithm} ${shape} ${script.name}: ${measured.script.toFixed(2)} µs`);
          }
        }
      }
    }
    console.log(`### decide.lua's own time per decision (batches of ${BATCH}, ${batches} per row and run, ${runs} runs)\n`);
    console.log('| algorithm | keys | script | µs per decision | commands per decision: calls × (µs) |');
    console.log('|---|---|---|---:|---|');
    for (const [id, { script, commands }] of samples) {
      const [algorithm, shape, name] = id.split('|');
      const names = [...new Set(commands.flatMap((c) => [...c.keys()]))].sort();
      const perCommand = names.map((command) => {
        const calls = spread(commands.map((c) => c.get(command)?.calls ?? 0)).median;
        const usec = spread(commands.map((c) => c.get(command)?.usec ?? 0)).median;
        return `${command} ${calls.toFixed(2)} (${usec.toFixed(2)})`;
      });
      console.log(`| ${algorithm} | ${shape} | ${name} | ${cell(spread(script), 2)} | ${perCommand.join(', ')} |`);
    }
  } finally {
    raw.disconnect();
    await server.stop();
  }
}

void main();
