/**
 * The one place Redis keys are built. Shape: `<prefix><kind>:<scope>:{<key>}`.
 *
 * The user's key is the hash tag, so every key a script touches for that user shares one
 * Redis Cluster slot while distinct users spread over all slots. Scope and key are escaped
 * (`%`, `:`, `{`, `}` and lone surrogates become `%XX` / `%uXXXX`), which keeps the encoding
 * injective: no input can close the tag early, pick another slot or collide with another
 * kind, scope or key.
 */
export class RedisKeys {
  constructor(readonly prefix: string) {
    assertKeyPrefix(prefix);
  }

  /** `kind` names the data structure (fixed by the library); `scope` is optional. */
  build(kind: string, key: string, scope?: string): string {
    const middle = scope === undefined ? '' : `${escapeKeyPart(scope)}:`;
    return `${this.prefix}${kind}:${middle}{${escapeKeyPart(key)}}`;
  }
}

/**
 * A key prefix: a string without '{' or '}' (it must not open a hash tag of its own) and, as it
 * is not escaped, well-formed (two prefixes differing in a lone surrogate would share keys).
 */
export function assertKeyPrefix(prefix: unknown, argument = 'keyPrefix'): asserts prefix is string {
  if (typeof prefix !== 'string' || /[{}]/.test(prefix)) {
    throw new TypeError(`${argument} must be a string without '{' or '}', got ${describeValue(prefix)}`);
  }
  assertWellFormed(prefix, argument);
}

/** Throws a TypeError naming `argument` unless `value` is a non-empty string. */
export function assertKey(value: unknown, argument = 'key'): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new TypeError(`${argument} must be a non-empty string, got ${describeValue(value)}`);
  }
}

const SPECIAL = /[%:{}\uD800-\uDFFF]/gu;

export function escapeKeyPart(part: string): string {
  return part.replace(SPECIAL, (c) => {
    const code = c.charCodeAt(0);
    return code >= 0xd800 ? `%u${code.toString(16).toUpperCase()}` : `%${code.toString(16).toUpperCase()}`;
  });
}

// A lone surrogate has no UTF-8 form: Redis would store U+FFFD, so two strings could collide.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/u;

/** Throws a TypeError naming `argument` if `text` holds a lone surrogate. Needed wherever a string
 * reaches Redis unescaped (hash fields, set members, script arguments, the key prefix). */
export function assertWellFormed(text: string, argument: string): void {
  if (!isWellFormed(text)) throw new TypeError(`${argument} must be well-formed Unicode (it has a lone surrogate)`);
}

export const isWellFormed = (text: string): boolean => !LONE_SURROGATE.test(text);

/** The error for a bad number: a TypeError when `value` is not a number at all, a RangeError
 * when it is one out of range. */
export function numberError(value: unknown): typeof TypeError | typeof RangeError {
  return typeof value === 'number' ? RangeError : TypeError;
}

/** Several problems found at start-up as one error, a line each: a RangeError only when every
 * problem is a number out of range (a RangeError), else a TypeError. */
export function problemsError(heading: string, problems: readonly Error[]): TypeError | RangeError {
  const kind = problems.every((problem) => problem instanceof RangeError) ? RangeError : TypeError;
  return new kind(`${heading}:\n  ${problems.map((problem) => problem.message).join('\n  ')}`);
}

export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  return typeof value;
}
