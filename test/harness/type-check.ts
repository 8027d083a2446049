import { join } from 'node:path';
import ts from 'typescript';

/**
 * The type errors TypeScript finds in `roots`, compiled with the project's tsconfig.json (jest
 * transpiles without checking types), each as `file line N: TSxxxx message`. A root in `sources` is
 * read from there rather than from disk (a snippet of a page); `extra` adds compiler options.
 */
export function typeErrors(roots: string[], sources: ReadonlyMap<string, string> = new Map(), extra: ts.CompilerOptions = {}): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(process.cwd(), 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  )!;
  const options = { ...config.options, ...extra, noEmit: true };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (file) => sources.has(file) || fileExists.call(host, file);
  host.readFile = (file) => sources.get(file) ?? readFile.call(host, file);
  host.getSourceFile = (file, language, ...rest) => {
    const source = sources.get(file);
    return source === undefined ? getSourceFile.call(host, file, language, ...rest) : ts.createSourceFile(file, source, language);
  };
  const program = ts.createProgram(roots, options, host);
  return ts
    .getPreEmitDiagnostics(program)
    .filter((diagnostic) => diagnostic.file !== undefined && roots.includes(diagnostic.file.fileName))
    .map((diagnostic) => {
      const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start!);
      return `${diagnostic.file!.fileName} line ${line + 1}: TS${diagnostic.code} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
    });
}
