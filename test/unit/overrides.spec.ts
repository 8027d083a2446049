import { DeclaredNames, overrideRefusal, type DeclaredLimit } from '../../lib/rate-limit/overrides-declared.js';
import { assertOverride, decodeOverride, keyedField, overriddenSpec, parseKeyedField } from '../../lib/rate-limit/overrides-policy.js';

const limit = (at: string, more: Partial<DeclaredLimit> = {}): DeclaredLimit => ({
  at,
  kind: 'sw',
  limit: 10,
  windowMs: 60_000,
  cost: 1,
  keepWindow: false,
  ...more,
});

describe('override policies', () => {
  it('keep only what was given: a missing window stays missing', () => {
    expect(assertOverride('api', { limit: 5 })).toEqual({ override: { limit: 5 }, key: undefined, ttlMs: undefined });
    expect(assertOverride('api', { limit: 5, windowMs: 1000 })).toEqual({ override: { limit: 5, windowMs: 1000 }, key: undefined, ttlMs: undefined });
    expect(assertOverride('api', null)).toEqual({ override: null, key: undefined, ttlMs: undefined });
  });

  it('carry a key and a ttl apart from the override; a null policy removes one key with opts.key', () => {
    expect(assertOverride('api', { limit: 5, key: 'tenant:1', ttlMs: 60_000 })).toEqual({ override: { limit: 5 }, key: 'tenant:1', ttlMs: 60_000 });
    expect(assertOverride('api', null, { key: 'tenant:1' })).toEqual({ override: null, key: 'tenant:1', ttlMs: undefined });
  });

  it('decode what override-set.lua stores, and nothing else', () => {
    expect(decodeOverride('{"limit":5}')).toEqual({ override: { limit: 5 } });
    expect(decodeOverride('{"limit":5,"windowMs":10}')).toEqual({ override: { limit: 5, windowMs: 10 } });
    expect(decodeOverride('{"limit":5,"expiresAt":1764000000000}')).toEqual({ override: { limit: 5 }, expiresAt: 1764000000000 });
    for (const text of ['5', 'null', '[]', '{"limit":0}', '{"limit":5,"extra":1}', '{', '{"windowMs":5}', '{"limit":5,"expiresAt":"soon"}']) {
      expect(decodeOverride(text)).toBeUndefined();
    }
  });

  it('name a per-key field by both parts, so no name and key share one', () => {
    expect(parseKeyedField(keyedField('a:b', 'c'))).toEqual({ name: 'a:b', key: 'c' });
    expect(keyedField('a:b', 'c')).not.toBe(keyedField('a', 'b:c'));
    for (const field of ['login', '["a"]', '["a",""]', '[1,"b"]', '{']) expect(parseKeyedField(field)).toBeUndefined();
  });

  it('change the limit and window of a spec, never its algorithm; a kept window stays', () => {
    const spec = { kind: 'tb', algorithm: 'tb', limit: 10, windowMs: 1000 } as const;
    expect(overriddenSpec(spec, { limit: 3 }, false)).toEqual({ ...spec, limit: 3 });
    expect(overriddenSpec(spec, { limit: 3, windowMs: 50 }, false)).toEqual({ ...spec, limit: 3, windowMs: 50 });
    expect(overriddenSpec(spec, { limit: 3, windowMs: 50 }, true)).toEqual({ ...spec, limit: 3 });
  });
});

describe('declared names', () => {
  it('report the shortest declared window, 0 when none is a number', () => {
    const names = new DeclaredNames();
    names.add('api', limit('A.a', { windowMs: 60_000 }));
    names.add('api', limit('B.b', { windowMs: 1_000 }));
    names.add('tier', limit('C.c', { windowMs: undefined }));
    expect(names.windowOf('api')).toBe(1_000);
    expect(names.windowOf('tier')).toBe(0);
    expect(names.windowOf('unknown')).toBe(0);
  });

  it('refuse an override some limit of the name could not take', () => {
    const names = new DeclaredNames();
    names.add('costly', limit('A.a', { cost: 4 }));
    names.add('pair', limit('B.b', { keepWindow: true }));
    names.add('bucket', limit('C.c', { kind: 'tb', windowMs: 2 ** 40 }));
    expect(() => names.assertApplies('costly', { limit: 4 })).not.toThrow();
    expect(() => names.assertApplies('costly', { limit: 3 })).toThrow(new RangeError('policy.limit (3) is below the cost 4 of A.a: it could never be granted'));
    expect(() => names.assertApplies('pair', { limit: 3 })).not.toThrow();
    expect(() => names.assertApplies('pair', { limit: 3, windowMs: 5 })).toThrow(RangeError);
    expect(() => names.assertApplies('bucket', { limit: 2 ** 12 })).not.toThrow();
    expect(() => names.assertApplies('bucket', { limit: 2 ** 13 })).toThrow(/above 2\^53/);
    expect(() => names.assertApplies('bucket', { limit: 2 ** 14, windowMs: 1000 })).not.toThrow();
    // another process may declare it (an admin app setting overrides for the web instances)
    expect(() => names.assertApplies('missing', { limit: 1 })).not.toThrow();
    expect(names.has('missing')).toBe(false);
  });

  it('give the reason a read from Redis is ignored with, as setOverride would have thrown it', () => {
    const names = new DeclaredNames();
    names.add('costly', limit('A.a', { cost: 4 }));
    names.add('costly', limit('B.b', { cost: 1 }));
    expect(names.refusal('costly', { limit: 4 })).toBeUndefined();
    expect(names.refusal('costly', { limit: 3 })).toEqual(new RangeError('policy.limit (3) is below the cost 4 of A.a: it could never be granted'));
    expect(names.refusal('missing', { limit: 1 })).toBeUndefined();
  });
});

describe('one rule for every override, wherever it is judged', () => {
  it('judges what a request resolved as it judges what is declared', () => {
    const tier = { at: 'T.t', kind: 'tb', windowMs: 60_000, cost: undefined, keepWindow: false } as const;
    expect(overrideRefusal('tier', tier, { limit: 2 ** 40 })).toBeInstanceOf(RangeError);
    expect(overrideRefusal('tier', tier, { limit: 2 ** 40, windowMs: 1 })).toBeUndefined();
    expect(overrideRefusal('tier', { ...tier, windowMs: undefined }, { limit: 2 ** 40 })).toBeUndefined();
    expect(overrideRefusal('fn', { ...tier, kind: 'sw', cost: 3 }, { limit: 2 })?.message).toMatch(/^policy\.limit \(2\) is below the cost 3 of T\.t/);
    // no product to keep exact for a window
    expect(overrideRefusal('wide', { ...tier, kind: 'sw' }, { limit: 2 ** 40, windowMs: Number.MAX_SAFE_INTEGER })).toBeUndefined();
  });
});
