import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * Compiles lib/ to plain ES modules for tests that run it in child processes (Node cannot load
 * TypeScript). The output stays inside the repository so lib finds lua/ and node_modules.
 */
export function compileLib(label: string): string {
  const outDir = join(process.cwd(), '.cache', 'compiled-lib', label);
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--outDir', outDir, '--declaration', 'false']);
  return outDir;
}
