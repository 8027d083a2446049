// What OpenTelemetry costs a route: the sample app's quote route with no guard and under
// @RateLimit, in three app processes side by side: `telemetry: false` (the path of an app without
// @opentelemetry/api: the library's one check per decision), the API installed with no SDK (the
// default: spans are the API's no-ops), and an SDK that records every span and exports none (a
// BatchSpanProcessor over an exporter that drops them). autocannon -c 50, rows alternating within
// each run. `npm run bench -- telemetry`; BENCH_RUNS (5) and BENCH_HTTP_SECONDS (8).
import { RedisNode } from '../test/harness/redis-server.js';
import { httpOverhead, type Target } from './http.bench.js';
import { cell, formatRatio, ratio } from './common/stats.js';

const ROWS = {
  'no guard, telemetry: false': { app: 'otel-off', path: '/plain/ACME' },
  '@RateLimit, telemetry: false': { app: 'otel-off', path: '/rate-limit/ACME' },
  'no guard, API without SDK': { app: 'routes', path: '/plain/ACME' },
  '@RateLimit, API without SDK': { app: 'routes', path: '/rate-limit/ACME' },
  'no guard, SDK exporting nothing': { app: 'otel-sdk', path: '/plain/ACME' },
  '@RateLimit, SDK exporting nothing': { app: 'otel-sdk', path: '/rate-limit/ACME' },
} as const satisfies Record<string, Target>;
type Row = keyof typeof ROWS;

async function main(): Promise<void> {
  const server = await RedisNode.start();
  const url = new URL(server.url);
  const runs = Number(process.env['BENCH_RUNS'] ?? 5);
  const seconds = Number(process.env['BENCH_HTTP_SECONDS'] ?? 8);
  try {
    const rows = await httpOverhead<Row>(
      { redisHost: url.hostname, redisPort: Number(url.port), connections: 50, seconds, runs, log: (line) => console.error(line) },
      ROWS,
    );
    const of = (row: Row) => rows.find((r) => r.route === row)!;
    const off = of('@RateLimit, telemetry: false').perSecond;
    console.log(`### OpenTelemetry's cost on a @RateLimit route\n`);
    console.log(`autocannon -c 50 -d ${seconds}, ${runs} runs, medians (min–max); ratios paired run by run.\n`);
    console.log('| row | req/s | ÷ no guard of the same app | @RateLimit ÷ with telemetry: false | non-2xx |');
    console.log('|---|---:|---:|---:|---:|');
    for (const [plain, limited] of [
      ['no guard, telemetry: false', '@RateLimit, telemetry: false'],
      ['no guard, API without SDK', '@RateLimit, API without SDK'],
      ['no guard, SDK exporting nothing', '@RateLimit, SDK exporting nothing'],
    ] as const) {
      console.log(`| ${plain} | ${cell(of(plain).perSecond)} | — | — | ${of(plain).non2xx} |`);
      console.log(
        `| ${limited} | ${cell(of(limited).perSecond)} | ${formatRatio(ratio(of(limited).perSecond, of(plain).perSecond))} | ${formatRatio(ratio(of(limited).perSecond, off))} | ${of(limited).non2xx} |`,
      );
    }
  } finally {
    await server.stop();
  }
}

void main();
