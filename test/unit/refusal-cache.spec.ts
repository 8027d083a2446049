import { RefusalCache, type CachedLimit } from '../../lib/rate-limit/refusal-cache.js';
import type { RateLimitDecision } from '../../lib/rate-limit/policy.js';

describe('RefusalCache', () => {
  let now = 1000;
  const clock = () => now;
  const limit = (counter: string, permits = 1, policy = 'sw/10/1000'): CachedLimit => ({ counter, policy, permits });
  const refused = (retryAfterMs: number, resetMs = 1000): RateLimitDecision => ({ allowed: false, limit: 10, remaining: 0, retryAfterMs, resetMs });

  beforeEach(() => {
    now = 1000;
  });

  it('refuses the same stack until the wait Redis gave, counted from when it was sent', () => {
    const cache = new RefusalCache(10, clock);
    cache.remember([limit('a')], 300, [refused(300)], 900);
    now = 1000;
    // Redis' clock is floored to the ms: the wait is taken as 1 ms shorter
    expect(cache.lookup([limit('a')])).toEqual({ retryAfterMs: 199, decisions: [refused(199, 899)] });
    now = 1198;
    expect(cache.lookup([limit('a')])?.retryAfterMs).toBe(1);
    now = 1199;
    expect(cache.lookup([limit('a')])).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('covers the same or a higher cost only, and the same policy only', () => {
    const cache = new RefusalCache(10, clock);
    cache.remember([limit('a', 3)], 500, [refused(500)], now);
    expect(cache.lookup([limit('a', 2)])).toBeUndefined();
    expect(cache.lookup([limit('a', 3)])).toBeDefined();
    expect(cache.lookup([limit('a', 9)])).toBeDefined();
    // a tier that resolved to a higher limit is decided by Redis
    expect(cache.lookup([limit('a', 3, 'sw/20/1000')])).toBeUndefined();
    // and so is another stack over the same counter
    expect(cache.lookup([limit('a', 3), limit('b', 1)])).toBeUndefined();
  });

  it('does not remember a refusal sent before an invalidation of its counters (issue 26 #5)', () => {
    const cache = new RefusalCache(3, clock);
    const sentAt = cache.mark;
    cache.invalidate('b'); // another counter: no bearing
    cache.remember([limit('a')], 500, [refused(500)], now, sentAt);
    expect(cache.lookup([limit('a')])).toBeDefined();
    const inFlight = cache.mark;
    cache.invalidate('a'); // heard while the refusal was on its way back
    cache.remember([limit('a'), limit('c')], 500, [refused(500), refused(500)], now, inFlight);
    expect(cache.lookup([limit('a'), limit('c')])).toBeUndefined();
    // sent after the invalidation: remembered
    cache.remember([limit('a'), limit('c')], 500, [refused(500), refused(500)], now, cache.mark);
    expect(cache.lookup([limit('a'), limit('c')])).toBeDefined();
    // more invalidations than it keeps by counter: a request older than them all is not remembered
    const old = cache.mark;
    for (const counter of ['w', 'x', 'y', 'z']) cache.invalidate(counter);
    cache.remember([limit('d')], 500, [refused(500)], now, old);
    expect(cache.lookup([limit('d')])).toBeUndefined();
    // nor one sent before a clear
    const beforeClear = cache.mark;
    cache.clear();
    cache.remember([limit('d')], 500, [refused(500)], now, beforeClear);
    expect(cache.lookup([limit('d')])).toBeUndefined();
  });

  it('forgets every stack that holds an invalidated counter', () => {
    const cache = new RefusalCache(10, clock);
    cache.remember([limit('a'), limit('b')], 500, [refused(500), refused(500)], now);
    cache.remember([limit('b')], 500, [refused(500)], now);
    cache.remember([limit('c')], 500, [refused(500)], now);
    cache.invalidate('b');
    expect(cache.lookup([limit('a'), limit('b')])).toBeUndefined();
    expect(cache.lookup([limit('b')])).toBeUndefined();
    expect(cache.lookup([limit('c')])).toBeDefined();
    expect(cache.size).toBe(1);
  });

  it('keeps at most maxEntries stacks, dropping the least recently used', () => {
    const cache = new RefusalCache(2, clock);
    cache.remember([limit('a')], 500, [refused(500)], now);
    cache.remember([limit('b')], 500, [refused(500)], now);
    expect(cache.lookup([limit('a')])).toBeDefined(); // a is now the most recent
    cache.remember([limit('c')], 500, [refused(500)], now);
    expect(cache.size).toBe(2);
    expect(cache.lookup([limit('b')])).toBeUndefined();
    expect(cache.lookup([limit('a')])).toBeDefined();
    expect(cache.lookup([limit('c')])).toBeDefined();
    // an evicted stack leaves the counter index too: invalidating it touches nothing else
    cache.invalidate('b');
    expect(cache.size).toBe(2);
  });

  it('tells apart stacks whose keys only line up when joined', () => {
    const cache = new RefusalCache(10, clock);
    cache.remember([limit('x|1:y')], 500, [refused(500)], now);
    expect(cache.lookup([limit('x'), limit('y')])).toBeUndefined();
    expect(cache.lookup([limit('x|1:y')])).toBeDefined();
  });

  it('remembers nothing with size 0 or without a wait', () => {
    const off = new RefusalCache(0, clock);
    off.remember([limit('a')], 500, [refused(500)], now);
    expect(off.size).toBe(0);
    const cache = new RefusalCache(10, clock);
    cache.remember([limit('a')], 1, [refused(1)], now);
    expect(cache.size).toBe(0);
  });
});
