import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCRIPT_FILES } from '../../lib/redis/scripts.js';
import { compileScripts } from '../../scripts/generate-scripts.mjs';
import { head, parseHeader, rowWidth, type HeaderGroup, type HeaderItem, type HeaderLayout } from '../../scripts/script-headers.mjs';

// A script's header is what its typed binding is generated from (scripts/script-bindings.mjs):
// named KEYS and ARGV in, a named reply out. Nothing checks at run time that the script reads
// what the header declares, or replies in the widths it names, so this reads both and compares:
// the highest KEYS[i] / ARGV[i] the script reads, where it loops over ARGV, and how many values
// its reply tables and appends hold.

const lua = join(process.cwd(), 'lua');
const scripts = compileScripts();

/** What Redis runs (includes spliced in), without comments: the reads. */
const code = (source: string) => source.replace(/--.*$/gm, '');
/** The script's own file, without comments: its replies (includes build other tables). */
const own = (file: string) => code(readFileSync(join(lua, file), 'utf8'));

const isGroup = (item: HeaderItem): item is HeaderGroup => 'group' in item;
const literalReads = (body: string, table: 'KEYS' | 'ARGV') => [...body.matchAll(new RegExp(`\\b${table}\\[(\\d+)\\]`, 'g'))].map((m) => Number(m[1]));
const highest = (reads: number[]) => (reads.length === 0 ? 0 : Math.max(...reads));
/** Reads at an index the script computes: `#ARGV`, `ARGV[i]`, `ARGV[at + 1]`. */
const computedReads = (body: string, table: 'KEYS' | 'ARGV') => new RegExp(`#${table}\\b|\\b${table}\\[(?!\\d+\\])`).test(body);

/** Positions a group's row starts with before its width can vary (a nested group's count counts,
 * and so does a run's length). */
function rowLead(group: HeaderGroup): number {
  if (group.type) return 1;
  const items = group.items ?? group.variants![0]!.items;
  const nested = items.findIndex(isGroup);
  const lead = nested === -1 ? items.length : nested + (isGroup(items[nested]!) && items[nested].counted ? 1 : 0);
  return lead + (group.runs ? 1 : 0);
}

/** Where a header's ARGV and a script body disagree. */
function argvMismatches(file: string, layout: HeaderLayout | undefined, body: string): string[] {
  const reads = literalReads(body, 'ARGV');
  if (layout === undefined) return reads.length > 0 || computedReads(body, 'ARGV') ? [`${file}: reads ARGV, its header names none`] : [];
  const fixed = head(layout);
  const group = layout.items.find(isGroup);
  if (group === undefined) {
    const problems = [];
    if (highest(reads) !== layout.items.length)
      problems.push(`${file}: header declares ${layout.items.length} ARGV, the script reads up to ARGV[${highest(reads)}]`);
    if (computedReads(body, 'ARGV')) problems.push(`${file}: header declares a fixed ARGV, the script reads ARGV at a computed index`);
    return problems;
  }
  const problems = [];
  const bound = fixed.length + rowLead(group);
  if (highest(reads) > bound) problems.push(`${file}: header declares ${fixed.length} ARGV before ${group.group}[], the script reads ARGV[${highest(reads)}]`);
  if (!computedReads(body, 'ARGV')) problems.push(`${file}: header declares ${group.group}[], the script never reads past its fixed ARGV`);
  // a loop over the group: where it starts and how far it steps
  const width = rowWidth(group);
  for (const [, start, step] of body.matchAll(/for \w+ = (\d+), #ARGV(?:, (\d+))? do/g)) {
    if (Number(start) !== fixed.length + 1)
      problems.push(`${file}: header puts ${group.group}[] at ARGV[${fixed.length + 1}], the script loops from ARGV[${start}]`);
    if (width !== undefined && Number(step ?? 1) !== width)
      problems.push(`${file}: header gives ${group.group}[] ${width} values a row, the script steps ${step ?? 1}`);
  }
  return problems;
}

/** Where a header's KEYS and a script body disagree (a key the script never reads may be declared). */
function keysMismatches(file: string, layout: HeaderLayout | undefined, body: string): string[] {
  if (layout === undefined) return [`${file}: header names no KEYS (\`KEYS  none\` for a keyless script)`];
  const reads = highest(literalReads(body, 'KEYS'));
  const fixed = head(layout).length;
  if (layout.items.some(isGroup)) {
    return computedReads(body, 'KEYS') ? [] : [`${file}: header declares a group of keys, the script reads none past KEYS[${fixed}]`];
  }
  const problems = [];
  if (reads > fixed) problems.push(`${file}: header declares ${fixed} KEYS, the script reads KEYS[${reads}]`);
  if (computedReads(body, 'KEYS')) problems.push(`${file}: header declares fixed KEYS, the script reads KEYS at a computed index`);
  return problems;
}

/** The values of each table constructor `return { a, b(c, d), e }` (commas inside brackets do not count). */
function tableWidths(body: string, pattern: RegExp): number[] {
  return [...body.matchAll(pattern)].map(([, inner]) => {
    let depth = 0;
    let values = inner!.trim() === '' ? 0 : 1;
    for (const c of inner!) {
      if ('({['.includes(c)) depth += 1;
      else if (')}]'.includes(c)) depth -= 1;
      else if (c === ',' && depth === 0) values += 1;
    }
    return values;
  });
}

/** How many values the script appends to its reply at once: runs of `reply[#reply + 1] = …` lines,
 * and assignments to several `reply[…]` at once. */
function appendRuns(body: string): Set<number> {
  const runs = new Set<number>();
  let run = 0;
  for (const line of body.split('\n')) {
    const targets = /^\s*(reply\[[^\]]+\](?:, reply\[[^\]]+\])*) =/.exec(line)?.[1]?.split('], ').length ?? 0;
    if (targets > 1) runs.add(targets);
    if (/^\s*reply\[#reply \+ 1\] =/.test(line)) run += 1;
    else {
      if (run > 0) runs.add(run);
      run = 0;
    }
  }
  return runs;
}

/** Where a header's reply and the script's reply tables disagree. */
/** A packed reply's rows as struct.pack formats (codes 'b', numbers 'd', strings 'Hc0'): the
 * values a row holds before any group in it, and each group's rows. */
function packedRows(items: HeaderItem[]): string[] {
  const rows: string[] = [];
  let lead = '';
  for (const item of items) {
    if (isGroup(item)) {
      if (item.items) rows.push(...packedRows(item.items));
      for (const variant of item.variants ?? []) rows.push(...packedRows(variant.items));
    } else lead += item.type.every((t) => 'code' in t) ? 'b' : item.type.some((t) => 'atom' in t && (t.atom === 'string' || t.atom === 'json')) ? 'Hc0' : 'd';
  }
  return lead === '' ? rows : [lead, ...rows];
}

/** Where a packed reply's rows and the script's struct.pack formats disagree: each format packs
 * whole rows, one after another, and each row is packed somewhere. */
function packedMismatches(file: string, items: HeaderItem[], body: string): string[] {
  const rows = [...new Set(packedRows(items))];
  const formats = [...body.matchAll(/struct\.pack\('>([^']*)'/g)].map((m) => m[1]!);
  const packs = (format: string): boolean => format === '' || rows.some((row) => format.startsWith(row) && packs(format.slice(row.length)));
  const problems = formats
    .filter((format) => !packs(format))
    .map((format) => `${file}: struct.pack('>${format}') packs no run of the header's rows (${rows.join(', ')})`);
  for (const row of rows) if (!formats.some((format) => format.includes(row))) problems.push(`${file}: the header's row ${row} is packed nowhere`);
  if (formats.length === 0) problems.push(`${file}: the header says packed, the script packs nothing`);
  return problems;
}

function replyMismatches(file: string, reply: (typeof scripts)[number]['header']['reply'], body: string): string[] {
  const returned = tableWidths(body, /\breturn \{([^\n]*)\}/g);
  if ('packed' in reply && reply.packed) return packedMismatches(file, reply.items, body);
  if ('value' in reply) return returned.length > 0 ? [`${file}: header declares one value, the script returns a table of ${returned.join(', ')}`] : [];
  const problems = [];
  const fixed = head(reply).length;
  const groups = reply.items.filter(isGroup);
  if (groups.length === 0) {
    const wrong = returned.filter((n) => n !== fixed);
    if (returned.length === 0 || wrong.length > 0)
      problems.push(`${file}: header declares ${fixed} reply values, the script returns tables of ${returned.join(', ') || 'none'}`);
    return problems;
  }
  const started = tableWidths(body, /^local reply(?:, \w+)* = \{([^}\n]*)\}/gm);
  if (started.some((n) => n !== fixed))
    problems.push(`${file}: header declares ${fixed} reply values before its groups, the script starts its reply with ${started.join(', ')}`);
  const runs = appendRuns(body);
  const rows = groups.flatMap(function widths(group): { name: string; width: number }[] {
    const nested = [...(group.items ?? []), ...(group.variants ?? []).flatMap((v) => v.items)].filter(isGroup).flatMap(widths);
    const variantWidths = (group.variants ?? []).flatMap((v) =>
      v.items.some(isGroup) ? [] : [{ name: `${group.group}[] (${v.variant})`, width: v.items.length }],
    );
    const width = rowWidth(group);
    return [...(width !== undefined && width > 1 ? [{ name: `${group.group}[]`, width }] : []), ...variantWidths, ...nested];
  });
  for (const { name, width } of rows) {
    if (!runs.has(width))
      problems.push(`${file}: header gives ${name} ${width} values a row, the script appends its reply in runs of ${[...runs].join(', ') || 'none'}`);
  }
  // a whole reply returned at once (a group-only reply) holds whole rows
  const width = groups.length === 1 && fixed === 0 ? rowWidth(groups[0]!) : undefined;
  if (width !== undefined && returned.some((n) => n % width !== 0))
    problems.push(`${file}: header gives ${groups[0]!.group}[] ${width} values a row, the script returns a table of ${returned.join(', ')}`);
  return problems;
}

describe('script headers agree with their scripts', () => {
  it('every script in lua/ is named in SCRIPT_FILES, and every name has a header', () => {
    const named: string[] = Object.values(SCRIPT_FILES);
    expect(scripts.map(({ file }) => file).sort()).toEqual([...named].sort());
    for (const { header } of scripts) expect(header.reply).toBeDefined();
  });

  it.each(scripts.map((script) => [script.file, script] as const))('%s: KEYS and ARGV as the script reads them', (file, { source, header }) => {
    const body = code(source);
    expect([...keysMismatches(file, header.keys, body), ...argvMismatches(file, header.args, body)]).toEqual([]);
  });

  it.each(scripts.map((script) => [script.file, script] as const))('%s: the reply in the widths the script builds it', (file, { header }) => {
    expect(replyMismatches(file, header.reply, own(file))).toEqual([]);
  });
});

describe('a group sent in runs (`name[*]`)', () => {
  const header = (argv: string) =>
    ['-- Test.', '-- KEYS[1..]   states[]  one per row', '-- ARGV[1]     now: ms', argv, '-- Returns     n: int  how many'].join('\n');
  const rows = ['-- ARGV[2..]   rows[*]  in runs:', '--               - consume: int', '--               - limits[#]: int'].join('\n');

  it('is an ARGV group whose rows hold values and lists of values', () => {
    const group = parseHeader(header(rows), 'test/runs.lua', new Map()).args!.items[1] as HeaderGroup;
    expect(group).toMatchObject({ group: 'rows', runs: true, counted: false });
  });

  it('is refused elsewhere, and for rows holding rows', () => {
    const keys = header(rows).replace('states[]', 'states[*]');
    expect(() => parseHeader(keys, 'test/runs.lua', new Map())).toThrow('lua/test/runs.lua: header: only an ARGV group is sent in runs');
    const nested = header([rows, '--               - pairs[]  two a row:', '--                   - a: int', '--                   - b: int'].join('\n'));
    expect(() => parseHeader(nested, 'test/runs.lua', new Map())).toThrow('a row sent in runs holds values and lists of values');
  });
});
