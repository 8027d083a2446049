import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * Compiles lib/ to plain ES modules for tests that run it in child processes (Node cannot load
 * TypeScript). The output stays inside the repository so lib finds node_modules, and is
 * removed when the test process exits.
 */
export function compileLib(label: string): string {
  // one directory per test process: the jest projects of the flavors run the same file side by
  // side, and one process' tsc must not rewrite modules another's workers are loading
  const outDir = join(process.cwd(), '.cache', 'compiled-lib', `${label}-${process.pid}`);
  process.once('exit', () => rmSync(outDir, { recursive: true, force: true }));
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir, '--declaration', 'false']);
  return outDir;
}
