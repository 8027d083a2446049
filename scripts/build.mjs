// Builds the dual package: ES modules in dist/esm, CommonJS in dist/cjs, from one source (lib/).
// Only lib/redis/lua-dir.ts differs by format; the CommonJS build takes lua-dir-cjs.ts instead.
import { execFileSync } from 'node:child_process';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const run = (project) => execFileSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit' });

rmSync('dist', { recursive: true, force: true });
run('tsconfig.build.json');
run('tsconfig.build-cjs.json');
for (const ext of ['.js', '.d.ts']) {
  renameSync(`dist/cjs/redis/lua-dir-cjs${ext}`, `dist/cjs/redis/lua-dir${ext}`);
}
writeFileSync('dist/cjs/package.json', JSON.stringify({ type: 'commonjs' }) + '\n');
