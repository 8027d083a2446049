// Builds the dual package: ES modules in dist/esm, CommonJS in dist/cjs, from one source (lib/),
// after compiling lua/ and dashboard-page/ into lib/ (generate-scripts.mjs).
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { writeGenerated } from './generate-scripts.mjs';

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const run = (project) => execFileSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit' });

for (const path of writeGenerated()) console.log(`build: regenerated ${path}`);
rmSync('dist', { recursive: true, force: true });
run('tsconfig.build.json');
run('tsconfig.build-cjs.json');
writeFileSync('dist/cjs/package.json', JSON.stringify({ type: 'commonjs' }) + '\n');
