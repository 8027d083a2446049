import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HashReply, QueueReply, RateLimitReply } from '../../lib/redis/replies.js';

// The reply codes are named twice, once per language: in a Lua include per area (what the
// scripts return) and in lib/redis/replies.ts (what the TypeScript side compares with). Nothing
// reads the Lua files at run time to check them, so this does.

const lua = join(process.cwd(), 'lua');

/** The constants an include defines: every `local NAME = <integer>` line (or `local A, B = 1, 0`), in order. */
function constants(file: string): Record<string, number> {
  const source = readFileSync(join(lua, file), 'utf8');
  const lines = source.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('--'));
  return Object.fromEntries(
    lines.flatMap((line) => {
      const match = /^local ([A-Z][A-Z0-9_]*(?:, [A-Z][A-Z0-9_]*)*) = (-?\d+(?:, -?\d+)*)$/.exec(line);
      const names = match?.[1]!.split(', ') ?? [];
      const values = match?.[2]!.split(', ').map(Number) ?? [];
      if (!match || names.length !== values.length) throw new Error(`${file}: not a reply code: ${line}`);
      return names.map((name, i) => [name, values[i]!]);
    }),
  );
}

const AREAS = [
  { include: 'delay-queue/replies.lua', codes: QueueReply },
  { include: 'rate-limit/replies.lua', codes: RateLimitReply },
  { include: 'expiring-hash/replies.lua', codes: HashReply },
];

describe('reply codes', () => {
  it.each(AREAS)('$include names the same codes, with the same values, as lib/redis/replies.ts', ({ include, codes }) => {
    expect(constants(include)).toEqual(codes);
  });

  it.each(AREAS)('a code that shares its place with times is negative ($include)', ({ codes }) => {
    // the codes that stand in for a time, per the include's comments
    const standIns = Object.entries(codes).filter(([name]) =>
      ['DIED', 'LEASE_LOST', 'ADMITTED', 'NOTHING_DUE', 'NOT_SCHEDULED', 'NO_TTL', 'ABSENT'].includes(name),
    );
    for (const [, value] of standIns) expect(value).toBeLessThan(0);
  });

  it("scripts of an area use only their own area's codes, and include the file that defines them", () => {
    const names = (codes: object) => Object.keys(codes);
    for (const { include, codes } of AREAS) {
      const area = include.split('/')[0]!;
      const others = AREAS.filter((a) => a.include !== include).flatMap((a) => names(a.codes).filter((n) => !names(codes).includes(n)));
      for (const file of readdirSync(join(lua, area)).filter((f) => f.endsWith('.lua') && f !== 'replies.lua')) {
        const code = readFileSync(join(lua, area, file), 'utf8')
          .split('\n')
          .filter((line) => !line.startsWith('--'))
          .join('\n');
        const used = names(codes).filter((name) => new RegExp(`\\b${name}\\b`).test(code));
        const foreign = others.filter((name) => new RegExp(`\\b${name}\\b`).test(code));
        expect({ file, foreign }).toEqual({ file, foreign: [] });
        if (used.length > 0 && !isInclude(file, area)) {
          expect({ file, includes: readFileSync(join(lua, area, file), 'utf8').includes('--- @include "replies.lua"') }).toEqual({ file, includes: true });
        }
      }
    }
  });
});

/** Includes (a file no script is named after) rely on their including script for the codes. */
function isInclude(file: string, area: string): boolean {
  return readFileSync(join(lua, area, file), 'utf8').startsWith('-- Include:');
}
