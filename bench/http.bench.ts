// HTTP overhead: the same quote route with no guard, with @RateLimit, under the module's
// defaultLimits and with @nestjs/throttler + @nest-lab/throttler-storage-redis, and the same quote
// as a GraphQL query with no guard, with @RateLimit and with the throttler's GraphQL guard, loaded
// by autocannon in turn (rows alternate within each run). Three server processes: the HTTP routes,
// defaultLimits (they apply to every route of an app) and the GraphQL queries.
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { appCpuMicros, startApp as forkApp, stopApp, type AppProcess } from './common/app-process.js';
import { graphqlBody, type GraphQLQuery } from './graphql-app.module.js';
import { redisCpuSeconds } from './common/redis-cpu.js';
import { spread, type Spread } from './common/stats.js';

/** The app process a row loads (bench/http-app.ts): 'otel-off' and 'otel-sdk' are the routes
 * app with `telemetry: false`, and with an OpenTelemetry SDK whose exporter drops every span. */
export type AppMode = 'routes' | 'defaults' | 'graphql' | 'otel-off' | 'otel-sdk';
/** A row's request: a GET of `path`, or a POST of one GraphQL query to /graphql. */
export type Target = { app: AppMode; path: string; query?: undefined } | { app: 'graphql'; path: '/graphql'; query: GraphQLQuery };
const gql = (query: GraphQLQuery): Target => ({ app: 'graphql', path: '/graphql', query });

export const ROUTES = {
  'no guard': { app: 'routes', path: '/plain/ACME' },
  '@RateLimit (nest-redis-limit)': { app: 'routes', path: '/rate-limit/ACME' },
  '@MaxConcurrent (nest-redis-limit)': { app: 'routes', path: '/max-concurrent/ACME' },
  'defaultLimits app, @SkipRateLimit route': { app: 'defaults', path: '/defaults-skip/ACME' },
  'defaultLimits (nest-redis-limit)': { app: 'defaults', path: '/defaults/ACME' },
  '@nestjs/throttler + throttler-storage-redis': { app: 'routes', path: '/throttler/ACME' },
  'GraphQL, no guard': gql('plainQuote'),
  'GraphQL, @RateLimit (nest-redis-limit)': gql('rateLimitedQuote'),
  'GraphQL, @nestjs/throttler + throttler-storage-redis': gql('throttledQuote'),
} as const satisfies Record<string, Target>;
export type Route = keyof typeof ROUTES;
/** Far above what a run can reach: the routes measure deciding, not refusing. */
export const HTTP_LIMIT = 1_000_000;
export const HTTP_WINDOW_MS = 60_000;

export interface HttpOptions {
  redisHost: string;
  redisPort: number;
  connections: number;
  seconds: number;
  runs: number;
  log: (line: string) => void;
}

export interface HttpRow<R extends string = Route> {
  route: R;
  perSecond: Spread;
  p50Ms: Spread;
  p99Ms: Spread;
  /** Responses other than 200, and GraphQL answers without the quote: must be 0, or the row
   * measured refusing (or failing) rather than deciding. */
  non2xx: number;
  errors: number;
  /** CPU per request, µs: the app's process, and redis-server (INFO cpu, user + sys). */
  appUs: Spread;
  redisUs: Spread;
}

interface Sample {
  result: autocannon.Result;
  appUs: number;
  redisUs: number;
}

/** Each row of `rows` (ROUTES by default) loaded in turn, `opts.runs` times, rows alternating. */
export async function httpOverhead<R extends string = Route>(
  opts: HttpOptions,
  rows: Record<R, Target> = ROUTES as Record<Route, Target> as Record<R, Target>,
): Promise<HttpRow<R>[]> {
  const modes = [...new Set(Object.values<Target>(rows).map((t) => t.app))];
  const servers = new Map(await Promise.all(modes.map(async (mode) => [mode, await startApp(opts, mode)] as const)));
  const admin = new Redis({ host: opts.redisHost, port: opts.redisPort });
  const samples = new Map<R, Sample[]>();
  const load = async (target: Target, seconds: number): Promise<Sample> => {
    const server = servers.get(target.app)!;
    const [app0, redis0] = [await appCpuMicros(server), await redisCpuSeconds(admin)];
    // GraphQL answers a refusal or a failure with 200 and `errors`: such answers count as mismatches
    const request = target.query
      ? { method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: graphqlBody(target.query, 'ACME'), verifyBody: answered }
      : {};
    const result = await autocannon({ url: `http://127.0.0.1:${server.port}${target.path}`, connections: opts.connections, duration: seconds, ...request });
    const [app1, redis1] = [await appCpuMicros(server), await redisCpuSeconds(admin)];
    const requests = Math.max(1, result.requests.total);
    return { result, appUs: (app1 - app0) / requests, redisUs: ((redis1 - redis0) * 1e6) / requests };
  };
  try {
    // warm-up: JIT, connections, scripts; 2 s each, as the defaults app warms on its one route alone
    for (const target of Object.values<Target>(rows)) await load(target, 2);
    const routes = Object.keys(rows) as R[];
    for (let run = 0; run < opts.runs; run++) {
      for (const route of run % 2 === 0 ? routes : [...routes].reverse()) {
        const sample = await load(rows[route], opts.seconds);
        samples.set(route, [...(samples.get(route) ?? []), sample]);
        const failed = sample.result.non2xx + sample.result.mismatches;
        opts.log(
          `  http run ${run + 1}/${opts.runs} ${route}: ${sample.result.requests.average.toFixed(0)} req/s, p99 ${sample.result.latency.p99} ms, ` +
            `app ${sample.appUs.toFixed(0)} µs/req, redis ${sample.redisUs.toFixed(1)} µs/req${failed ? `, ${failed} refused or failed` : ''}`,
        );
      }
    }
  } finally {
    admin.disconnect();
    await Promise.all([...servers.values()].map((server) => stopApp(server)));
  }
  return [...samples].map(([route, runs]) => ({
    route,
    perSecond: spread(runs.map((s) => s.result.requests.average)),
    p50Ms: spread(runs.map((s) => s.result.latency.p50)),
    p99Ms: spread(runs.map((s) => s.result.latency.p99)),
    non2xx: runs.reduce((n, s) => n + s.result.non2xx + s.result.mismatches, 0),
    errors: runs.reduce((n, s) => n + s.result.errors + s.result.timeouts, 0),
    appUs: spread(runs.map((s) => s.appUs)),
    redisUs: spread(runs.map((s) => s.redisUs)),
  }));
}

/** A GraphQL answer with the quote and no errors. */
const answered = (body: string | Buffer | undefined) => {
  const text = String(body);
  return text.startsWith('{"data":{"quote":{') && !text.includes('"errors"');
};

/** bench/http-app.ts in a process of its own, serving the app of `mode`. */
function startApp(opts: HttpOptions, mode: AppMode): Promise<AppProcess> {
  const args = [opts.redisHost, String(opts.redisPort), String(HTTP_LIMIT), String(HTTP_WINDOW_MS), mode];
  return forkApp(fileURLToPath(new URL('./http-app.js', import.meta.url)), args);
}
