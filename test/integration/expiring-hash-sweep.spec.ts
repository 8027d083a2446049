import { setTimeout as sleep } from 'node:timers/promises';
import { ExpiringHashService } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { HashReply } from '../../lib/redis/replies.js';
import { EXPIRY_MODES, eventually } from '../harness/expiring-hash.js';
import { limiterModule, uniquePrefix, type LimiterApp } from '../harness/limiter-app.js';
import { TestRedis } from '../harness/redis-server.js';

describe.each(EXPIRY_MODES)('active expiry, %s mode', (mode) => {
  let redis: TestRedis;
  const apps: LimiterApp[] = [];
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });
  afterAll(() => redis.stop());

  /** `instances` app processes' worth of modules sharing one key prefix, each with its sweeper. */
  async function instances(count: number, sweepIntervalMs = 100) {
    const keyPrefix = uniquePrefix('sweep');
    for (let i = 0; i < count; i++) {
      apps.push(await limiterModule(redis, { keyPrefix, expiringHash: { mode, sweepIntervalMs, sweepShards: 4 } }));
    }
    return apps.slice(-count);
  }

  it('removes expired fields nobody reads, from small and indexed hashes, and forgets drained hashes', async () => {
    const [app] = await instances(1);
    const hash = app!.moduleRef.get(ExpiringHashService);
    const raw = app!.raw;
    const key = (name: string) => `${app!.prefix}eh:{${name}}`;
    await Promise.all(
      Array.from({ length: 20 }, (_, u) => Promise.all(Array.from({ length: 10 }, (_, f) => hash.set(`small-${u}`, `f${f}`, 'v'.repeat(40), 150)))),
    );
    await Promise.all(Array.from({ length: 300 }, (_, f) => hash.set('big', `f${f}`, 'v'.repeat(40), f < 200 ? 1500 : 600_000)));
    expect(await raw.exists(`${app!.prefix}ehb:{big}`)).toBe(1);
    // measured while all 300 are in: 1.5 s of ttl leaves room on a loaded machine
    const before = Number(await raw.call('MEMORY', 'USAGE', key('big'), 'SAMPLES', '0'));
    expect(await raw.hlen(key('big'))).toBe(301);

    await eventually(async () => (await raw.hlen(key('big'))) === 101); // 100 live + the meta field
    await eventually(async () => (await Promise.all(Array.from({ length: 20 }, (_, u) => raw.exists(key(`small-${u}`))))).every((n) => n === 0));
    expect(Number(await raw.call('MEMORY', 'USAGE', key('big'), 'SAMPLES', '0'))).toBeLessThan(before);
    expect(await hash.count('big')).toBe(100);
    // only the big hash is still listed for sweeping
    const registry = await Promise.all([0, 1, 2, 3].map((s) => raw.zrange(`${app!.prefix}ehr:{${s}}`, '0', '-1')));
    expect(registry.flat()).toEqual(['big']);
  });

  it('several instances share the sweep and drain everything', async () => {
    const [a, b, c] = await instances(3, 50);
    const writers = [a!, b!, c!].map((app) => app.moduleRef.get(ExpiringHashService));
    await Promise.all(Array.from({ length: 200 }, (_, u) => writers[u % 3]!.set(`user-${u}`, 'slot', 'v', 100 + (u % 50))));
    await eventually(async () => (await redis.keys(`${a!.prefix}eh:*`)).length === 0);
    await eventually(async () => (await redis.keys(`${a!.prefix}ehr:*`)).length === 0);
  });

  it('a claim leases each due hash to one sweeper only', async () => {
    const [app] = await instances(1, 0);
    const connection = app!.moduleRef.get(RedisConnection);
    const registry = `${app!.prefix}ehr:{0}`;
    await app!.raw.zadd(registry, ...Array.from({ length: 50 }, (_, i) => ['1', `k${i}`]).flat(), '9000000000000', 'later');
    const claims = await Promise.all(
      [0, 1, 2].map(() => connection.scripts.run('registryClaim', [registry], ['', 20, 30_000]) as Promise<(string | number)[]>),
    );
    const members = claims.flatMap(([, , , ...claimed]) => claimed.filter((_, i) => i % 2 === 0));
    expect(members).toHaveLength(50);
    expect(new Set(members).size).toBe(50);
    // each claim says when the shard next has work: what it left due, then the later member
    expect(claims.map(([, , rest]) => rest)).toEqual([1, 1, 9_000_000_000_000]);
    // a lease is released to the next due time, or removes the hash when it has none
    const [lease, , , first, , second] = claims[0]!;
    const earliest = await connection.scripts.run('registryRelease', [registry], ['', lease!, 10_000, first!, 5000, 0, second!, -1, 0]);
    expect(earliest).toBe(5000);
    expect(await app!.raw.zscore(registry, first!)).toBe('5000');
    expect(await app!.raw.zscore(registry, second!)).toBeNull();
  });

  it('a registration made during a lease survives its release', async () => {
    const [app] = await instances(1, 0);
    const connection = app!.moduleRef.get(RedisConnection);
    const registry = `${app!.prefix}ehr:{0}`;
    await app!.raw.zadd(registry, 1, 'k');
    const [lease] = (await connection.scripts.run('registryClaim', [registry], ['', 10, 30_000])) as string[];
    await app!.raw.zadd(registry, 'LT', 9_000_000_000_000, 'k'); // a set meanwhile: due far ahead, still below the lease
    await connection.scripts.run('registryRelease', [registry], ['', lease!, 10_000, 'k', -1, 0]);
    expect(await app!.raw.zscore(registry, 'k')).toBe('9000000000000');
  });

  it("a claim that finds nothing due says when another sweeper's lease runs out", async () => {
    const [app] = await instances(1, 0);
    const connection = app!.moduleRef.get(RedisConnection);
    const registry = `${app!.prefix}ehr:{0}`;
    await app!.raw.zadd(registry, 1, 'k');
    const [lease] = (await connection.scripts.run('registryClaim', [registry], ['', 10, 30_000])) as string[]; // its sweeper dies
    const [, , rest, ...claimed] = (await connection.scripts.run('registryClaim', [registry], ['', 10, 30_000])) as number[];
    expect(claimed).toEqual([]);
    expect(rest).toBe(Number(lease) - 2 ** 50); // not NOTHING_DUE: the hash comes back when the lease runs out
  });

  it('a registration ahead of a write keeps the hash listed through a sweep that came first', async () => {
    const [app] = await instances(1, 0);
    const connection = app!.moduleRef.get(RedisConnection);
    const registry = `${app!.prefix}ehr:{0}`;
    const add = (at: number, ahead: '0' | '1') =>
      connection.scripts.run('registryAdd', [registry], ['', 'k', at, '', ahead, `${app!.prefix}ehw:{0}`, 'PUBLISH']);
    await add(1, '0');
    expect(await add(9_000_000_000_000, '1')).toBe(HashReply.NOT_WOKE); // listed earlier already: held, not moved
    const [lease, , , member, held] = (await connection.scripts.run('registryClaim', [registry], ['', 10, 30_000])) as string[];
    expect([member, held]).toEqual(['k', HashReply.HELD]);
    // the sweep found nothing (the write has not landed): looked at once more, not forgotten
    await connection.scripts.run('registryRelease', [registry], ['', lease!, 10_000, 'k', HashReply.NOTHING_DUE, HashReply.HELD]);
    expect(Number(await app!.raw.zscore(registry, 'k'))).toBeGreaterThan(Date.now());
    const [lease2, , , , held2] = (await connection.scripts.run('registryClaim', [registry], [Date.now() + 20_000, 10, 30_000])) as string[];
    expect(held2).toBe(HashReply.NOT_HELD);
    await connection.scripts.run('registryRelease', [registry], ['', lease2!, 10_000, 'k', HashReply.NOTHING_DUE, HashReply.NOT_HELD]);
    expect(await app!.raw.zscore(registry, 'k')).toBeNull();
  });
});

// index mode: in native mode the server reclaims fields on its own, so HLEN says nothing of one call
describe('a sweep call', () => {
  let redis: TestRedis;
  const cleanup: LimiterApp[] = [];
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(async () => {
    await Promise.all(cleanup.map((app) => app.close()));
    await redis.stop();
  });

  it('does bounded work on a hash with thousands of due fields', async () => {
    const app = await limiterModule(redis, { expiringHash: { mode: 'index', sweepIntervalMs: 0 } });
    cleanup.push(app);
    const hash = app.moduleRef.get(ExpiringHashService);
    const connection = app.moduleRef.get(RedisConnection);
    // first, so the key never expires as a whole (it would, with its last field, if loading paused 100 ms)
    await hash.set('huge', 'keeper', 'v');
    for (let i = 0; i < 5000; i += 500) {
      await Promise.all(Array.from({ length: 500 }, (_, j) => hash.set('huge', `field-${i + j}`, 'v', 100)));
    }
    await sleep(150);
    const keys = ['eh', 'ehb', 'ehn'].map((kind) => `${app.prefix}${kind}:{huge}`);
    const [, more] = (await connection.scripts.run('hashSweep', keys, ['', 1000, 3000])) as number[];
    expect(more).toBe(HashReply.BUDGET_SPENT);
    const left = await app.raw.hlen(keys[0]!);
    // the budget is checked per chunk of names, so one call may overshoot by one chunk
    expect(5002 - left).toBeGreaterThan(0);
    expect(5002 - left).toBeLessThanOrEqual(1000 + 400);
    expect(await hash.count('huge')).toBe(1);
    expect(await app.raw.hlen(keys[0]!)).toBe(2);
  });
});
