import type { RateLimitAlgorithm } from '../../lib/index.js';
import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { limiterModule, withLimiterApp, type LimiterApp } from '../harness/limiter-app.js';

// Grant ids handed to callers (and from them, to clients: the token-budget pattern) are
// authenticated: an id edited in any field, or made up from a real id's shape, gives back 0 and
// changes nothing, on every algorithm; a real id gives back what its grant was charged, once, from
// any instance on the same Redis and key prefix.
describe('grant ids are authenticated', () => {
  const ctx = withLimiterApp();
  let keyNo = 0;
  const nextKey = () => `grant-${++keyNo}`;
  const ALGORITHMS: RateLimitAlgorithm[] = ['fixed-window', 'sliding-window', 'sliding-window-counter', 'token-bucket'];
  // On the server clock, a refund gives back only within its grant's fixed window, and a bucket
  // refills: the windows are a day long, and no fixed window ends mid-test.
  beforeEach(() => awayFromWindowEnd(DAY_MS));

  /** The script's grant inside a signed id, and the id with that grant replaced (MAC kept). */
  const inner = (id: string) => id.slice(0, id.lastIndexOf('.'));
  const withGrant = (id: string, grant: string) => `${grant}${id.slice(id.lastIndexOf('.'))}`;

  /** Every edit an attacker could make to a real id: each field raised, the MAC dropped or changed. */
  function forgeries(id: string): string[] {
    const grant = inner(id);
    const fields = grant.split(':');
    const edited = fields.flatMap((field, i) =>
      /^\d+$/.test(field)
        ? [String(Number(field) + 1), String(Number(field) + 100), '9999999'].map((v) => fields.map((f, j) => (j === i ? v : f)).join(':'))
        : [],
    );
    const mac = id.slice(id.lastIndexOf('.') + 1);
    const flipped = `${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`;
    return [
      grant,
      `${grant}.`,
      `${grant}.${flipped}`,
      ...edited.map((g) => withGrant(id, g)),
      ...edited,
      `${fields[0]}:1001:100`,
      `${fields[0]}:1001:100.${mac}`,
    ];
  }

  it.each(ALGORITHMS)('%s: no edited or made-up id gives anything back', async (algorithm) => {
    const { limiter } = ctx.app;
    const key = nextKey();
    const policy = { limit: 100, windowMs: DAY_MS, algorithm };
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push((await limiter.consume(key, policy)).grantId!);
    expect(await limiter.peek(key, policy)).toMatchObject({ allowed: false, remaining: 0 });
    for (const id of ids.slice(0, 3)) {
      for (const forged of forgeries(id)) expect([forged, await limiter.refund(key, policy, forged)]).toEqual([forged, 0]);
    }
    expect(await limiter.peek(key, policy)).toMatchObject({ allowed: false, remaining: 0 });
    // the real ids still give back exactly their one permit each, once (the latest: a bucket gives
    // back no more than it would hold without the grant, which an early grant's refund may exceed)
    expect(await limiter.refund(key, policy, ids[99]!)).toBe(1);
    expect(await limiter.refund(key, policy, ids[99]!)).toBe(0);
    expect(await limiter.peek(key, policy)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it.each(ALGORITHMS)('%s: an id is good only for the key and counter it was issued for', async (algorithm) => {
    const { limiter } = ctx.app;
    const policy = { limit: 5, windowMs: DAY_MS, algorithm };
    const [a, b] = [nextKey(), nextKey()];
    const fromA = (await limiter.consume(a, policy, 5)).grantId!;
    await limiter.consume(b, policy, 5);
    expect(await limiter.refund(b, policy, fromA)).toBe(0);
    // another window is another counter
    expect(await limiter.refund(a, { ...policy, windowMs: DAY_MS / 2 }, fromA)).toBe(0);
    expect(await limiter.refundLimit({ key: a, scope: 'elsewhere', policy }, fromA)).toBe(0);
    expect(await limiter.peek(b, policy)).toMatchObject({ remaining: 0 });
    expect(await limiter.refund(a, policy, fromA)).toBe(5);
  });

  it('another instance on the same Redis and prefix refunds the grant; one on another prefix does not', async () => {
    const { limiter, prefix } = ctx.app;
    let twin: LimiterApp | undefined;
    let stranger: LimiterApp | undefined;
    try {
      twin = await limiterModule(ctx.redis, { keyPrefix: prefix });
      stranger = await limiterModule(ctx.redis);
      const key = nextKey();
      const policy = { limit: 3, windowMs: DAY_MS, algorithm: 'fixed-window' as const };
      const id = (await limiter.consume(key, policy, 3)).grantId!;
      expect(await stranger.limiter.refund(key, policy, id)).toBe(0);
      expect(await twin.limiter.refund(key, policy, id)).toBe(3);
      expect(await limiter.peek(key, policy)).toMatchObject({ remaining: 3 });
    } finally {
      await twin?.close();
      await stranger?.close();
    }
  });

  it('an id is a plain own property of the decision, however it is read', async () => {
    const { limiter } = ctx.app;
    const key = nextKey();
    const policy = { limit: 10, windowMs: DAY_MS, algorithm: 'fixed-window' as const };
    const decision = await limiter.consume(key, policy, 2);
    const { grantId, ...rest } = decision;
    expect(grantId).toMatch(/^[^.]+\.[A-Za-z0-9_-]{22}$/);
    expect(Object.keys(decision)).toContain('grantId');
    expect({ ...decision }).toEqual({ ...rest, grantId });
    expect(JSON.parse(JSON.stringify(decision))).toEqual({ ...rest, grantId });
    expect(decision.grantId).toBe(grantId);
    // a copy's id refunds as the original's; an id set by the caller is kept
    expect(await limiter.refund(key, policy, { ...decision }.grantId!)).toBe(2);
    decision.grantId = 'mine';
    expect(decision.grantId).toBe('mine');
    const unread = await limiter.consume(key, policy, 3);
    expect(JSON.parse(JSON.stringify(unread)).grantId).toMatch(/^[^.]+\.[A-Za-z0-9_-]{22}$/);
    expect(await limiter.refund(key, policy, JSON.parse(JSON.stringify(unread)).grantId)).toBe(3);
    // a refused decision has none
    await limiter.consume(key, policy, 10);
    const refused = await limiter.consume(key, policy, 1);
    expect([refused.allowed, 'grantId' in refused]).toEqual([false, false]);
  });
});
