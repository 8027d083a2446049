import { assertPermits, funnelSpec, rateLimitSpec } from '../../lib/rate-limit/policy.js';
import { resolveOptions } from '../../lib/redis-limit.options.js';

describe('policy checks', () => {
  it('maps algorithms, sliding-window by default', () => {
    expect(rateLimitSpec({ limit: 5, windowMs: 1000 })).toEqual({ kind: 'sw', algorithm: 'sw', limit: 5, windowMs: 1000 });
    expect(rateLimitSpec({ limit: 5, windowMs: 1000, algorithm: 'fixed-window' }).kind).toBe('fw');
    expect(funnelSpec({ capacity: 1, leakingDurationMs: 1_800_000 })).toEqual({
      kind: 'fn',
      algorithm: 'tb',
      limit: 1,
      windowMs: 1_800_000,
    });
  });

  it.each([0, -1, 1.5, Number.NaN, Infinity, 2 ** 60])('limit %p is a RangeError naming the argument', (limit) => {
    expect(() => rateLimitSpec({ limit, windowMs: 1000 }, 'opts')).toThrow(new RangeError(`opts.limit must be a positive integer, got ${limit}`));
  });

  it('non-numbers and non-objects are TypeErrors', () => {
    expect(() => rateLimitSpec({ limit: '5' as never, windowMs: 1000 })).toThrow(TypeError);
    expect(() => rateLimitSpec(null as never)).toThrow(/policy must be an object/);
    expect(() => funnelSpec(undefined as never)).toThrow(/funnel must be an object/);
  });

  it('permits above the limit can never be granted', () => {
    expect(() => assertPermits(6, 5)).toThrow(new RangeError('permits (6) exceeds the limit (5): it could never be granted'));
    expect(() => assertPermits(5, 5)).not.toThrow();
  });

  it('module options have defaults and are checked', () => {
    expect(resolveOptions({})).toMatchObject({ keyPrefix: 'rl:', failMode: 'closed', commandTimeoutMs: 500, headers: 'legacy' });
    expect(() => resolveOptions({ failMode: 'sometimes' as never })).toThrow(/failMode must be 'closed' or 'open'/);
    expect(() => resolveOptions({ commandTimeoutMs: 1.5 })).toThrow(RangeError);
    expect(() => resolveOptions({ tracker: 'ip' as never })).toThrow(/tracker must be a function/);
  });
});
