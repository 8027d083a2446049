import { readFileSync } from 'node:fs';
import { DASHBOARD_PAGE } from '../../lib/dashboard/dashboard-page.generated.js';
import { COMPILED_SCRIPTS, type CompiledScript } from '../../lib/redis/scripts.generated.js';
import { compileScripts, generate, readPage, REGENERATE } from '../../scripts/generate-scripts.mjs';

// The committed modules that carry lua/ and dashboard-page/ into lib/ must be what the generator
// makes of those folders now: an edited .lua that was not regenerated fails here, not in production.

/** Fails naming each stale entry and the command that brings it up to date. */
function expectNone(stale: string[], what: string): void {
  if (stale.length > 0) throw new Error(`${what} behind the sources: ${stale.join(', ')}; ${REGENERATE}`);
}

const named = (entries: Record<string, unknown>) => new Set(Object.keys(entries));

describe('generated scripts and page (drift)', () => {
  it('holds every script in lua/, each with the source and SHA1 the generator makes now', () => {
    const compiled: Record<string, CompiledScript> = COMPILED_SCRIPTS;
    const fresh = compileScripts();
    const stale = fresh
      .filter((script) => compiled[script.file]?.source !== script.source || compiled[script.file]?.sha1 !== script.sha1)
      .map((script) => (script.file in compiled ? script.file : `${script.file} (missing)`));
    const gone = [...named(compiled)].filter((file) => !fresh.some((script) => script.file === file)).map((file) => `${file} (no longer in lua/)`);
    expectNone([...stale, ...gone], 'lib/redis/scripts.generated.ts is');
    for (const script of fresh) expect(compiled[script.file]!.numberOfKeys).toBe(script.numberOfKeys);
  });

  it("holds the dashboard page's files as they are in dashboard-page/", () => {
    const page: Record<string, string> = DASHBOARD_PAGE;
    const fresh = readPage();
    const stale = fresh.filter(({ file, source }) => page[file] !== source).map(({ file }) => file);
    const gone = [...named(page)].filter((file) => !fresh.some((f) => f.file === file));
    expectNone([...stale, ...gone], 'lib/dashboard/dashboard-page.generated.ts is');
  });

  it('is byte for byte what the generator writes (no hand edits)', () => {
    const stale = Object.entries(generate())
      .filter(([path, text]) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8') !== text)
      .map(([path]) => path);
    expectNone(stale, 'generated modules are');
  });
});
