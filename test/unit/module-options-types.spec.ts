import { join } from 'node:path';
import ts from 'typescript';

// Type-level checks of RedisLimitModule's options (issue 26 #13): jest transpiles without checking
// types, so the fixture is compiled here with the project's compiler options. A `@ts-expect-error`
// there that no error meets is itself an error (TS2578).
describe('RedisLimitModule options, as TypeScript sees them', () => {
  it('compiles a factory annotated with RedisLimitModuleOptions and forRoot({ isGlobal }), and no isGlobal in a factory', () => {
    const fixture = join(process.cwd(), 'test', 'unit', 'fixtures', 'module-options-types.ts');
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
    const program = ts.createProgram([fixture], { ...config.options, noEmit: true });
    const errors = ts
      .getPreEmitDiagnostics(program)
      .filter((diagnostic) => diagnostic.file?.fileName === fixture)
      .map((diagnostic) => {
        const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start!);
        return `line ${line + 1}: TS${diagnostic.code} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
      });
    expect(errors).toEqual([]);
  });
});
