import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { typeErrors } from '../harness/type-check.js';

// docs/migrating-from-throttler.md: every ```ts block of ours is compiled against lib/ as a module
// importing 'nest-redis-limit' (blocks tagged ```ts throttler show @nestjs/throttler, which is not
// installed here). Unused names are allowed: a snippet shows a fragment of an app.
const page = join(process.cwd(), 'docs', 'migrating-from-throttler.md');
const blocks = [...readFileSync(page, 'utf8').matchAll(/^```ts( throttler)?\n([\s\S]*?)^```$/gm)].map(([, throttler, source]) => ({
  ours: throttler === undefined,
  source: source!,
}));
const ours = blocks.filter((block) => block.ours);

describe('the migration guide from @nestjs/throttler', () => {
  it('has snippets of both sides', () => {
    expect(ours.length).toBeGreaterThanOrEqual(8);
    expect(blocks.length - ours.length).toBeGreaterThanOrEqual(6);
  });

  it('compiles every snippet of ours against the library', () => {
    // beside the page, so that they resolve packages as the repository's own modules do
    const sources = new Map(ours.map(({ source }, i) => [join(process.cwd(), 'docs', `migrating-from-throttler.snippet-${i + 1}.ts`), source]));
    const errors = typeErrors([...sources.keys()], sources, {
      paths: { 'nest-redis-limit': [join(process.cwd(), 'lib', 'index.ts')] },
      noUnusedLocals: false,
      noUnusedParameters: false,
    });
    expect(errors).toEqual([]);
  });
});
