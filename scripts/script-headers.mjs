// Reads the header every top-level script in lua/ starts with: prose first, with the positional
// layout of its KEYS, ARGV and reply named and typed, so the generator can bind each script to
// TypeScript (script-bindings.mjs) and test/unit/script-headers.spec.ts can hold the header to
// the script body. The convention:
//
//   -- What the script does, in prose (any lines before the first entry).
//   -- KEYS[1]    scheduled  zset: id -> runAt ms
//   -- KEYS[5..]  rates[]  two per message, in ARGV order:
//   --              - counter  its rate key's counter
//   --              - pace  that key's pace
//   -- ARGV[1]    now: ms = ''  now in ms, or '' to use the Redis server clock
//   -- ARGV[2]    count: int  at most this many messages
//   -- ARGV[3..]  fields[]: string  one field per value
//   -- ARGV[last] channel?: string  after the group: sent only when given
//   -- Returns    a flat array:
//   --              - now: ms
//   --              - messages[]  five per message:
//   --                  - id: string
//   --                  ...
//
// An entry is `KEYS[i]`, `KEYS[i..]` (a group running to the last key), `KEYS  none` (keyless),
// `ARGV[i]`, `ARGV[i..]`, `ARGV[last]` (after a group) or `Returns`; its index must be the next
// position. After it comes a declaration, then two spaces, then prose (continued on lines indented
// past the entry's own). A declaration is `name` for a key, `name: type` for an argument or reply
// value; `name?: type` may be left out (only at the end of its layout: it is then not sent);
// `name: type = 'x'` may be left out and is then sent as 'x' (one more value of its type).
// `name[]` is a group of rows, each row the bullets below it (`- ...`, nested by indentation);
// `name[]: type` is a list of single values; `name[#]` is a group sent after its row count;
// `name[*]` is a group of ARGV rows sent in runs: rows alike one after another go once, after how
// many they are (its rows hold values and lists of single values, which are compared).
// `Returns` declares one value (the reply is that value), or a group, or, with prose only, a flat
// array of the bullets below it. A reply group named as an ARGV group at the same place has as
// many rows as it (decide.lua: five values per limit of each stack); any other runs to the end of
// the reply. A bullet without a declaration, holding bullets, is one variant of its row: the first
// value of each variant has codes no other variant has.
//
// Types: int and ms (integers; ms says the unit), string, json (a string of JSON), nil (a reply's
// Lua false), 'literal', or a reply code of the script's area (lua/<area>/replies.lua), joined by |.
//
// PACKED: `Returns  packed  prose`, with bullets as a flat array's, is one string holding those
// values in order, packed big-endian as struct.pack writes them: a value of codes alone as an
// int8 ('b'), any other number as a double ('d'), a string as its byte length, a uint16 ('H'),
// then its bytes. A client reads it far faster than an array of as many values.

import { readFileSync } from 'node:fs';

const ENTRY = /^-- (KEYS|ARGV)(\[(\d+)(\.\.)?\]|\[last\])?\s+(.*)$/;
const RETURNS = /^-- Returns\s+(.*)$/;
const BULLET = /^--( +)- (.*)$/;
const DECLARATION = /^([a-z][A-Za-z0-9]*)(\[[#*]?\])?(\?)?(?::\s*(.+?))?(?:\s*=\s*('[^']*'))?$/;
const ATOMS = new Set(['int', 'ms', 'string', 'json', 'nil']);

/** The header: the comment lines a script starts with, but its include lines. */
export function headerLines(source) {
  const lines = [];
  for (const line of source.split('\n')) {
    if (!line.startsWith('--')) break;
    if (!line.startsWith('--- @include')) lines.push(line);
  }
  return lines;
}

/** The reply codes a script's area names (`local NAME = <integer>` in lua/<area>/replies.lua). */
export function areaCodes(luaDir, file) {
  let source;
  try {
    source = readFileSync(`${luaDir}${file.split('/')[0]}/replies.lua`, 'utf8');
  } catch {
    return new Map();
  }
  const codes = new Map();
  for (const [, names, values] of source.matchAll(/^local ([A-Z][A-Z0-9_]*(?:, [A-Z][A-Z0-9_]*)*) = (-?\d+(?:, -?\d+)*)$/gm)) {
    const v = values.split(', ');
    names.split(', ').forEach((name, i) => codes.set(name, Number(v[i])));
  }
  return codes;
}

/**
 * The header of `file` (a path below lua/) as layouts: `keys` and `args` (undefined when the
 * header names none), `reply`. A layout is `{ items }`, an item a field `{ name, type, optional,
 * fallback }` or a group `{ name, counted, runs, type | items | variants }`; a reply that is one value
 * is `{ value }`. Throws, naming the file and the line, on anything outside the convention.
 */
export function parseHeader(source, file, codes) {
  const fail = (message, line) => {
    throw new Error(`lua/${file}: header: ${message}${line === undefined ? '' : ` (in: ${line.trim()})`}`);
  };
  const entries = [];
  for (const line of headerLines(source)) {
    const entry = ENTRY.exec(line);
    const returns = RETURNS.exec(line);
    if (entry || returns) {
      const text = entry ? entry[5] : returns[1];
      entries.push({
        line,
        section: entry ? entry[1] : 'Returns',
        index: entry?.[2],
        start: entry?.[3] === undefined ? undefined : Number(entry[3]),
        range: entry?.[4] === '..',
        last: entry?.[2] === '[last]',
        text,
        below: [],
      });
    } else if (/^-- \S/.test(line) || line === '--') {
      // a paragraph of prose after the entries
      if (entries.length > 0) entries.at(-1).closed = true;
    } else if (entries.length > 0 && !entries.at(-1).closed) {
      entries.at(-1).below.push(line);
    }
  }
  const type = (text, line, part) => {
    const atoms = text.split('|').map((atom) => atom.trim());
    return atoms.map((atom) => {
      if (ATOMS.has(atom)) {
        if (atom === 'nil' && part !== 'reply') fail('nil is a reply type', line);
        return { atom };
      }
      if (/^'[^']*'$/.test(atom)) return { literal: atom.slice(1, -1) };
      if (/^[A-Z][A-Z0-9_]*$/.test(atom)) {
        if (!codes.has(atom)) fail(`${atom} is no reply code of lua/${file.split('/')[0]}/replies.lua`, line);
        return { code: atom, value: codes.get(atom) };
      }
      return fail(`unknown type ${JSON.stringify(atom)}`, line);
    });
  };
  // one declaration: what precedes the first two spaces of `text`
  const declare = (text, line, part, bullets, more = []) => {
    const [declaration, ...words] = text.trim().split(/ {2,}/);
    const doc = [words.join('  '), ...more.map((l) => l.replace(/^--\s*/, ''))].join(' ').trim();
    const match = DECLARATION.exec(declaration);
    if (!match) {
      if (bullets.length === 0) fail(`not a declaration: ${JSON.stringify(declaration)}`, line);
      return { variant: [declaration, doc].join('  ').trim(), items: items(bullets, part) };
    }
    const [, name, group, optional, typeText, fallback] = match;
    if (part === 'keys' && (typeText || fallback || optional)) fail('a key is declared by its name alone', line);
    if (group) {
      if (optional || fallback) fail('a group cannot be left out', line);
      if (group !== '[]' && part !== 'args') fail(`only an ARGV group is sent ${group === '[#]' ? 'after its count' : 'in runs'}`, line);
      const base = { group: name, counted: group === '[#]', runs: group === '[*]', doc };
      if (typeText) {
        if (bullets.length > 0) fail('a group of single values has no bullets', line);
        return { ...base, type: type(typeText, line, part) };
      }
      if (part === 'keys' && bullets.length === 0) return { ...base, type: [{ atom: 'string' }] };
      if (bullets.length === 0) fail('a group needs `: type` or bullets', line);
      const grouped = { ...base, ...rows(items(bullets, part), line) };
      if (base.runs && !grouped.items?.every((item) => !('group' in item) || 'type' in item)) fail('a row sent in runs holds values and lists of values', line);
      return grouped;
    }
    if (bullets.length > 0) fail('only a group has bullets', line);
    if (part !== 'keys' && !typeText) fail('an argument or reply value needs `: type`', line);
    const declared = part === 'keys' ? [{ atom: 'string' }] : type(typeText, line, part);
    // `= 'x'`: x is one more value of the type, the one sent when the field is left out
    if (fallback !== undefined && !declared.some((t) => t.literal === fallback.slice(1, -1))) declared.push({ literal: fallback.slice(1, -1) });
    return {
      name,
      type: declared,
      optional: optional === '?',
      fallback: fallback?.slice(1, -1),
      doc,
    };
  };
  // a group's rows: fields, or variants (each a list of fields)
  const rows = (children, line) => {
    const variants = children.filter((child) => 'variant' in child);
    if (variants.length === 0) return { items: children };
    if (variants.length !== children.length || variants.length < 2) fail('a row is fields or at least two variants, not both', line);
    const seen = new Set();
    for (const { items: fields } of variants) {
      const first = fields[0];
      if (!first || !('name' in first) || !first.type.every((t) => 'code' in t)) fail("a variant's first value is one or more codes", line);
      for (const t of first.type) {
        if (seen.has(t.code)) fail(`${t.code} starts two variants`, line);
        seen.add(t.code);
      }
    }
    return { variants };
  };
  // bullet lines (`--   - text`, each with the prose lines under it) into declarations, nested
  // by indentation
  const items = (lines, part) => {
    const bullets = [];
    for (const line of lines) {
      const match = BULLET.exec(line);
      if (match) bullets.push({ indent: match[1].length, text: match[2], line, more: [] });
      else if (bullets.length > 0) bullets.at(-1).more.push(line);
    }
    const result = [];
    for (let i = 0; i < bullets.length;) {
      const { indent, text, line, more } = bullets[i];
      let j = i + 1;
      while (j < bullets.length && bullets[j].indent > indent) j++;
      const nested = bullets.slice(i + 1, j).flatMap((b) => [b.line, ...b.more]);
      result.push(declare(text, line, part, nested, more));
      i = j;
    }
    return result;
  };

  // an entry's prose lines (before its first bullet) and its bullets with theirs
  const firstBullet = (entry) => entry.below.findIndex((line) => BULLET.test(line));
  const proseOf = (entry) => (firstBullet(entry) === -1 ? entry.below : entry.below.slice(0, firstBullet(entry)));
  const bulletsOf = (entry) => (firstBullet(entry) === -1 ? [] : entry.below.slice(firstBullet(entry)));

  const layout = (section, part) => {
    const own = entries.filter((entry) => entry.section === section);
    if (own.length === 0) return undefined;
    if (section === 'KEYS' && own.length === 1 && own[0].index === undefined) {
      if (!/^none\b/.test(own[0].text)) fail('`KEYS` without an index is `KEYS  none`', own[0].line);
      return { items: [] };
    }
    const result = [];
    for (const entry of own) {
      const item = declare(entry.text, entry.line, part, bulletsOf(entry), proseOf(entry));
      if ('variant' in item) fail('an entry is a declaration', entry.line);
      if (entry.index === undefined) fail(`${section} without an index`, entry.line);
      if (entry.last) {
        if ('group' in item || !result.some((r) => 'group' in r)) fail(`${section}[last] is one value after a group`, entry.line);
      } else {
        if (entry.start !== result.length + 1) fail(`expected ${section}[${result.length + 1}]`, entry.line);
        if ('group' in item !== entry.range) fail(`${section}[i..] declares a group, ${section}[i] one value`, entry.line);
      }
      result.push(item);
    }
    checkTail(result, section);
    return { items: result };
  };
  // only the end of a layout is left out, and a group runs to the end (but for optional values)
  const checkTail = (list, where) => {
    list.forEach((item, i) => {
      const after = list.slice(i + 1);
      if (item.optional && after.some((next) => !next.optional)) fail(`${where}: ${item.name}? is followed by a value that is not optional`);
      if ('group' in item && !item.counted && after.some((next) => !next.optional)) fail(`${where}: the group ${item.group}[] is not last`);
      if ('items' in item) checkTail(item.items, `${where} ${item.group}[]`);
      if ('variants' in item) for (const variant of item.variants) checkTail(variant.items, `${where} ${item.group}[]`);
    });
  };

  const returns = entries.filter((entry) => entry.section === 'Returns');
  if (returns.length !== 1) fail('one Returns entry');
  const [entry] = returns;
  const bullets = bulletsOf(entry);
  const [first] = entry.text.trim().split(/ {2,}/);
  const declared = first !== 'packed' && DECLARATION.test(first);
  let reply;
  if (first === 'packed') {
    // one string of the bullets' values, packed (see PACKED above)
    if (bullets.length === 0) fail('a packed reply packs the bullets below it', entry.line);
    const prose = [entry.text.trim().slice('packed'.length).trim(), ...proseOf(entry).map((l) => l.replace(/^--\s*/, ''))];
    reply = { items: items(bullets, 'reply'), doc: prose.join(' ').trim(), packed: true };
    checkTail(reply.items, 'Returns');
    checkPacked(reply.items, (message) => fail(message, entry.line));
  } else if (declared) {
    const item = declare(entry.text, entry.line, 'reply', bullets, proseOf(entry));
    reply = 'group' in item ? { items: [item] } : { value: item };
    if (item.optional || item.fallback !== undefined) fail('a reply is never left out', entry.line);
  } else {
    if (bullets.length === 0) fail('Returns declares a value, or a flat array of the bullets below it', entry.line);
    reply = { items: items(bullets, 'reply'), doc: [entry.text, ...proseOf(entry).map((l) => l.replace(/^--\s*/, ''))].join(' ').trim() };
    checkTail(reply.items, 'Returns');
  }
  return { keys: layout('KEYS', 'keys'), args: layout('ARGV', 'args'), reply };
}

/** A packed reply's values: codes (int8), numbers (doubles) and strings (uint16 length, bytes). */
function checkPacked(items, fail) {
  for (const item of items) {
    if ('variants' in item) item.variants.forEach((variant) => checkPacked(variant.items, fail));
    else if ('items' in item) checkPacked(item.items, fail);
    else if (item.type.some((t) => t.atom === 'nil')) fail(`a packed reply has no nil (${item.name ?? item.group})`);
  }
}

/** A group's values per row (undefined when its rows differ in width: variants, nested groups). */
export function rowWidth(group) {
  if ('type' in group) return 1;
  if ('variants' in group) return undefined;
  return group.items.every((item) => 'name' in item) ? group.items.length : undefined;
}

/** The fields a layout starts with, before its first group. */
export function head(layout) {
  const first = layout.items.findIndex((item) => 'group' in item);
  return first === -1 ? layout.items : layout.items.slice(0, first);
}
