import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

// The ExpiringHash scripts share their code through includes with one concern each, which keep
// no state of their own: a script opens the hash into a table and passes it along. These read
// lua/expiring-hash as text (Redis receives each script with its includes spliced in, so an
// include a script never calls still costs every EVAL and every script cache).

const LUA = join(process.cwd(), 'lua');
const AREA = 'expiring-hash';
const INCLUDE = /^--- @include "([^"]+)"\s*$/gm;

const source = (file: string) => readFileSync(join(LUA, file), 'utf8');
const isInclude = (file: string) => source(file).startsWith('-- Include:');
const files = readdirSync(join(LUA, AREA))
  .filter((name) => name.endsWith('.lua'))
  .map((name) => `${AREA}/${name}`);

/** A file's code: comment lines and trailing comments dropped. */
const code = (file: string) =>
  source(file)
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .map((line) => line.replace(/\s--\s.*$/, ''));

/** The files `file` splices in, directly or through other includes. */
function included(file: string, seen = new Set<string>()): Set<string> {
  for (const [, target] of source(file).matchAll(INCLUDE)) {
    const path = normalize(join(dirname(file), target!));
    if (!seen.has(path)) {
      seen.add(path);
      included(path, seen);
    }
  }
  return seen;
}

// What an include may do at its top level: define functions, and name constants (numbers or
// strings) and redis.call. Anything else is state every function of the script would share.
const DEFINITION =
  /^(end|local function ([a-z_][a-z0-9_]*)\(.*|local ([A-Z_][A-Z0-9_]*(?:, [A-Z_][A-Z0-9_]*)*) = (?:-?\d+|'[^']*')(?:, (?:-?\d+|'[^']*'))*(?: .*)?|local rcall = redis\.call)$/;

/** The names an include defines at its top level. */
function defines(file: string): string[] {
  return code(file).flatMap((line) => {
    const match = DEFINITION.exec(line);
    return match?.[2] ? [match[2]] : match?.[3] ? match[3].split(', ') : [];
  });
}

describe('ExpiringHash includes', () => {
  const includes = files.filter(isInclude);
  const scripts = files.filter((file) => !isInclude(file));

  it('keep no state of their own: their top level only defines functions and constants', () => {
    const statements = includes.flatMap((file) =>
      code(file)
        .filter((line) => line !== '' && !/^\s/.test(line) && !DEFINITION.test(line))
        .map((line) => `${file}: ${line}`),
    );
    expect(statements).toEqual([]);
  });

  it.each(scripts)('%s splices in no include it never calls', (script) => {
    const spliced = [...included(script)];
    const unused = spliced.filter((file) => {
      const elsewhere = [script, ...spliced.filter((other) => other !== file)].flatMap(code).join('\n');
      return !defines(file).some((name) => new RegExp(`\\b${name}\\b`).test(elsewhere));
    });
    expect(unused).toEqual([]);
  });

  it('each include is spliced into some script', () => {
    const used = new Set(scripts.flatMap((script) => [...included(script)]));
    expect(includes.filter((file) => !used.has(file))).toEqual([]);
  });
});
