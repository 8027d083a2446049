import { resolveDashboardOptions } from '../../lib/dashboard/dashboard.options.js';
import { pageBase, pageWithBase } from '../../lib/dashboard/dashboard-files.js';
import { DecisionSeries, scopeLabel } from '../../lib/dashboard/decision-series.js';
import { isJson, isSameOrigin } from '../../lib/dashboard/same-origin.js';
import type { RedisConnection } from '../../lib/redis/redis-connection.js';
import type { RedisLimitEvents } from '../../lib/observability/redis-limit-events.js';

// The dashboard's checks that need no server or browser: who may act, its options, its labels.

describe('isSameOrigin (CSRF)', () => {
  const host = { host: 'ops.example:8080' };
  it.each([
    ['Sec-Fetch-Site same-origin', { 'sec-fetch-site': 'same-origin', origin: 'http://proxy.example' }, true],
    ['Sec-Fetch-Site none (typed by the user)', { 'sec-fetch-site': 'none' }, true],
    ['Sec-Fetch-Site same-site (a sibling subdomain)', { 'sec-fetch-site': 'same-site' }, false],
    ['Sec-Fetch-Site cross-site', { 'sec-fetch-site': 'cross-site', origin: 'http://ops.example:8080' }, false],
    ['Origin of this host, no Sec-Fetch-Site', { origin: 'https://ops.example:8080' }, true],
    ['Origin of another port', { origin: 'http://ops.example:8081' }, false],
    ['Origin null (a sandboxed frame)', { origin: 'null' }, false],
    ['no browser header at all (curl)', {}, true],
  ])('%s', (_, headers, expected) => {
    expect(isSameOrigin({ ...host, ...headers })).toBe(expected);
  });

  it('takes JSON bodies only', () => {
    expect(isJson({ 'content-type': 'application/json; charset=utf-8' })).toBe(true);
    expect(isJson({ 'content-type': 'application/jsonx' })).toBe(false);
    expect(isJson({ 'content-type': 'text/plain' })).toBe(false);
    expect(isJson({})).toBe(false);
  });
});

describe('resolveDashboardOptions', () => {
  const canActivate = () => true;
  it('defaults to /redis-limit, read-only, and drops a trailing slash', () => {
    expect(resolveDashboardOptions({ canActivate })).toEqual({ path: '/redis-limit', canActivate, readOnly: true });
    expect(resolveDashboardOptions({ canActivate, path: '/ops/limits/', readOnly: false }).path).toBe('/ops/limits');
  });

  it.each([
    [undefined, /^RedisLimitDashboardModule.register options must be an object/],
    [{}, /^RedisLimitDashboardModule\.register: canActivate must be a function/],
    [{ canActivate: true }, /^RedisLimitDashboardModule\.register: canActivate must be a function/],
    [{ canActivate, path: 'redis-limit' }, /^RedisLimitDashboardModule\.register: path must be a URL path/],
    [{ canActivate, path: '/:id' }, /^RedisLimitDashboardModule\.register: path must be a URL path/],
    [{ canActivate, path: '/a//b' }, /^RedisLimitDashboardModule\.register: path must be a URL path/],
    [{ canActivate, readOnly: 'no' }, /^RedisLimitDashboardModule\.register: readOnly must be a boolean/],
  ])('refuses %p with a TypeError naming the option', (options, message) => {
    expect(() => resolveDashboardOptions(options)).toThrow(TypeError);
    expect(() => resolveDashboardOptions(options)).toThrow(message);
  });
});

describe('the page', () => {
  it('gets its base URL escaped', () => {
    expect(pageWithBase('<base href="./">', '/a"b<c>/')).toBe('<base href="/a&#34;b&#60;c&#62;/">');
  });

  it.each(['$&', '$`', "$'", '$$'])('puts %s in the base URL as it is, never as a replacement pattern', (dollar) => {
    const html = '<head><base href="./"></head><body>tail</body>';
    expect(pageWithBase(html, `/redis-limit;${dollar}x/`)).toBe(
      `<head><base href="/redis-limit;${dollar.replace('&', '&#38;').replace("'", '&#39;')}x/"></head><body>tail</body>`,
    );
  });

  it('bases the page on the path it was asked at, up to ? or ; (Fastify useSemicolonDelimiter)', () => {
    expect(pageBase('/redis-limit')).toBe('/redis-limit/');
    expect(pageBase('/ops/redis-limit/?x=1')).toBe('/ops/redis-limit/');
    expect(pageBase('/redis-limit;$`x/')).toBe('/redis-limit/');
  });
});

describe('DecisionSeries labels', () => {
  it('names a decision by its route, else by its first scope', () => {
    expect(scopeLabel([{ key: 'k', scope: 'login', kind: 'sliding-window', limit: 5, allowed: true, remaining: 4 }])).toBe('scope: login');
    expect(scopeLabel([{ key: 'k', kind: 'sliding-window', limit: 5, allowed: true, remaining: 4 }])).toBe('(direct calls)');
  });

  /** A DecisionSeries whose flushes land in `written`, as [key, field, increment]. */
  function recordingSeries(): { series: DecisionSeries; written: [string, string, number][] } {
    const written: [string, string, number][] = [];
    const pipeline = { hincrby: (key: string, field: string, n: number) => written.push([key, field, n]), pexpire: () => undefined, exec: async () => [] };
    const redis = {
      client: { pipeline: () => pipeline },
      keys: { build: (kind: string, key: string, scope: string) => `${kind}:${scope}:{${key}}` },
    } as unknown as RedisConnection;
    return { series: new DecisionSeries(redis, {} as RedisLimitEvents), written };
  }

  it('counts a @MaxPending refusal as a refusal, in place of the grant or shadow refusal the rate limits counted', async () => {
    const { series, written } = recordingSeries();
    const at = 60_000 * 1000 + 5;
    const decision = (route: string, shadowRefused?: true) =>
      series.record({ type: 'redis-limit.decision', allowed: true, retryAfterMs: 0, limits: [], route, ...(shadowRefused ? { shadowRefused } : {}) }, at);
    const refusal = (route: string, counted?: 'allowed' | 'shadow-refused') =>
      series.record({ type: 'redis-limit.max-pending.refused', route, owner: 'o', max: 1, ...(counted ? { counted } : {}) }, at);
    for (let i = 0; i < 10; i++) decision('Orders.create');
    for (let i = 0; i < 3; i++) refusal('Orders.create', 'allowed');
    decision('Orders.shadowed', true);
    refusal('Orders.shadowed', 'shadow-refused');
    refusal('Carts.add'); // no rate limit decided it
    await series.flush();
    expect(written.map(([, field, n]) => [field, n])).toEqual([
      ['a:Orders.create', 7],
      ['r:Orders.create', 3],
      ['r:Orders.shadowed', 1],
      ['r:Carts.add', 1],
    ]);
  });

  it('counts at most 200 labels a minute; the rest go under (other)', async () => {
    const { series, written } = recordingSeries();
    const at = 60_000 * 1000 + 5;
    for (let i = 0; i < 205; i++) series.record({ type: 'redis-limit.decision', allowed: i % 2 === 0, retryAfterMs: 0, limits: [], route: `R.r${i}` }, at);
    await series.flush();
    expect(new Set(written.map(([key]) => key))).toEqual(new Set(['dashboard-decisions:60000000:{dashboard}']));
    // 200 routes of one decision each, then (other): R.r200..R.r204, 3 allowed and 2 refused
    expect(written).toHaveLength(202);
    expect(written.filter(([, field]) => field.endsWith('(other)')).map(([, field, n]) => [field, n])).toEqual([
      ['a:(other)', 3],
      ['r:(other)', 2],
    ]);
  });
});
