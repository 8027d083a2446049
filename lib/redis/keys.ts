import { assertWellFormed, describeValue } from '../validation.js';

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

  /** The scope `build` put in `built`, unescaped (for messages that name a key): undefined when
   * it was built without one, or not by this builder. */
  scopeOf(built: string): string | undefined {
    if (!built.startsWith(this.prefix)) return undefined;
    const scope = /^[^:{}]+:([^:{}]*):\{[^{}]*\}$/.exec(built.slice(this.prefix.length))?.[1];
    return scope === undefined ? undefined : unescapeKeyPart(scope);
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
/** Whether a part may need escaping: any surrogate, paired or not (those get the full look). */
const MAYBE_SPECIAL = /[%:{}\uD800-\uDFFF]/;

export function escapeKeyPart(part: string): string {
  // most keys need nothing, and a test costs a fraction of a replace (built per request)
  if (!MAYBE_SPECIAL.test(part)) return part;
  return part.replace(SPECIAL, (c) => {
    const code = c.charCodeAt(0);
    return code >= 0xd800 ? `%u${code.toString(16).toUpperCase()}` : `%${code.toString(16).toUpperCase()}`;
  });
}

/** escapeKeyPart's inverse. */
export function unescapeKeyPart(part: string): string {
  return part.replace(/%u([0-9A-F]{4})|%([0-9A-F]{2})/g, (_, wide: string | undefined, narrow: string | undefined) =>
    String.fromCharCode(parseInt((wide ?? narrow)!, 16)),
  );
}
