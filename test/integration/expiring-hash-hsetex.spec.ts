import { jest } from '@jest/globals';
import { ExpiringHashService } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { commandCalls, WITHOUT_HSETEX } from '../harness/expiring-hash.js';
import { limiterModule } from '../harness/limiter-app.js';
import { TestCluster } from '../harness/redis-cluster.js';
import { RedisNode, type TestRedis } from '../harness/redis-server.js';

// Native mode on Redis 8 and Valkey 9: a field and its expiry are written with one HSETEX where
// every master has it and lets the user run it, else with HSET then HPEXPIREAT. INFO commandstats
// counts the commands scripts run, so it shows which path a write took. Each test starts servers of
// its own; jest.config.js runs this file on those servers only (FIELD_EXPIRY_ONLY).

/** Calls of `command` so far, summed over every master. */
async function calls(redis: TestRedis, command: string): Promise<number> {
  const stats = (await redis.onEveryMaster('INFO', 'commandstats')) as string[];
  return stats.reduce((sum, info) => sum + commandCalls(info, command), 0);
}

/** What `work` made Redis run: HSETEX and HPEXPIREAT calls. */
async function writesOf(redis: TestRedis, work: () => Promise<unknown>): Promise<{ hsetex: number; hpexpireat: number }> {
  const before = { hsetex: await calls(redis, 'hsetex'), hpexpireat: await calls(redis, 'hpexpireat') };
  await work();
  return { hsetex: (await calls(redis, 'hsetex')) - before.hsetex, hpexpireat: (await calls(redis, 'hpexpireat')) - before.hpexpireat };
}

/** A set, a capped set that turns the compact hash into the full layout, and an update. */
async function writeTwoFields(hash: ExpiringHashService, key: string) {
  await hash.set(key, 'a', 'alpha', 60_000); // compact: the key's own expiry, no field expiry
  const reserved = await hash.setIfBelow(key, 'b', 'beta', 30_000, 3); // both fields get field expiry
  expect(await hash.update(key, 'b', 'BETA')).toBe(true); // keeps b's expiry
  return { reserved, all: await hash.getAll(key), ttls: [await hash.ttl(key, 'a'), await hash.ttl(key, 'b')] };
}

describe('ExpiringHash native writes and HSETEX', () => {
  const servers: TestRedis[] = [];
  const start = async (start: Promise<TestRedis>) => {
    servers.push(await start);
    return servers[servers.length - 1]!;
  };
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => server.stop()));
  });

  it('writes a field and its expiry with one HSETEX where the server has it, else HSET + HPEXPIREAT, alike', async () => {
    const results = [];
    for (const [args, expected] of [
      [[], { hsetex: 5, hpexpireat: 0 }],
      [WITHOUT_HSETEX, { hsetex: 0, hpexpireat: 5 }],
    ] as const) {
      const redis = await start(RedisNode.start({ own: true, args: [...args] }));
      const app = await limiterModule(redis, { expiringHash: { mode: 'native', sweepIntervalMs: 0 } });
      try {
        let result: Awaited<ReturnType<typeof writeTwoFields>> | undefined;
        // the expand writes a and the meta field (it carries the hash's expiry), the capped set b
        // and the meta again, the update b again
        expect(await writesOf(redis, async () => (result = await writeTwoFields(app.moduleRef.get(ExpiringHashService), 'k')))).toEqual(expected);
        results.push(result!);
      } finally {
        await app.close();
      }
    }
    for (const { reserved, all, ttls } of results) {
      expect(reserved).toEqual({ accepted: true, count: 2 });
      expect(all).toEqual({ a: 'alpha', b: 'BETA' });
      expect(ttls[0]).toBeGreaterThan(50_000);
      expect(ttls[1]).toBeGreaterThan(20_000);
      expect(ttls[1]).toBeLessThanOrEqual(30_000);
    }
  });

  it('asks once per process: concurrent first writes share one probe', async () => {
    const redis = await start(RedisNode.start({ own: true }));
    const app = await limiterModule(redis, { expiringHash: { mode: 'native', sweepIntervalMs: 0 } });
    try {
      const hash = app.moduleRef.get(ExpiringHashService);
      const ask = jest.spyOn(app.moduleRef.get(RedisConnection), 'askEveryMaster');
      await Promise.all(Array.from({ length: 20 }, (_, i) => hash.setIfBelow(`owner-${i}`, 'slot', 'v', 60_000, 3)));
      await hash.update('owner-0', 'slot', 'w');
      expect(ask.mock.calls).toEqual([['hashHsetexProbe', { args: { probeKey: expect.stringContaining('hsetex-probe') } }]]);
    } finally {
      await app.close();
    }
  });

  it('on a cluster, only while every master lets the user run HSETEX; no write fails when one does not', async () => {
    const cluster = await start(TestCluster.start({}));
    const masters = await (cluster as TestCluster).masters();
    const keys = Array.from({ length: 12 }, (_, i) => `owner-${i}`); // spread over the three masters
    const writeAll = async (label: string) => {
      const app = await limiterModule(cluster, { expiringHash: { mode: 'native', sweepIntervalMs: 0 } });
      try {
        for (const key of keys)
          expect((await writeTwoFields(app.moduleRef.get(ExpiringHashService), `${label}:${key}`)).all).toEqual({ a: 'alpha', b: 'BETA' });
      } finally {
        await app.close();
      }
    };
    expect(await writesOf(cluster, () => writeAll('all'))).toEqual({ hsetex: 5 * keys.length, hpexpireat: 0 });
    // one master refuses HSETEX to this user: a script would fail there, after writing part of its work
    await masters[1]!.onEveryMaster('ACL', 'SETUSER', 'default', '-hsetex');
    expect(await writesOf(cluster, () => writeAll('one-refuses'))).toEqual({ hsetex: 0, hpexpireat: 5 * keys.length });
  });
});
