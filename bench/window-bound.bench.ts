// How far each window algorithm lets a key past its limit: the most permits granted in any span
// of windowMs, on Redis, at explicit times (decide.lua's test hook), so the figures are exact and
// the same on any machine (BENCH_RUNS does not apply). Two kinds of traffic, each on a fresh key per algorithm:
// - the adversary: single permits asked for until refused, at the last ms of a window, at the
//   first ms of the next and at its last ms but one (the worst for a fixed window, then for a
//   weighted count, which lets through in the end what the last window's weight no longer holds);
// - random: arrivals at 1.5 × the limit's rate over 50 windows (exponential gaps, seeded), one
//   permit each.
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { COMPILED_SCRIPTS } from '../lib/redis/scripts.generated.js';
import { oneLimitArgs, oneLimitReply } from './common/decide-args.js';

export const BOUND_LIMIT = 100;
export const BOUND_WINDOW_MS = 60_000;
const T0 = Math.floor(2e12 / BOUND_WINDOW_MS) * BOUND_WINDOW_MS; // a window's start
const CODES = { 'fixed-window': 'fw', 'sliding-window': 'sw', 'sliding-window-counter': 'sc' } as const;

export interface BoundRow {
  algorithm: keyof typeof CODES;
  traffic: 'adversary' | 'random';
  /** The most granted in any span of windowMs. */
  most: number;
  /** Permits granted over the run. */
  granted: number;
  asked: number;
}

/** The most grants whose times fall within one span of `windowMs`. */
function mostInSpan(times: readonly number[], windowMs: number): number {
  let most = 0;
  for (let first = 0, last = 0; last < times.length; last++) {
    while (times[last]! - times[first]! >= windowMs) first++;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

/** A seeded uniform in (0, 1): the random traffic is the same in every run. */
function uniform(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return (s + 1) / 4_294_967_297;
  };
}

export async function windowBound(opts: { host: string; port: number; log: (line: string) => void }): Promise<BoundRow[]> {
  const raw = new Redis({ host: opts.host, port: opts.port });
  const source = COMPILED_SCRIPTS['rate-limit/decide.lua'].source;
  const sha = createHash('sha1').update(source).digest('hex');
  await raw.script('LOAD', source);
  const rows: BoundRow[] = [];
  let keyNo = 0;
  try {
    for (const [algorithm, code] of Object.entries(CODES) as [keyof typeof CODES, string][]) {
      // keys expire on the server's real clock while the decisions run at explicit times: PERSIST,
      // pipelined right behind each call, takes the real clock out (a script treats a key of an
      // earlier window as it would a missing one)
      const grant = async (key: string, now: number) => {
        const replies = await raw
          .pipeline()
          .callBuffer('EVALSHA', [sha, 1, key, String(now), ...oneLimitArgs('runs', '1', code, BOUND_LIMIT, BOUND_WINDOW_MS, 1)])
          .persist(key)
          .exec();
        const [error, reply] = replies![0]!;
        if (error) throw error;
        return oneLimitReply(reply).granted;
      };

      // the adversary
      let key = `bench:bound:{${++keyNo}}`;
      const adversary: number[] = [];
      let asked = 0;
      const times = [T0 + BOUND_WINDOW_MS - 1, T0 + BOUND_WINDOW_MS, T0 + 2 * BOUND_WINDOW_MS - 2];
      for (const now of times) {
        for (asked++; await grant(key, now); asked++) adversary.push(now);
      }
      rows.push({ algorithm, traffic: 'adversary', most: mostInSpan(adversary, BOUND_WINDOW_MS), granted: adversary.length, asked });

      // random arrivals
      key = `bench:bound:{${++keyNo}}`;
      const next = uniform(42);
      const rate = (1.5 * BOUND_LIMIT) / BOUND_WINDOW_MS;
      const granted: number[] = [];
      asked = 0;
      for (let now = T0; now < T0 + 50 * BOUND_WINDOW_MS; now += Math.max(1, Math.round(-Math.log(next()) / rate))) {
        asked++;
        if (await grant(key, now)) granted.push(now);
      }
      rows.push({ algorithm, traffic: 'random', most: mostInSpan(granted, BOUND_WINDOW_MS), granted: granted.length, asked });
      opts.log(`  ${algorithm}: done`);
    }
  } finally {
    await raw.del(...Array.from({ length: keyNo }, (_, i) => `bench:bound:{${i + 1}}`));
    raw.disconnect();
  }
  return rows;
}
