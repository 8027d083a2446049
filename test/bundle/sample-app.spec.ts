import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { freePort, RedisNode } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// The sample app bundled by esbuild into one file, run by node from an empty directory: no
// node_modules beside it or above it, no lua/, no dashboard-page/. It starts, limits and serves the
// dashboard only if the library reads no file of its own (scripts and page are compiled into lib/).

/**
 * Optional packages that Nest's lazy loaders name but this app never loads, none of them installed
 * here: GraphQL federation and gateways, the Fastify GraphQL integration, ValidationPipe's
 * class-validator/class-transformer, the GraphQL CLI plugin's ts-morph, and the microservice
 * transports other than TCP. esbuild cannot resolve them, so they stay imports the app never runs.
 * Everything the app does load (Express, Apollo, @nestjs/graphql, websockets, microservices, ws,
 * ioredis) is in the bundle.
 */
const NEVER_LOADED = [
  '@apollo/gateway',
  '@apollo/subgraph',
  '@as-integrations/fastify',
  '@mercuriusjs/gateway',
  'class-transformer',
  'class-validator',
  'ts-morph',
  '@grpc/grpc-js',
  '@nats-io/transport-node',
  'amqp-connection-manager',
  'amqplib',
  'kafkajs',
  'mqtt',
];

/**
 * Nest loads some packages with `createRequire(import.meta.url)('pkg')` (the ws adapter loads `ws`
 * so), which esbuild does not follow (evanw/esbuild#1828): the bundle would look for node_modules at
 * run time. Written as a plain `require('pkg')`, esbuild bundles the package.
 */
const followCreateRequire: Plugin = {
  name: 'follow-create-require',
  setup(esbuild) {
    esbuild.onLoad({ filter: /[\\/]node_modules[\\/]@nestjs[\\/].*\.js$/ }, async ({ path }) => {
      const source = await readFile(path, 'utf8');
      if (!source.includes('createRequire(import.meta.url)(')) return undefined;
      return { contents: source.replace(/createRequire\(import\.meta\.url\)\((['"][^'"]+['"])\)/g, 'require($1)'), loader: 'js', resolveDir: dirname(path) };
    });
  },
};

/** Compiles the sample app with tsc (esbuild emits no decorator metadata, which Nest's injection and
 * GraphQL's code-first schema read) inside the repository, where node_modules is found. */
function compileSample(outDir: string): string {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'sample-app/tsconfig.json', '--outDir', outDir, '--sourceMap', 'false']);
  return join(outDir, 'sample-app', 'src', 'main.js');
}

/** One ES module (main.ts awaits at top level); `require` for the CommonJS packages' built-ins. */
async function bundle(entry: string, outfile: string): Promise<void> {
  const result = await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    keepNames: true, // Nest names providers and logs by class name
    external: NEVER_LOADED,
    plugins: [followCreateRequire],
    banner: { js: "import { createRequire as __nrlCreateRequire } from 'node:module'; const require = __nrlCreateRequire(import.meta.url);" },
    metafile: true,
    logLevel: 'silent',
  });
  expect(Object.keys(result.metafile.outputs)).toHaveLength(1);
}

/** Every directory from `dir` up to the root holds no node_modules. */
function noNodeModulesAbove(dir: string): string[] {
  const found: string[] = [];
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'node_modules'))) found.push(join(at, 'node_modules'));
    if (dirname(at) === at) return found;
  }
}

describe('the sample app bundled into one file', () => {
  const buildDir = join(process.cwd(), '.cache', 'bundle', String(process.pid));
  let runDir: string;
  let redis: RedisNode;
  let app: ChildProcess;
  let output = '';
  let base: string;

  beforeAll(async () => {
    mkdirSync(buildDir, { recursive: true });
    await bundle(compileSample(buildDir), join(buildDir, 'app.mjs'));
    runDir = mkdtempSync(join(tmpdir(), 'nrl-bundle-'));
    copyFileSync(join(buildDir, 'app.mjs'), join(runDir, 'app.mjs'));
    expect(readdirSync(runDir)).toEqual(['app.mjs']);
    expect(noNodeModulesAbove(runDir)).toEqual([]);

    redis = await RedisNode.start();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    // no NODE_OPTIONS or NODE_PATH from jest: plain node, finding nothing but the file
    const env = { PATH: process.env['PATH'], REDIS_URL: redis.url, PORT: String(port), ADMIN_KEY: 'bundle-admin-key' };
    app = spawn(process.execPath, ['app.mjs'], { cwd: runDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    app.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    app.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const up = async () => {
      if (app.exitCode !== null) throw new Error(`the bundled app exited with code ${app.exitCode}:\n${output}`);
      return fetch(`${base}/health`).then(
        (r) => r.ok,
        () => false,
      );
    };
    await until(up, 60_000, () => `the bundled app did not answer /health:\n${output}`);
  }, 240_000);

  afterAll(async () => {
    if (app && app.exitCode === null) {
      const exited = new Promise((resolve) => app.once('exit', resolve));
      app.kill('SIGTERM');
      await exited;
    }
    await redis?.stop();
    rmSync(buildDir, { recursive: true, force: true });
    if (runDir) rmSync(runDir, { recursive: true, force: true });
  });

  const sms = (phone: string) =>
    fetch(`${base}/sms`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ phone, text: 'Your code is 123456' }) });

  it('limits: the second SMS to a phone within 30 minutes answers 429', async () => {
    const first = await sms('+15555550100');
    expect(first.status).toBe(202);
    expect(first.headers.get('x-ratelimit-remaining')).toBe('0');
    const second = await sms('+15555550100');
    expect(second.status).toBe(429);
    expect(second.headers.get('retry-after')).toBe('1800');
    expect((await sms('+15555550199')).status).toBe(202);
  });

  it('answers GraphQL (Apollo, the schema built from decorator metadata)', async () => {
    const query = { query: '{ quote(symbol: "ACME") { symbol } }' };
    const answer = await fetch(`${base}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(query) });
    expect(await answer.json()).toEqual({ data: { quote: { symbol: 'ACME' } } });
  });

  it('serves the dashboard page, its files and its data', async () => {
    const get = (path: string) => fetch(`${base}/redis-limit/${path}`, { headers: { 'x-admin-key': 'bundle-admin-key' } });
    const page = await get('');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toContain('<base href="/redis-limit/">');
    for (const file of ['dashboard.js', 'dashboard.css']) {
      const served = await get(file);
      expect([file, served.status, await served.text()]).toEqual([file, 200, readFileSync(join('dashboard-page', file), 'utf8')]);
    }
    const overview = await get('api/overview');
    expect(overview.status).toBe(200);
    // answered from Redis (INFO and PING through the bundled ioredis)
    expect(((await overview.json()) as { redis: object }).redis).toMatchObject({ mode: 'standalone', pingMs: expect.any(Number) });
  });
});
