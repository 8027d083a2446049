import fc from 'fast-check';
import { RedisKeys, escapeKeyPart } from '../../lib/redis/keys.js';

/** The hash tag Redis Cluster hashes: between the first '{' and the next '}', if non-empty. */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  if (open < 0 || close < 0 || close === open + 1) return undefined;
  return key.slice(open + 1, close);
}

describe('RedisKeys', () => {
  const keys = new RedisKeys('rl:');

  it('builds <prefix><kind>:<scope>:{<key>}', () => {
    expect(keys.build('sw', 'alice')).toBe('rl:sw:{alice}');
    expect(keys.build('sw', 'alice', 'Quotes.get')).toBe('rl:sw:Quotes.get:{alice}');
    expect(keys.build('fw', 'a{b}:c%', 'x:y')).toBe('rl:fw:x%3Ay:{a%7Bb%7D%3Ac%25}');
  });

  it('tags every key with exactly the escaped user key, whatever the input', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1 }), fc.option(fc.string({ unit: 'binary', minLength: 1 })), (key, scope) => {
        const built = keys.build('sw', key, scope ?? undefined);
        expect(hashTag(built)).toBe(escapeKeyPart(key));
      }),
    );
  });

  it('reads back the scope it built, whatever the scope; nothing from a key built without one or by another prefix', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1 }), fc.string({ unit: 'binary' }), (key, scope) => {
        expect(keys.scopeOf(keys.build('dqr.fw.1000', key, scope))).toBe(scope);
      }),
    );
    expect(keys.scopeOf(keys.build('dqc', 'q:{1}'))).toBeUndefined();
    expect(keys.scopeOf(new RedisKeys('other:').build('dqc', 'q', 'tenant'))).toBeUndefined();
    expect(new RedisKeys('a:b:').scopeOf(new RedisKeys('a:b:').build('dqch', 'q', 't:1'))).toBe('t:1');
  });

  it('keys of one user share a tag (one cluster slot) across kinds and scopes', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (key, s1, s2) => {
        expect(hashTag(keys.build('sw', key, s1))).toBe(hashTag(keys.build('fn', key, s2)));
      }),
    );
  });

  it('is injective: distinct (kind, scope, key) never build the same key', () => {
    const part = fc.string({ unit: fc.constantFrom('a', ':', '{', '}', '%', '3', 'A', '\uD800', '\uDC00', 'é'), minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(fc.tuple(part, fc.option(part)), fc.tuple(part, fc.option(part)), ([k1, s1], [k2, s2]) => {
        fc.pre(k1 !== k2 || s1 !== s2);
        expect(keys.build('sw', k1, s1 ?? undefined)).not.toBe(keys.build('sw', k2, s2 ?? undefined));
      }),
      { numRuns: 2000 },
    );
  });

  it('escapes lone surrogates, so no two JS strings reach Redis as the same UTF-8 bytes', () => {
    const a = keys.build('sw', 'x\uD800');
    const b = keys.build('sw', 'x\uDBFF');
    expect(a).not.toBe(b);
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(false);
    expect(a).not.toMatch(/[\uD800-\uDFFF]/);
  });

  it('refuses a prefix that would open a hash tag', () => {
    expect(() => new RedisKeys('app{1}:')).toThrow(TypeError);
  });
});
