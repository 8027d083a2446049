import { RedisLimitEvents, type StackedLimit } from '../../lib/index.js';
import { decideShadowed } from '../../lib/rate-limit/shadow.js';
import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { withLimiterApp } from '../harness/limiter-app.js';

// decideShadowed on real Redis (and a cluster, where the stack's keys fall in different slots):
// what each limit is charged when shadows refuse, enforced limits refuse, or both.
describe('a stack with shadow limits', () => {
  const ctx = withLimiterApp();
  // the enforced limits' fixed windows must not end mid-test
  beforeEach(() => awayFromWindowEnd(DAY_MS));
  let n = 0;
  /** A fresh stack: a shadow allowing `shadowLimit`, an enforced limit allowing `enforcedLimit`. */
  function stack(shadowLimit: number, enforcedLimit: number) {
    n += 1;
    const limits: StackedLimit[] = [
      { key: `shadow-${n}`, scope: 'trial', policy: { limit: shadowLimit, windowMs: 60_000 } },
      { key: `enforced-${n}`, scope: 'live', policy: { limit: enforcedLimit, windowMs: DAY_MS, algorithm: 'fixed-window' } },
    ];
    const flags = [{ shadow: true }, { shadow: false }];
    const left = async () => Promise.all(limits.map(async (limit) => (await ctx.app.limiter.decide([limit], { peek: true })).decisions[0]!.remaining));
    return { decide: () => decideShadowed(ctx.app.limiter, limits, flags), left };
  }
  const calls = () => {
    const { allowed, refused, shadowRefused } = ctx.app.moduleRef.get(RedisLimitEvents).counters().decisions;
    return allowed + refused + shadowRefused;
  };

  it('charges every limit in one call while none refuses', async () => {
    const s = stack(2, 5);
    const before = calls();
    expect(await s.decide()).toMatchObject({ allowed: true, shadowRefused: [] });
    expect(calls() - before).toBe(1);
    expect(await s.left()).toEqual([1, 4]);
  });

  it('when only the shadow refuses: lets the request go, charges the enforced limit alone, in a second call', async () => {
    const s = stack(1, 5);
    await s.decide();
    const before = calls();
    const result = await s.decide();
    expect(result).toMatchObject({ allowed: true, retryAfterMs: 0, shadowRefused: [0] });
    expect(result.decisions.map((d) => d.allowed)).toEqual([false, true]);
    expect(result.decisions[1]!.grantId).toEqual(expect.any(String));
    expect(result.decisions[0]!.grantId).toBeUndefined();
    // two calls, one decision reported: shadow-refused
    expect(calls() - before).toBe(1);
    expect(await s.left()).toEqual([0, 3]);
  });

  it('when an enforced limit refuses: refuses, charging nothing, whatever the shadow says', async () => {
    const s = stack(1, 1);
    await s.decide();
    const before = calls();
    const result = await s.decide();
    expect(result).toMatchObject({ allowed: false, shadowRefused: [] });
    expect(result.retryAfterMs).toBeGreaterThan(0);
    expect(calls() - before).toBe(1);
    expect(await s.left()).toEqual([0, 0]);
  });

  it("a refusal's wait is its enforced limits', not a longer shadow's", async () => {
    n += 1;
    const limits: StackedLimit[] = [
      { key: `shadow-${n}`, scope: 'trial', policy: { limit: 1, windowMs: 600_000 } },
      // a minute, so the second call falls in the window however a busy machine stalls between
      // them; still far below the shadow's 10 minutes
      { key: `enforced-${n}`, scope: 'live', policy: { limit: 1, windowMs: 60_000 } },
    ];
    const flags = [{ shadow: true }, { shadow: false }];
    expect((await decideShadowed(ctx.app.limiter, limits, flags)).allowed).toBe(true);
    const refused = await decideShadowed(ctx.app.limiter, limits, flags);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('when the enforced limit is full by the second call: that refusal stands', async () => {
    const s = stack(1, 2);
    await s.decide(); // shadow 0 left, enforced 1 left
    // another request takes the enforced limit's last permit between the two calls of the next one
    const limiter = ctx.app.limiter;
    const original = limiter.decide.bind(limiter);
    let first = true;
    limiter.decide = async (limits, options) => {
      const result = await original(limits, options);
      if (first) {
        first = false;
        await original([{ key: `enforced-${n}`, scope: 'live', policy: { limit: 2, windowMs: DAY_MS, algorithm: 'fixed-window' } }]);
      }
      return result;
    };
    try {
      const result = await s.decide();
      expect(result).toMatchObject({ allowed: false, shadowRefused: [] });
      expect(result.decisions.map((d) => d.allowed)).toEqual([false, false]);
      expect(await s.left()).toEqual([0, 0]);
    } finally {
      limiter.decide = original;
    }
  });
});
