import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisNode } from '../harness/redis-server.js';

// The packed tarball, installed by npm into two real consumer apps that then type-check and run
// their own jest (and their e2e test of a shop once more without Redis, under forTesting()): a Nest 11 CommonJS app with ioredis 5 (resolves the `require` build) and a Nest 12
// ES module app with ioredis 6 (`import`). Each passes its own client as `redis` and sets the
// library up as @nestjs/throttler users do: one module line with defaultLimits, a health route
// skipped, a route tightened, an Apollo resolver and a gateway (socket.io on 11, ws on 12). The Nest 11
// app also runs defaultLimits on every transport (a TCP microservice too) with and without a
// RateLimitGuard as APP_GUARD: Nest 11, unlike 12, runs no global guard on a gateway.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const FIXTURES = ['nest11-cjs', 'nest12-esm'];
/** The tests each app's own jest run has: all must run and pass. */
const APP_TESTS: Record<string, number> = { 'nest11-cjs': 12, 'nest12-esm': 7 };

// ioredis is a peer dependency: the library must load the app's copy (the major its package.json
// asks for), never one of its own, or a client it creates and the types it names are another
// version than the app's.
const APP_IOREDIS_MAJOR: Record<string, number> = { 'nest11-cjs': 5, 'nest12-esm': 6 };
const LIBRARY_IOREDIS = [
  '-e',
  "const from = require.resolve('nest-redis-limit'); console.log(require(require.resolve('ioredis/package.json', { paths: [from] })).version)",
];

// Jest in CommonJS mode loads every .js file as CommonJS whatever its package.json "type" says, so
// the apps' jest runs cannot see a broken dist/cjs/package.json; plain Node, as in production, can.
const PLAIN_NODE_LOAD: Record<string, string[]> = {
  'nest11-cjs': ['-e', "console.log(typeof require('nest-redis-limit').RedisLimitModule)"],
  'nest12-esm': ['--input-type=module', '-e', "import { RedisLimitModule } from 'nest-redis-limit'; console.log(typeof RedisLimitModule)"],
};

interface RunResult {
  code: number;
  output: string;
}

/**
 * The environment for child processes: ours without NODE_OPTIONS (the CommonJS app must load the
 * package without --experimental-vm-modules; the ESM app sets it in its own `npm test`) and
 * without this jest worker's id.
 */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { NODE_OPTIONS: _options, JEST_WORKER_ID: _worker, ...env } = process.env;
  return { ...env, ...extra };
}

/** Runs a command to completion; resolves with its exit code and output rather than throwing. */
function run(cmd: string, args: string[], cwd: string, env = childEnv()): Promise<RunResult> {
  return new Promise((done) => {
    execFile(cmd, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      done({ code, output: `${stdout}\n${stderr}` });
    });
  });
}

// What the tarball may hold: the two builds, the scripts and the docs, and these files at its top.
const SHIPPED_DIRS = /^(dist\/esm|dist\/cjs|lua|docs)\//;
const SHIPPED_FILES = ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'BENCHMARKS.md', 'benchmarks.svg'];

describe('packed tarball in consumer apps', () => {
  let tmp: string | undefined;
  let tarball: string | undefined;
  let redis: RedisNode | undefined;

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'nest-redis-limit-compat-'));
    const pack = await run('npm', ['pack', '--pack-destination', tmp], ROOT); // prepack builds dist/
    expect(pack).toMatchObject({ code: 0 });
    tarball = join(tmp, (await readdir(tmp)).find((f) => f.endsWith('.tgz')) ?? 'missing.tgz');

    // Both installs at once: they mostly wait on the registry and the npm cache, not the CPU.
    const installs = FIXTURES.map(async (name) => {
      const dir = join(tmp!, name);
      await cp(join(ROOT, 'test/compat/fixtures', name), dir, {
        recursive: true,
        filter: (src) => !['node_modules', 'package-lock.json'].includes(basename(src)),
      });
      await cp(join(ROOT, 'test/compat/fixtures/shared/shop.spec.ts'), join(dir, 'test/shop.spec.ts'));
      return run('npm', ['install', tarball!, '--no-audit', '--no-fund', '--prefer-offline'], dir);
    });
    for (const install of await Promise.all(installs)) expect(install).toMatchObject({ code: 0 });

    redis = await RedisNode.start();
    // generous bounds here and below: they end a hung step, and a busy machine takes minutes
    // (430 s for this file beside a CPU hog, where a quiet run takes 90 s)
  }, 600_000);

  afterAll(async () => {
    await redis?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }, 60_000);

  it.each(FIXTURES)(
    '%s passes its own jest run',
    async (name) => {
      const result = await run('npm', ['test'], join(tmp!, name), childEnv({ REDIS_URL: redis!.url }));
      // On failure jest prints the whole output of the app's test run in the diff.
      const tests = APP_TESTS[name]!;
      expect(result).toMatchObject({ code: 0, output: expect.stringMatching(new RegExp(`Tests:\\s+${tests} passed, ${tests} total`)) });
    },
    300_000,
  );

  // the same e2e test of a route under @RateLimit and @MaxPending with an @OnDelayed consumer ran on
  // Redis above; here, with no REDIS_URL, on forTesting()'s in-memory engine: no Redis at all
  it.each(FIXTURES)(
    '%s passes its e2e test under forTesting(), with no Redis',
    async (name) => {
      const { REDIS_URL: _none, ...noRedis } = childEnv();
      const result = await run('npm', ['test', '--', 'test/shop.spec.ts'], join(tmp!, name), noRedis);
      expect(result).toMatchObject({ code: 0, output: expect.stringMatching(/forTesting, no Redis[\s\S]*Tests:\s+1 passed, 1 total/) });
    },
    300_000,
  );

  it.each(FIXTURES)('%s loads it in plain Node', async (name) => {
    const result = await run(process.execPath, PLAIN_NODE_LOAD[name]!, join(tmp!, name));
    expect(result).toMatchObject({ code: 0, output: expect.stringMatching(/^function\n/) });
  });

  it('holds what package.json names, the scripts and the docs, and nothing else of the repository', async () => {
    const listing = await run('tar', ['-tzf', tarball!], tmp!);
    expect(listing.code).toBe(0);
    const files = listing.output
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => line.replace(/^package\//, ''));
    const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
      main: string;
      types: string;
      exports: Record<'.', Record<'import' | 'require', Record<'types' | 'default', string>>>;
    };
    const named = [manifest.main, manifest.types, ...Object.values(manifest.exports['.']).flatMap((c) => Object.values(c))];
    expect(files).toEqual(expect.arrayContaining([...named.map((path) => path.replace(/^\.\//, '')), ...SHIPPED_FILES, 'dist/cjs/package.json']));
    expect(files.filter((f) => !SHIPPED_DIRS.test(f) && !SHIPPED_FILES.includes(f))).toEqual([]);
    // no tests, maps, build state or TypeScript sources: declarations only
    expect(files.filter((f) => /\.spec\.|\.map$|\.tsbuildinfo$/.test(f) || (f.endsWith('.ts') && !f.endsWith('.d.ts')))).toEqual([]);
    expect(files.filter((f) => f.startsWith('lua/') && f.endsWith('.lua')).length).toBeGreaterThan(10);
  });

  it('has types that resolve for every consumer: node10, node16 CommonJS and ES modules, bundlers (attw)', async () => {
    const attw = join(ROOT, 'node_modules/.bin/attw');
    const result = await run(attw, [tarball!, '--format', 'ascii', '--no-color'], tmp!);
    // on failure the diff shows attw's table of what resolved where
    expect(result).toMatchObject({ code: 0, output: expect.stringMatching(/No problems found/) });
  }, 120_000);

  it.each(FIXTURES)("%s: the library loads the app's own ioredis", async (name) => {
    const result = await run(process.execPath, LIBRARY_IOREDIS, join(tmp!, name));
    expect(result).toMatchObject({ code: 0, output: expect.stringMatching(new RegExp(`^${APP_IOREDIS_MAJOR[name]}\\.\\d+\\.\\d+\n`)) });
  });
});

// Our own build compiles against ioredis 6; an app may bring 5. Every ioredis API lib/ uses must
// exist in 5 too (the peer range's floor, installed as `ioredis5`), or it fails there at run time.
it("lib/ type-checks against ioredis 5's declarations", async () => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = await run(process.execPath, [tsc, '-p', 'test/compat/tsconfig.ioredis5.json'], ROOT);
  // on failure jest shows tsc's output in the diff
  expect(result).toMatchObject({ code: 0, output: expect.not.stringMatching(/error TS/) });
}, 180_000);
