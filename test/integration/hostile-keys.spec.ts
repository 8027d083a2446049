import { isLimitKey, withLimiterApp } from '../harness/limiter-app.js';

const HOSTILE = [
  'a{b}c',
  '}{',
  '{x}',
  'a:b',
  'a%3Ab',
  '%',
  ' spaced key ',
  'line\nbreak\r\n',
  'ünïcödé ✓ 🚦',
  'lone \uD800 surrogate',
  'lone \uDC00 surrogate',
  'x'.repeat(10 * 1024),
  '\u0000nul',
];

describe('hostile keys', () => {
  const ctx = withLimiterApp();

  it('each gets its own counter: none collides with another', async () => {
    const policy = { limit: 1, windowMs: 60_000 };
    for (const key of HOSTILE) expect((await ctx.app.limiter.consume(key, policy)).allowed).toBe(true);
    for (const key of HOSTILE) expect((await ctx.app.limiter.consume(key, policy)).allowed).toBe(false);
    const keys = (await ctx.app.keys(`${ctx.app.prefix}*`)).filter(isLimitKey);
    expect(new Set(keys).size).toBe(HOSTILE.length);
  });

  it('keeps a stacked decision in one hash tag whatever the key holds', async () => {
    for (const key of HOSTILE) {
      const result = await ctx.app.limiter.decide([
        { key, scope: 'a{', policy: { limit: 5, windowMs: 1000 } },
        { key, scope: '}b', funnel: { capacity: 5, leakingDurationMs: 1000 } },
      ]);
      expect(result.allowed).toBe(true);
    }
    const keys = (await ctx.app.keys(`${ctx.app.prefix}*`)).filter(isLimitKey);
    const tags = keys.map((s) => {
      const open = s.indexOf('{');
      return s.slice(open + 1, s.indexOf('}', open + 1));
    });
    // every key has a non-empty tag, and the tag is the user key's part only
    expect(tags.every((t) => t.length > 0 && !t.includes(':'))).toBe(true);
  });

  it('rejects an empty or non-string key with a TypeError naming it', async () => {
    const policy = { limit: 1, windowMs: 1000 };
    await expect(ctx.app.limiter.consume('', policy)).rejects.toThrow(new TypeError('key must be a non-empty string, got ""'));
    await expect(ctx.app.limiter.consume(42 as unknown as string, policy)).rejects.toThrow(TypeError);
  });

  it.each([
    [{ limit: 0, windowMs: 1000 }, RangeError, 'policy.limit must be a positive integer, got 0'],
    [{ limit: 1.5, windowMs: 1000 }, RangeError, 'policy.limit'],
    [{ limit: 1, windowMs: Number.NaN }, RangeError, 'policy.windowMs'],
    [{ limit: 1, windowMs: Infinity }, RangeError, 'policy.windowMs'],
    [{ limit: '5', windowMs: 1000 }, TypeError, 'policy.limit'],
    [{ limit: 5, windowMs: 1000, algorithm: 'leaky' }, TypeError, 'policy.algorithm'],
    [{ limit: 2 ** 40, windowMs: 2 ** 20, algorithm: 'token-bucket' }, RangeError, 'above 2^53'],
  ])('rejects policy %p', async (policy, type, message) => {
    const attempt = ctx.app.limiter.consume('k', policy as never);
    await expect(attempt).rejects.toThrow(type);
    await expect(ctx.app.limiter.consume('k', policy as never)).rejects.toThrow(message);
  });

  it('rejects bad permits and quotas with a RangeError naming them', async () => {
    await expect(ctx.app.limiter.consume('k', { limit: 5, windowMs: 1000 }, 0)).rejects.toThrow('permits must be a positive integer');
    await expect(ctx.app.limiter.funnel('k', { capacity: 2, leakingDurationMs: 1000 }, 3)).rejects.toThrow('quota (3) exceeds the limit (2)');
  });
});
