// A flood from one key already over its limit (issue 15): what each refusal costs Redis and how
// fast refusals are served beside the same route with no guard. autocannon loads, in turn, the
// unguarded quote route, @RateLimit with the refusal cache (the default), @RateLimit with
// `refusalCache: false`, and rate-limiter-flexible's RateLimiterRedis with `inMemoryBlockOnConsumed`
// (bench/flood-app.ts); rows alternate within each run. Redis commands: the delta of INFO
// commandstats around each load, all commands but the bench's own INFO (those scripts run
// included), and the script calls among them.
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { appCpuMicros, startApp, stopApp, type AppProcess } from './common/app-process.js';
import { redisCpuSeconds } from './common/redis-cpu.js';
import { spread, type Spread } from './common/stats.js';
import type { HttpOptions } from './http.bench.js';

type FloodApp = 'cache' | 'no-cache';
export const FLOOD_ROUTES = {
  'no guard': { app: 'cache', path: '/plain/ACME' },
  '@RateLimit, refusal cache (nest-redis-limit)': { app: 'cache', path: '/rate-limit/ACME' },
  '@RateLimit, refusalCache: false (nest-redis-limit)': { app: 'no-cache', path: '/rate-limit/ACME' },
  'rate-limiter-flexible, inMemoryBlockOnConsumed': { app: 'cache', path: '/flexible/ACME' },
} as const satisfies Record<string, { app: FloodApp; path: string }>;
export type FloodRoute = keyof typeof FLOOD_ROUTES;
/** One request a window: the first request of the warm-up is granted, every later one refused.
 * A day's window (fixed windows start on multiples of it) outlasts the section unless it runs
 * across midnight UTC: then one more grant shows in the `other` column. */
export const FLOOD_LIMIT = 1;
export const FLOOD_WINDOW_MS = 86_400_000;

export interface FloodRow {
  route: FloodRoute;
  perSecond: Spread;
  p50Ms: Spread;
  p99Ms: Spread;
  /** Responses of the measured loads: 429s, and any other status (a grant or a failure). */
  refused: number;
  other: number;
  errors: number;
  /** Per response: Redis commands (all but INFO, those scripts run included), and script calls
   * (EVALSHA, EVAL: the library's round trips). */
  commands: Spread;
  scripts: Spread;
  appUs: Spread;
  redisUs: Spread;
}

interface Sample {
  result: autocannon.Result;
  commands: number;
  scripts: number;
  appUs: number;
  redisUs: number;
}

/** Calls so far of each command, from INFO commandstats. */
async function commandCalls(admin: Redis): Promise<Map<string, number>> {
  const stats = await admin.info('commandstats');
  return new Map([...stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map(([, name, calls]) => [name!, Number(calls)]));
}

export async function floodCost(opts: HttpOptions): Promise<FloodRow[]> {
  const script = fileURLToPath(new URL('./flood-app.js', import.meta.url));
  const args = (mode: FloodApp) => [opts.redisHost, String(opts.redisPort), String(FLOOD_LIMIT), String(FLOOD_WINDOW_MS), mode];
  const servers = new Map<FloodApp, AppProcess>(
    await Promise.all((['cache', 'no-cache'] as const).map(async (mode) => [mode, await startApp(script, args(mode))] as const)),
  );
  const admin = new Redis({ host: opts.redisHost, port: opts.redisPort });
  const samples = new Map<FloodRoute, Sample[]>();
  const load = async (route: FloodRoute, seconds: number): Promise<Sample> => {
    const server = servers.get(FLOOD_ROUTES[route].app)!;
    const [app0, redis0, calls0] = [await appCpuMicros(server), await redisCpuSeconds(admin), await commandCalls(admin)];
    const result = await autocannon({ url: `http://127.0.0.1:${server.port}${FLOOD_ROUTES[route].path}`, connections: opts.connections, duration: seconds });
    const calls1 = await commandCalls(admin);
    const [app1, redis1] = [await appCpuMicros(server), await redisCpuSeconds(admin)];
    const delta = (name: string) => (calls1.get(name) ?? 0) - (calls0.get(name) ?? 0);
    const commands = [...calls1.keys()].filter((name) => name !== 'info').reduce((n, name) => n + delta(name), 0);
    const responses = Math.max(1, result.requests.total);
    return {
      result,
      commands: commands / responses,
      scripts: (delta('evalsha') + delta('eval')) / responses,
      appUs: (app1 - app0) / responses,
      redisUs: ((redis1 - redis0) * 1e6) / responses,
    };
  };
  try {
    // warm-up: JIT, connections, scripts; and it takes each key over its limit before any measured load
    // (2 s, as the HTTP rows warm up: at 1 s the refusal path was not yet at speed in some runs)
    for (const route of Object.keys(FLOOD_ROUTES) as FloodRoute[]) await load(route, 2);
    const routes = Object.keys(FLOOD_ROUTES) as FloodRoute[];
    for (let run = 0; run < opts.runs; run++) {
      for (const route of run % 2 === 0 ? routes : [...routes].reverse()) {
        const sample = await load(route, opts.seconds);
        samples.set(route, [...(samples.get(route) ?? []), sample]);
        opts.log(
          `  flood run ${run + 1}/${opts.runs} ${route}: ${sample.result.requests.average.toFixed(0)} req/s (${sample.result['4xx']} refused), ` +
            `${sample.commands.toFixed(4)} Redis commands/req, app ${sample.appUs.toFixed(0)} µs/req, redis ${sample.redisUs.toFixed(2)} µs/req`,
        );
      }
    }
  } finally {
    admin.disconnect();
    await Promise.all([...servers.values()].map((server) => stopApp(server)));
  }
  return [...samples].map(([route, runs]) => {
    const of = (f: (s: Sample) => number) => spread(runs.map(f));
    const refused = runs.reduce((n, s) => n + (s.result.statusCodeStats?.['429']?.count ?? 0), 0);
    return {
      route,
      perSecond: of((s) => s.result.requests.average),
      p50Ms: of((s) => s.result.latency.p50),
      p99Ms: of((s) => s.result.latency.p99),
      refused,
      other: runs.reduce((n, s) => n + s.result.requests.total, 0) - refused,
      errors: runs.reduce((n, s) => n + s.result.errors + s.result.timeouts, 0),
      commands: of((s) => s.commands),
      scripts: of((s) => s.scripts),
      appUs: of((s) => s.appUs),
      redisUs: of((s) => s.redisUs),
    };
  });
}
