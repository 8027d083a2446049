// `npm run bench [-- <bench>]`: installs what the benchmarks need (the library's own dependencies
// when missing, and the alternatives in bench/package.json, kept out of the library's tree),
// compiles bench/ and runs bench/run.ts, or bench/<bench>.bench.ts when named.
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const run = (cmd, args, cwd = root) => execFileSync(cmd, args, { cwd, stdio: 'inherit' });
const newer = (a, b) => !existsSync(b) || statSync(a).mtimeMs > statSync(b).mtimeMs;

if (!existsSync(`${root}node_modules/.package-lock.json`)) run('npm', ['ci', '--no-audit', '--no-fund']);
if (newer(`${root}bench/package-lock.json`, `${root}bench/node_modules/.package-lock.json`)) {
  run('npm', ['ci', '--no-audit', '--no-fund'], `${root}bench`);
}
run(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', 'bench/tsconfig.json']);
const target = process.argv[2] ? `${process.argv[2]}.bench` : 'run';
// --expose-gc: the benches collect garbage between contenders, so none pays for another's
run(process.execPath, ['--expose-gc', `${root}bench/.build/bench/${target}.js`]);
