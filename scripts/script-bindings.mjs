// Writes the typed binding of every script from its header (script-headers.mjs): an interface
// for its named keys and arguments, one for its reply, and the functions that put the first into
// the positional argv Redis takes and read the second out of the positional reply. The functions
// are written out per script, straight-line code and one loop per group, so a call costs what the
// hand-written arrays did (the rate limiter's decide path runs them on every request).
import { head, rowWidth } from './script-headers.mjs';

const q = (value) => JSON.stringify(value);
const words = (file) => file.replace(/\.lua$/, '').split(/[-/]/);
const pascal = (file) =>
  words(file)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');
const upper = (name) => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
const capital = (name) => name[0].toUpperCase() + name.slice(1);

/** A row group's name is plural; its rows are named by the singular. */
function singular(name, file) {
  if (/(sh|ch|x|ss)es$/.test(name)) return name.slice(0, -2);
  if (/ies$/.test(name)) return `${name.slice(0, -3)}y`;
  if (/[^s]s$/.test(name)) return name.slice(0, -1);
  throw new Error(`lua/${file}: header: a group of rows has a plural name, not ${name}`);
}

const NUMBER = new Set(['int', 'ms']);
const literal = (value) => `'${value.replace(/[\\']/g, '\\$&')}'`;
const STRING = new Set(['string', 'json']);

/** The TypeScript type of a header type (codes as their values; a plain number absorbs them). */
function tsType(type) {
  const number = type.some((t) => NUMBER.has(t.atom));
  const string = type.some((t) => STRING.has(t.atom));
  const parts = type.flatMap((t) => {
    if (NUMBER.has(t.atom)) return ['number'];
    if (STRING.has(t.atom)) return ['string'];
    if (t.atom === 'nil') return ['null'];
    if ('literal' in t) return string ? [] : [literal(t.literal)];
    return number ? [] : [String(t.value)];
  });
  return [...new Set(parts)].join(' | ');
}

/** Reads one reply value as its type says: Number() or String() as the values before did. */
function read(type, expr, file) {
  const numeric = type.some((t) => NUMBER.has(t.atom) || 'code' in t);
  const text = type.some((t) => STRING.has(t.atom) || 'literal' in t);
  if (numeric === text) throw new Error(`lua/${file}: header: a reply value is numbers or strings`);
  let value = numeric ? `Number(${expr})` : `String(${expr})`;
  const narrow = type.filter((t) => t.atom !== 'nil');
  // the one place a reply is taken at the header's word: codes and literals are named types
  if (narrow.every((t) => 'code' in t || 'literal' in t)) value += ` as ${tsType(narrow)}`;
  return type.some((t) => t.atom === 'nil') ? `${expr} === null ? null : ${value}` : value;
}

/** A doc comment on the line of what it documents ('' for no prose). */
const inline = (text) => {
  const clean = text.replace(/:$/, '').replace(/\*\//g, '*\\/');
  return clean ? `/** ${clean} */ ` : '';
};

/** Renders one script's section: its types, width constants and binding. */
function renderScript({ file, header, numberOfKeys }, summary) {
  const name = pascal(file);
  const constant = upper(name);
  const types = [];
  const widths = [];
  const widthOf = (group, part) => `${constant}_${part === 'args' ? 'ARGV' : upper(part)}_${upper(singular(group.group, file))}_FIELDS`;

  // --- types: a declaration a line, each member's prose as its doc comment (editors show it)
  const member = (item, part) => {
    if ('group' in item) return `${inline(item.doc)}readonly ${item.group}: ${groupType(item, part)};`;
    const optional = item.optional || item.fallback !== undefined ? '?' : '';
    return `${inline(item.doc)}readonly ${item.name}${optional}: ${tsType(item.type)};`;
  };
  const groupType = (group, part) => {
    if ('type' in group) {
      const element = tsType(group.type);
      return `readonly ${element.includes(' ') ? `(${element})` : element}[]`;
    }
    const row = `${name}${capital(singular(group.group, file))}${part === 'reply' ? 'Reply' : part === 'keys' ? 'Keys' : ''}`;
    const width = rowWidth(group);
    // (a packed reply's rows have no width in values: each value has its own size)
    if (width !== undefined && !(part === 'reply' && header.reply.packed)) {
      const where = part === 'args' ? 'ARGV' : part === 'keys' ? 'KEYS' : 'reply';
      widths.push(`${inline(`${file}: values per ${singular(group.group, file)} in its ${where}.`)}export const ${widthOf(group, part)} = ${width};`);
    }
    if ('variants' in group) {
      const variants = group.variants.map((variant) => `{ ${variant.items.map((item) => member(item, part)).join(' ')} }`);
      types.push(`${inline(group.doc)}export type ${row} = ${variants.join(' | ')};`);
    } else {
      interfaceOf(row, group.items, part, group.doc);
    }
    return `readonly ${row}[]`;
  };
  const interfaceOf = (typeName, items, part, text) => {
    const members = items.map((item) => member(item, part));
    types.push(`${inline(text)}export interface ${typeName} { ${members.join(' ')} }`);
  };

  const parts = [];
  if (header.keys && header.keys.items.length > 0) {
    interfaceOf(`${name}Keys`, header.keys.items, 'keys', `${file}: KEYS, by name.`);
    parts.push(['keys', `${name}Keys`]);
  }
  if (header.args) {
    interfaceOf(`${name}Args`, header.args.items, 'args', `${file}: ARGV, by name.`);
    parts.push(['args', `${name}Args`]);
  }
  const { reply } = header;
  if ('value' in reply) {
    types.push(`${inline(`${file}: ${reply.value.doc}`)}export type ${name}Reply = ${tsType(reply.value.type)};`);
  } else {
    interfaceOf(`${name}Reply`, reply.items, 'reply', `${file}: its reply, by name.`);
  }
  types.push(`${inline(summary)}export interface ${name}Call { ${parts.map(([part, type]) => `readonly ${part}: ${type};`).join(' ')} }`);

  // --- encode: keys, then ARGV, in header order; the key count first for a group of keys
  const body = [];
  let pending = [];
  let started = false;
  const flush = (indent = '  ') => {
    if (pending.length === 0) return;
    body.push(started ? `${indent}argv.push(${pending.join(', ')});` : `${indent}const argv: Argv = [${pending.join(', ')}];`);
    started = true;
    pending = [];
  };
  const start = () => {
    flush();
    if (!started) body.push('  const argv: Argv = [];');
    started = true;
  };
  const value = (source, item) => (item.fallback === undefined ? `${source}.${item.name}` : `${source}.${item.name} ?? ${literal(item.fallback)}`);
  const encodeGroup = (group, source, indent) => {
    const list = `${source}.${group.group}`;
    if ('type' in group) return [`${indent}argv.push(...${list});`];
    const row = singular(group.group, file);
    const fields = group.items.filter((item) => !('group' in item) && (item.optional ? fail(file, 'a row has no optional value') : true));
    const lines = [];
    const inner = [];
    // a group in runs: each row goes after how many rows alike follow it (it included)
    const values = group.runs ? ['j - i'] : [];
    for (const item of group.items) {
      if (!('group' in item)) values.push(value(row, item));
      else {
        if (item.counted) values.push(`${row}.${item.group}.length`);
        inner.push(`${indent}  argv.push(${values.splice(0).join(', ')});`, ...encodeGroup(item, row, `${indent}  `));
      }
    }
    if (values.length > 0) inner.push(`${indent}  argv.push(${values.join(', ')});`);
    if (group.runs) {
      const next = `${list}[j]!`;
      const alike = group.items
        .map((item) => ('group' in item ? `sameValues(${next}.${item.group}, ${row}.${item.group})` : `${next}.${item.name} === ${row}.${item.name}`))
        .join(' && ');
      lines.push(
        `${indent}for (let i = 0; i < ${list}.length; ) {`,
        `${indent}  const ${row} = ${list}[i]!;`,
        `${indent}  let j = i + 1;`,
        `${indent}  while (j < ${list}.length && ${alike}) j += 1;`,
        ...inner.filter((line) => !/argv\.push\(\);$/.test(line)),
        `${indent}  i = j;`,
        `${indent}}`,
      );
      return lines;
    }
    if (inner.length === 1 && fields.length === group.items.length) lines.push(`${indent}for (const ${row} of ${list}) ${inner[0].trim()}`);
    else lines.push(`${indent}for (const ${row} of ${list}) {`, ...inner.filter((line) => !/argv\.push\(\);$/.test(line)), `${indent}}`);
    return lines;
  };
  const keyGroup = header.keys?.items.find((item) => 'group' in item);
  if (numberOfKeys === undefined) {
    const fixed = header.keys.items.length - 1;
    const width = rowWidth(keyGroup);
    const count = `keys.${keyGroup.group}.length${width === 1 ? '' : ` * ${widthOf(keyGroup, 'keys')}`}`;
    pending.push(fixed === 0 ? count : `${fixed} + ${count}`);
  }
  for (const [part, items] of [
    ['keys', header.keys?.items ?? []],
    ['args', header.args?.items ?? []],
  ]) {
    for (const item of items) {
      if ('group' in item && 'type' in item && !item.counted) {
        // single values: spread where they stand
        pending.push(`...${part}.${item.group}`);
      } else if ('group' in item) {
        start();
        if (item.counted) pending.push(`${part}.${item.group}.length`);
        flush();
        body.push(...encodeGroup(item, part, '  '));
      } else if (item.optional) {
        start();
        body.push(`  if (${part}.${item.name} === undefined) return argv;`, `  argv.push(${part}.${item.name});`);
      } else {
        pending.push(value(part, item));
      }
    }
  }
  const callParts = parts.map(([part]) => part).join(', ');
  const signature = `  encode: (${callParts ? `{ ${callParts} }` : '_call'}) =>`;
  let encode;
  if (!started) encode = [`${signature} [${pending.join(', ')}],`];
  else {
    flush();
    encode = [`${signature} {`, ...body.map((line) => `  ${line}`), '    return argv;', '  },'];
  }

  // a variant row whose first value is a code no variant has: the reply is not what the header
  // says, and the rows after it could not be found
  const unknownCode = (indent, first) => [
    `${indent}} else {`,
    `${indent}  throw new RedisScriptError('lua/${file}', \`the code \${${first}}, which its header does not name\`);`,
    `${indent}}`,
  ];

  // --- decode: values at fixed places are read where the reply object is made; a row holding a
  // group reads its values first, as `at` moves past them
  let decode;
  let usesArgs = false;
  const taken = new Set(['r', 'at', 'reply', 'args', 'list']);
  const local = (base) => {
    let n = 1;
    while (taken.has(n === 1 ? base : `${base}${n}`)) n += 1;
    const chosen = n === 1 ? base : `${base}${n}`;
    taken.add(chosen);
    return chosen;
  };
  const rowCode = (items, indent, path, argsRow) => {
    const lines = [];
    const members = [];
    if (items.every((item) => !('group' in item))) {
      items.forEach((item, k) => members.push(`${item.name}: ${read(item.type, k === 0 ? 'r[at]' : `r[at + ${k}]`, file)}`));
      return { lines, members, advance: items.length };
    }
    let offset = 0;
    for (const item of items) {
      if ('group' in item) {
        if (offset > 0) lines.push(`${indent}at += ${offset};`);
        offset = 0;
        const nested = groupCode(item, indent, path, argsRow);
        lines.push(...nested.lines);
        members.push(nested.target === item.group ? item.group : `${item.group}: ${nested.target}`);
      } else {
        const value = local(item.name);
        lines.push(`${indent}const ${value} = ${read(item.type, offset === 0 ? 'r[at]' : `r[at + ${offset}]`, file)};`);
        members.push(value === item.name ? value : `${item.name}: ${value}`);
        offset += 1;
      }
    }
    return { lines, members, advance: offset };
  };
  // a group's rows into a new array; a group that is also an ARGV group at the same place has as
  // many rows as it, any other runs to the end of the reply
  const groupCode = (group, indent, argsPath, argsRow, initial) => {
    const path = [...argsPath, group.group];
    const target = local(group.group);
    const element = 'type' in group ? tsType(group.type) : `${name}${capital(singular(group.group, file))}Reply`;
    const lines = [`${indent}const ${target}: ${element.includes(' ') ? `(${element})` : element}[] = [];`];
    const width = 'type' in group ? '1' : rowWidth(group) === undefined ? undefined : widthOf(group, 'reply');
    // the rows' ARGV counterpart, when a nested group of the row needs its own
    const nests = 'items' in group ? group.items.some((item) => 'group' in item) : 'variants' in group;
    const sameInArgs = findGroup(header.args, path) !== undefined;
    if (!sameInArgs && argsPath.length > 0) fail(file, `the nested reply group ${group.group}[] needs an ARGV group of that name to say how many rows it has`);
    if (sameInArgs) usesArgs = true;
    const rowArgs = sameInArgs && nests ? local(`${singular(group.group, file)}Call`) : argsRow;
    const rows = `${argsRow}.${group.group}`;
    if (width !== undefined) {
      // rows of one width: one line
      const row = 'type' in group ? { members: undefined, lead: read(group.type, 'r[at]', file) } : rowCode(group.items, indent, path, rowArgs);
      const push = `${target}.push(${row.members === undefined ? row.lead : `{ ${row.members.join(', ')} }`});`;
      const step = width === '1' ? 'at += 1' : `at += ${width}`;
      // `initial`: the loop's own `at`, when nothing after it reads the reply
      const from = initial === undefined ? '' : `let at = ${initial}`;
      lines.push(
        sameInArgs
          ? `${indent}for (let i = 0${from ? `, at = ${initial}` : ''}; i < ${rows}.length; i += 1, ${step}) ${push}`
          : `${indent}for (${from}; at < r.length; ${step}) ${push}`,
      );
      return { lines, target };
    }
    lines.push(sameInArgs ? `${indent}for (const ${rowArgs} of ${rows}) {` : `${indent}while (at < r.length) {`);
    const inner = `${indent}  `;
    const advance = (row, at) => (row.advance === 0 ? [] : [`${at}at += ${row.advance};`]);
    if ('variants' in group) {
      const first = local(group.variants[0].items[0].name);
      lines.push(`${inner}const ${first} = Number(r[at]);`, `${inner}at += 1;`);
      // each variant's codes narrow `first`; a code no variant has means the reply is not what the
      // header says, and the rows after it could not be found
      group.variants.forEach((variant, i) => {
        const [lead, ...rest] = variant.items;
        const test = lead.type.map((t) => `${first} === ${t.value}`).join(' || ');
        lines.push(`${inner}${i === 0 ? '' : '} else '}if (${test}) {`);
        const row = rowCode(rest, `${inner}  `, path, rowArgs);
        lines.push(...row.lines);
        lines.push(`${inner}  ${target}.push({ ${[lead.name === first ? first : `${lead.name}: ${first}`, ...row.members].join(', ')} });`);
        lines.push(...advance(row, `${inner}  `));
      });
      lines.push(...unknownCode(inner, first));
    } else {
      const row = rowCode(group.items, inner, path, rowArgs);
      lines.push(...row.lines, `${inner}${target}.push({ ${row.members.join(', ')} });`, ...advance(row, inner));
    }
    lines.push(`${indent}}`);
    return { lines, target };
  };
  if (reply.packed) {
    decode = packedDecode();
  } else if ('value' in reply) {
    decode = [`  decode: (reply) => ${read(reply.value.type, 'reply', file)},`];
  } else if (reply.items.length === 1 && 'type' in reply.items[0] && !findGroup(header.args, [reply.items[0].group], true)) {
    // a list of single values, the whole reply
    const [group] = reply.items;
    decode = [`  decode: (reply) => ({ ${group.group}: list(reply, ${q(file)}).map((value) => ${read(group.type, 'value', file)}) }),`];
  } else {
    const fixed = head(reply);
    const members = fixed.map((item, i) => `${item.name}: ${read(item.type, `r[${i}]`, file)}`);
    const lines = [];
    const rest = reply.items.slice(fixed.length);
    const lone = rest.length === 1 && ('type' in rest[0] || rowWidth(rest[0]) !== undefined);
    if (rest.length > 0 && !lone) lines.push(`    let at = ${fixed.length};`);
    for (const group of rest) {
      const code = groupCode(group, '    ', [], 'args', lone ? fixed.length : undefined);
      lines.push(...code.lines);
      members.push(code.target === group.group ? group.group : `${group.group}: ${code.target}`);
    }
    const open = `  decode: (reply${usesArgs ? ', { args }' : ''}) => {`;
    const r = `const r = list(reply, ${q(file)});`;
    const result = `return { ${members.join(', ')} };`;
    decode = lines.length === 0 ? [`${open} ${r} ${result} },`] : [open, `    ${r}`, ...lines, `    ${result}`, '  },'];
  }

  // a packed reply (script-headers.mjs): read in order from the one Buffer, `at` moving past
  // each value as its width says. Numbers through a DataView over it: Buffer's readDoubleBE cost
  // about ten times as much, several times per decision.
  function packedDecode() {
    const lines = [];
    // `lead`: a variant row's first value, left a number so the tests on it narrow it
    const field = (item, indent, lead = false) => {
      const value = local(item.name);
      const codes = item.type.every((t) => 'code' in t);
      const text = item.type.some((t) => STRING.has(t.atom) || 'literal' in t);
      if (codes) {
        if (item.type.some((t) => t.value < -128 || t.value > 127)) fail(file, `a packed code is an int8 (${item.name})`);
        lines.push(`${indent}const ${value} = view.getInt8(at)${lead ? '' : ` as ${tsType(item.type)}`};`, `${indent}at += 1;`);
      } else if (text) {
        const length = local(`${item.name}Length`);
        lines.push(
          `${indent}const ${length} = view.getUint16(at);`,
          `${indent}const ${value} = r.toString('utf8', at + 2, at + 2 + ${length})${item.type.every((t) => 'literal' in t) ? ` as ${tsType(item.type)}` : ''};`,
          `${indent}at += 2 + ${length};`,
        );
      } else {
        lines.push(`${indent}const ${value} = view.getFloat64(at);`, `${indent}at += 8;`);
      }
      return value;
    };
    const member = (key, value) => (value === key ? value : `${key}: ${value}`);
    const row = (items, indent, path, argsRow) =>
      items.map((item) => ('group' in item ? member(item.group, group(item, indent, path, argsRow)) : member(item.name, field(item, indent))));
    const group = (item, indent, argsPath, argsRow) => {
      const path = [...argsPath, item.group];
      const target = local(item.group);
      const element = 'type' in item ? tsType(item.type) : `${name}${capital(singular(item.group, file))}Reply`;
      lines.push(`${indent}const ${target}: ${element.includes(' ') ? `(${element})` : element}[] = [];`);
      const counted = findGroup(header.args, path) !== undefined;
      if (!counted && argsPath.length > 0) fail(file, `the nested reply group ${item.group}[] needs an ARGV group of that name to say how many rows it has`);
      if (counted) usesArgs = true;
      // a row's own ARGV row, when a group inside it needs its count
      const hasGroup = (items) => items.some((inner) => 'group' in inner);
      const nests = 'variants' in item ? item.variants.some((variant) => hasGroup(variant.items)) : 'items' in item && hasGroup(item.items);
      const rowArgs = nests ? local(`${singular(item.group, file)}Call`) : undefined;
      if (!counted) lines.push(`${indent}while (at < r.length) {`);
      else if (rowArgs) lines.push(`${indent}for (const ${rowArgs} of ${argsRow}.${item.group}) {`);
      else {
        const index = local('i');
        lines.push(`${indent}for (let ${index} = 0; ${index} < ${argsRow}.${item.group}.length; ${index} += 1) {`);
      }
      const inner = `${indent}  `;
      if ('type' in item) {
        lines.push(`${inner}${target}.push(${field({ name: singular(item.group, file), type: item.type }, inner)});`);
      } else if ('variants' in item) {
        // the first value, read as any variant's codes: it tells which variant the row is
        const lead = { name: item.variants[0].items[0].name, type: item.variants.flatMap((variant) => variant.items[0].type) };
        const first = field(lead, inner, true);
        item.variants.forEach((variant, i) => {
          const [own, ...rest] = variant.items;
          lines.push(`${inner}${i === 0 ? '' : '} else '}if (${own.type.map((t) => `${first} === ${t.value}`).join(' || ')}) {`);
          const members = row(rest, `${inner}  `, path, rowArgs);
          lines.push(`${inner}  ${target}.push({ ${[member(own.name, first), ...members].join(', ')} });`);
        });
        lines.push(...unknownCode(inner, first));
      } else {
        const members = row(item.items, inner, path, rowArgs);
        lines.push(`${inner}${target}.push({ ${members.join(', ')} });`);
      }
      lines.push(`${indent}}`);
      return target;
    };
    const members = row(reply.items, '    ', [], 'args');
    return [
      `  decode: (reply${usesArgs ? ', { args }' : ''}) => {`,
      `    const r = packed(reply, ${q(file)});`,
      '    const view = new DataView(r.buffer, r.byteOffset, r.length);',
      '    let at = 0;',
      ...lines,
      `    return { ${members.join(', ')} };`,
      '  },',
    ];
  }

  const binding = `const ${constant}: ScriptBinding<${name}Call, ${name}Reply> =`;
  const oneLine = encode.length === 1 && decode.length === 1;
  return [
    `// ${file}`,
    ...types,
    ...widths,
    ...(oneLine
      ? [`${binding} { ${encode[0].trim()} ${decode[0].trim().replace(/,$/, '')} };`]
      : [`${binding} {`, ...(reply.packed ? ['  packed: true,'] : []), ...encode, ...decode, '};']),
    '',
  ];
}

function fail(file, message) {
  throw new Error(`lua/${file}: header: ${message}`);
}

/** The ARGV group at `path` (names of nested groups), if any. */
function findGroup(layout, path) {
  let items = layout?.items ?? [];
  let found;
  for (const name of path) {
    found = items.find((item) => item.group === name);
    if (!found) return undefined;
    items = found.items ?? [];
  }
  return found;
}

/** The prose a header starts with: what the script does. */
function summaryOf(source) {
  const lines = [];
  for (const line of source.split('\n')) {
    if (!line.startsWith('-- ') || /^-- (KEYS|ARGV|Returns)\b/.test(line)) break;
    lines.push(line.slice(3));
  }
  return lines.join(' ');
}

/** Whether a script's ARGV has a group sent in runs whose rows hold a list (compared by sameValues). */
const comparesLists = ({ header }) => (header.args?.items ?? []).some((group) => group.runs && group.items.some((item) => 'group' in item));

/** The generated module's lines after its banner. */
export function renderBindings(scripts) {
  return [
    "import { RedisScriptError } from '../errors.js';",
    "import type { Reply } from './scripts.js';",
    '',
    '/** What the client sends after the command: the key count when the call gives it, the keys, then ARGV. */',
    'export type Argv = (string | number)[];',
    '',
    '/** A script bound to TypeScript: named keys and arguments into its argv, its positional reply',
    ' * into named values (a reply group as long as an ARGV group takes its length from the call). */',
    'export interface ScriptBinding<Call, Result> {',
    '  /** Its reply is one packed string (script-headers.mjs), asked for as a Buffer. */',
    '  readonly packed?: true;',
    '  encode(call: Call): Argv;',
    '  decode(reply: Reply, call: Call): Result;',
    '}',
    '',
    '/** A reply that is an array, as its header says. */',
    'function list(reply: Reply, file: string): readonly Reply[] {',
    '  if (!Array.isArray(reply)) throw new RedisScriptError(`lua/${file}`, `a reply of type ${typeof reply}, where its header says an array`);',
    '  return reply;',
    '}',
    '',
    ...(scripts.some(({ header }) => header.reply.packed)
      ? [
          '/** A packed reply, as its header says: the one string, as the Buffer it was asked for as. */',
          'function packed(reply: Reply, file: string): Buffer {',
          '  if (!Buffer.isBuffer(reply)) throw new RedisScriptError(`lua/${file}`, `a reply of type ${typeof reply}, where its header says a packed string`);',
          '  return reply;',
          '}',
          '',
        ]
      : []),
    ...(scripts.some(comparesLists)
      ? [
          '/** Whether two lists hold the same values in the same order (rows sent in runs). */',
          'function sameValues(a: readonly (string | number)[], b: readonly (string | number)[]): boolean {',
          '  if (a.length !== b.length) return false;',
          '  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return false;',
          '  return true;',
          '}',
          '',
        ]
      : []),
    ...scripts.flatMap((script) => renderScript(script, summaryOf(script.source))),
    "/** Every script's call and reply, by its path below lua/. */",
    'export interface ScriptSignatures {',
    ...scripts.map(({ file }) => `  ${q(file)}: { call: ${pascal(file)}Call; reply: ${pascal(file)}Reply };`),
    '}',
    '',
    "/** Every script's binding, by its path below lua/. */",
    "export const SCRIPT_BINDINGS: { readonly [F in keyof ScriptSignatures]: ScriptBinding<ScriptSignatures[F]['call'], ScriptSignatures[F]['reply']> } = {",
    ...scripts.map(({ file }) => `  ${q(file)}: ${upper(pascal(file))},`),
    '};',
    '',
  ];
}
