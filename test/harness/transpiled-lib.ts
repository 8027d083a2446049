import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import type * as typescript from 'typescript';

/**
 * lib/ as plain ES modules for tests that run it in child processes (Node cannot load TypeScript),
 * file by file without type checking (tsconfig has isolatedModules, so each file transpiles alone;
 * npm test type-checks before jest): about a second where tsc took 15-30 s in every suite and
 * flavour. The output stays inside the repository, so lib finds node_modules, in one directory per
 * test process (the flavours run the same file side by side), removed when that process exits.
 */
export function transpileLib(label: string): string {
  const outDir = join(process.cwd(), '.cache', 'transpiled-lib', `${label}-${process.pid}`);
  process.once('exit', () => rmSync(outDir, { recursive: true, force: true }));
  const ts = createRequire(import.meta.url)('typescript') as typeof typescript;
  const config = ts.getParsedCommandLineOfConfigFile('tsconfig.build.json', {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
  const compilerOptions = { ...config.options, module: ts.ModuleKind.ESNext, sourceMap: false, declaration: false };
  const root = join(process.cwd(), 'lib');
  for (const file of config.fileNames) {
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions, fileName: file });
    const target = join(outDir, relative(root, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  return outDir;
}
