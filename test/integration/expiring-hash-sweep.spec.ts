import { setTimeout as sleep } from 'node:timers/promises';
import { ExpiringHashService } from '../../lib/index.js';
import { ExpiringHashKeys } from '../../lib/expiring-hash/expiring-hash.keys.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { HashReply } from '../../lib/redis/replies.js';
import { EXPIRY_MODES, eventually } from '../harness/expiring-hash.js';
import { limiterModule, uniquePrefix, type LimiterApp } from '../harness/limiter-app.js';
import { itOnAServer } from '../harness/on-a-server.js';
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

  itOnAServer('removes expired fields nobody reads, from small and indexed hashes, and forgets drained hashes', async () => {
    const [app] = await instances(1);
    const hash = app!.moduleRef.get(ExpiringHashService);
    const raw = app!.raw;
    const key = (name: string) => `${app!.prefix}eh:{${name}}`;
    await Promise.all(
      Array.from({ length: 20 }, (_, u) => Promise.all(Array.from({ length: 10 }, (_, f) => hash.set(`small-${u}`, `f${f}`, 'v'.repeat(40), 150)))),
    );
    await Promise.all(Array.from({ length: 300 }, (_, f) => hash.set('big', `f${f}`, 'v'.repeat(40), f < 200 ? 4000 : 600_000)));
    expect(await raw.exists(`${app!.prefix}ehb:{big}`)).toBe(1);
    // measured while all 300 are in: 4 s of ttl leaves room on a loaded machine (1.5 s did not)
    const before = Number(await raw.call('MEMORY', 'USAGE', key('big'), 'SAMPLES', '0'));
    expect(await raw.hlen(key('big'))).toBe(301);

    await eventually(async () => (await raw.hlen(key('big'))) === 101); // 100 live + the meta field
    await eventually(async () => (await Promise.all(Array.from({ length: 20 }, (_, u) => raw.exists(key(`small-${u}`))))).every((n) => n === 0));
    expect(Number(await raw.call('MEMORY', 'USAGE', key('big'), 'SAMPLES', '0'))).toBeLessThan(before);
    expect(await hash.count('big')).toBe(100);
    // only the big hash is still listed for sweeping. Eventually: this read is not atomic (the
    // bucket keys, then each one's members), and a sweeper's release that moves the big hash to
    // the bucket of its next sweep between the two reads as nothing listed (on a loaded machine,
    // hog run 14: `[]`)
    const listed = async () => {
      const buckets = await redis.keys(`${app!.prefix}ehr:at:*`);
      return [...new Set((await Promise.all(buckets.map((b) => raw.zrange(b, '0', '-1')))).flat())];
    };
    await eventually(async () => JSON.stringify(await listed()) === JSON.stringify(['big']));
    expect(await listed()).toEqual(['big']);
  });

  it('several instances share the sweep and drain everything', async () => {
    const [a, b, c] = await instances(3, 50);
    const writers = [a!, b!, c!].map((app) => app.moduleRef.get(ExpiringHashService));
    await Promise.all(Array.from({ length: 200 }, (_, u) => writers[u % 3]!.set(`user-${u}`, 'slot', 'v', 100 + (u % 50))));
    await eventually(async () => (await redis.keys(`${a!.prefix}eh:*`)).length === 0);
    await eventually(async () => (await redis.keys(`${a!.prefix}ehr:*`)).length === 0);
  });

  /** A registry shard's scripts, as the sweeper and the service call them, on shard 0. */
  function shardZero(app: LimiterApp) {
    const connection = app.moduleRef.get(RedisConnection);
    const hk = new ExpiringHashKeys(connection.keys, connection.options.expiringHash.sweepShards);
    const [index, legacy, stem] = [hk.registry(0), hk.legacyRegistry(0), hk.registryBuckets(0)];
    return {
      index,
      legacy,
      stem,
      add: (member: string, at: number, ahead: '0' | '1' = '0') =>
        connection.scripts.run('registryAdd', [index], ['', member, at, '', ahead, hk.wakeChannel(0), 'PUBLISH', stem]),
      claim: async (limit: number, now: number | '' = '') =>
        (await connection.scripts.run('registryClaim', [index, legacy], [now, limit, 30_000, stem])) as string[],
      release: (lease: string, ...quads: (string | number)[]) =>
        connection.scripts.run('registryRelease', [index, legacy], ['', lease, 10_000, stem, ...quads]),
      /** Every listing in the shard's buckets, as "member@score". */
      listed: async () => {
        const buckets = await redis.keys(`${stem}:*`);
        const pairs = await Promise.all(buckets.map((b) => app.raw.zrange(b, '0', '-1', 'WITHSCORES')));
        return pairs.flatMap((p) => p.flatMap((m, i) => (i % 2 === 0 ? [`${m}@${p[i + 1]}`] : []))).sort();
      },
    };
  }

  it('a claim leases each due hash to one sweeper only', async () => {
    const [app] = await instances(1, 0);
    const shard = shardZero(app!);
    for (let i = 0; i < 50; i++) await shard.add(`k${i}`, 1);
    await shard.add('later', 9_000_000_000_000);
    const claims = await Promise.all([0, 1, 2].map(() => shard.claim(20)));
    const members = claims.flatMap(([, , , ...claimed]) => claimed.filter((_, i) => i % 3 === 0));
    expect(members).toHaveLength(50);
    expect(new Set(members).size).toBe(50);
    // each claim says when the shard next needs a look: what it left due, then the first lease's end
    const firstLeaseEnd = Math.min(...claims.map(([lease]) => Number(lease))) - 2 ** 50;
    expect(claims.map(([, , rest]) => Number(rest))).toEqual([1, 1, firstLeaseEnd]);
    // a lease is released to the next due time, or removes the hash when it has none
    const [lease, , , first, slice, , second] = claims[0]!;
    expect(slice).toBe('0');
    const earliest = await shard.release(lease!, first!, slice!, 5000, 0, second!, slice!, -1, 0);
    expect(earliest).toBe(5000);
    const listed = await shard.listed();
    expect(listed).toContain(`${first}@5000`);
    expect(listed.filter((l) => l.startsWith(`${second}@`))).toEqual([]);
  });

  itOnAServer('keeps a busy time slice in compact buckets, and drops each bucket and its index entry once empty', async () => {
    const [app] = await instances(1, 0);
    const shard = shardZero(app!);
    for (let i = 0; i < 300; i++) await shard.add(`user-${i}`, 1000 + i); // one slice, more than a bucket holds
    await shard.add('other', 50_000);
    const buckets = await redis.keys(`${shard.stem}:*`);
    expect(buckets.length).toBeGreaterThan(2);
    const sizes = await Promise.all(buckets.map((b) => app!.raw.zcard(b)));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(128);
    expect(sizes.reduce((a, b) => a + b)).toBe(301);
    expect(new Set(await Promise.all(buckets.map((b) => app!.raw.object('ENCODING', b))))).toEqual(new Set(['listpack']));
    const index = await app!.raw.zrange(shard.index, '0', '-1', 'WITHSCORES');
    expect(index).toHaveLength(buckets.length * 2);
    expect(index.slice(0, 2)).toEqual(['0', '1000']);
    expect(index.slice(-2)).toEqual(['5', '50000']);
    const [lease, , , ...claimed] = await shard.claim(400, 1150);
    expect(claimed).toHaveLength(151 * 3);
    const quads = Array.from({ length: 151 }, (_, i) => [claimed[i * 3]!, claimed[i * 3 + 1]!, -1, 0]).flat();
    expect(await shard.release(lease!, ...quads)).toBe(1151); // the slice's members not yet due
    const rest = await shard.claim(400, 60_000);
    expect(rest.length).toBe(3 + 150 * 3);
    await shard.release(rest[0]!, ...Array.from({ length: 150 }, (_, i) => [rest[3 + i * 3]!, rest[4 + i * 3]!, -1, 0]).flat());
    expect(await redis.keys(`${app!.prefix}ehr:*`)).toEqual([]);
  });

  it("drains 0.1's registry as one more bucket", async () => {
    const [app] = await instances(1, 0);
    const shard = shardZero(app!);
    await app!.raw.zadd(shard.legacy, 1, 'old', 9_000_000_000_000, 'old-later');
    const [lease, , rest, ...claimed] = await shard.claim(10);
    expect(claimed).toEqual(['old', '', HashReply.NOT_HELD]);
    expect(Number(rest)).toBe(Number(lease) - 2 ** 50);
    await shard.release(lease!, 'old', '', 2000, HashReply.NOT_HELD);
    expect(await shard.listed()).toEqual(['old@2000']);
    expect(await app!.raw.zrange(shard.legacy, '0', '-1')).toEqual(['old-later']);
  });

  it('a registration made during a lease survives its release', async () => {
    const [app] = await instances(1, 0);
    const shard = shardZero(app!);
    await shard.add('k', 1);
    await shard.add('j', 50);
    const [lease, , , ...claimed] = await shard.claim(10);
    expect(claimed.filter((_, i) => i % 3 === 0).sort()).toEqual(['j', 'k']);
    await shard.add('k', 9_000_000_000_000); // a set meanwhile, due far ahead: another slice
    await shard.add('j', 60); // and one in the slice it was claimed from
    await shard.release(lease!, 'k', '0', -1, 0, 'j', '0', -1, 0);
    expect(await shard.listed()).toEqual(['j@60', 'k@9000000000000']);
  });

  it("a claim that finds nothing due says when another sweeper's lease runs out", async () => {
    const [app] = await instances(1, 0);
    const shard = shardZero(app!);
    await shard.add('k', 1);
    const [lease] = await shard.claim(10); // its sweeper dies
    const [, , rest, ...claimed] = await shard.claim(10);
    expect(claimed).toEqual([]);
    expect(Number(rest)).toBe(Number(lease) - 2 ** 50); // not NOTHING_DUE: the hash comes back when the lease runs out
    const [, , , ...again] = await shard.claim(10, Number(lease) - 2 ** 50);
    expect(again).toEqual(['k', '0', HashReply.NOT_HELD]);
  });

  it('a registration ahead of a write keeps the hash listed through a sweep that came first', async () => {
    const [app] = await instances(1, 0);
    const shard = shardZero(app!);
    // listed earlier in the same slice: held, not moved
    await shard.add('k', 1000);
    expect(await shard.add('k', 1050, '1')).toBe(HashReply.NOT_WOKE);
    const [lease, , , member, slice, held] = await shard.claim(10);
    expect([member, slice, held]).toEqual(['k', '0', HashReply.HELD]);
    // the sweep found nothing (the write has not landed): looked at once more, not forgotten
    await shard.release(lease!, 'k', slice!, HashReply.NOTHING_DUE, HashReply.HELD);
    const [recheck] = await shard.listed();
    expect(Number(recheck!.split('@')[1])).toBeGreaterThan(Date.now());
    const [lease2, , , , slice2, held2] = await shard.claim(10, Date.now() + 20_000);
    expect(held2).toBe(HashReply.NOT_HELD);
    await shard.release(lease2!, 'k', slice2!, HashReply.NOTHING_DUE, HashReply.NOT_HELD);
    expect(await shard.listed()).toEqual([]);
    // listed earlier in another slice: the later time is listed too, so the sweep cannot forget it
    await shard.add('j', 1);
    expect(await shard.add('j', 9_000_000_000_000, '1')).toBe(HashReply.NOT_WOKE);
    const [lease3, , , , slice3] = await shard.claim(10);
    await shard.release(lease3!, 'j', slice3!, HashReply.NOTHING_DUE, HashReply.NOT_HELD);
    expect(await shard.listed()).toEqual(['j@9000000000000']);
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
    // the budget is checked per chunk of names, so one call may overshoot by one chunk (~170 names);
    // on a loaded machine the write that indexed the hash also removed the fields of the first 128
    // that had expired by then (none of which the index lists)
    expect(5002 - left).toBeGreaterThan(0);
    expect(5002 - left).toBeLessThanOrEqual(1000 + 400);
    expect(await hash.count('huge')).toBe(1);
    expect(await app.raw.hlen(keys[0]!)).toBe(2);
  });
});
