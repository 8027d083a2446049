import { join } from 'node:path';
import { typeErrors } from '../harness/type-check.js';

// Type-level checks of RedisLimitModule's options (issue 26 #13): jest transpiles without checking
// types, so the fixture is compiled here with the project's compiler options. A `@ts-expect-error`
// there that no error meets is itself an error (TS2578).
describe('RedisLimitModule options, as TypeScript sees them', () => {
  it('compiles a factory annotated with RedisLimitModuleOptions and forRoot({ isGlobal }), and no isGlobal in a factory', () => {
    expect(typeErrors([join(process.cwd(), 'test', 'unit', 'fixtures', 'module-options-types.ts')])).toEqual([]);
  });
});
