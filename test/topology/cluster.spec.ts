import 'reflect-metadata';
import { Controller, Get, type ExecutionContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Cluster } from 'ioredis';
import fc from 'fast-check';
import {
  aclRules,
  DelayQueueService,
  ExpiringHashService,
  RateLimit,
  RateLimiterService,
  RedisLimitModule,
  type RedisLimitModuleOptions,
} from '../../lib/index.js';
import { escapeKeyPart } from '../../lib/redis/keys.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { loadScripts } from '../../lib/redis/scripts.js';
import { clusterSlot } from '../../lib/redis/slot.js';
import { controllerApp } from '../harness/controller-app.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from '../harness/limiter-app.js';
import { TestCluster } from '../harness/redis-cluster.js';
import type { RedisNode } from '../harness/redis-server.js';

describe('on a 3-master Redis Cluster', () => {
  let cluster: TestCluster;
  const closers: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    cluster = await TestCluster.start({ flavor: 'redis7' });
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  afterAll(() => cluster?.stop());

  async function boot(options: RedisLimitModuleOptions = {}) {
    const moduleRef = await Test.createTestingModule({
      imports: [
        RedisLimitModule.forRoot({ redis: cluster.connection, keyPrefix: uniquePrefix('cluster'), commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, ...options }),
      ],
    }).compile();
    await moduleRef.init();
    closers.push(() => moduleRef.close());
    return moduleRef;
  }

  const slotOf = async (key: string) => Number(await cluster.ask(cluster.nodes[0]!, 'CLUSTER', 'KEYSLOT', key));
  const dbsize = async (node: RedisNode) => Number(await cluster.ask(node, 'DBSIZE'));

  it('10,000 user keys spread over all three masters', async () => {
    const masters = await cluster.masters();
    const before = await Promise.all(masters.map(dbsize));
    const limiter = (await boot()).get(RateLimiterService);
    // a sliding window's key lives windowMs after its grant; a fixed window's would expire at the
    // next aligned boundary, which a run straddling a minute crosses (a CI run lost 166 keys so)
    const policy = { limit: 5, windowMs: 600_000, algorithm: 'sliding-window' as const };
    for (let i = 0; i < 10_000; i += 500) {
      await Promise.all(Array.from({ length: 500 }, (_, j) => limiter.consume(`user-${i + j}`, policy)));
    }
    const perMaster = (await Promise.all(masters.map(dbsize))).map((n, i) => n - before[i]!);
    console.log(`10,000 user keys per master (DBSIZE): ${perMaster.join(' / ')}`);
    // and the grant ids' secret, one key per prefix
    expect(perMaster.reduce((a, b) => a + b, 0)).toBe(10_000 + 1);
    // a third each, give or take: hash slots are CRC16 of the user key, evenly split by redis-cli
    for (const count of perMaster) expect(count).toBeGreaterThan(2500);
  });

  it('spreads the global state: sweep registry shards land on every master', async () => {
    const moduleRef = await boot();
    const { keys } = moduleRef.get(RedisConnection);
    const masters = await cluster.masters();
    const registry = Array.from({ length: 16 }, (_, n) => keys.build('ehr', String(n), 'due'));
    const perMaster = async (names: string[]) => {
      const owners = await Promise.all(names.map(async (name) => (await cluster.masterOf(name)).port));
      return masters.map((m) => owners.filter((port) => port === m.port).length);
    };
    const registrySpread = await perMaster(registry);
    console.log(`16 sweep registry shards per master: ${registrySpread.join(' / ')}`);
    expect(registrySpread.every((n) => n > 0)).toBe(true);

    // and the sweep works across them: short-lived fields of many users leave without a read
    const hash = moduleRef.get(ExpiringHashService);
    await Promise.all(Array.from({ length: 300 }, (_, u) => hash.set(`u${u}`, 'a', 'v', 100)));
    await Promise.all(Array.from({ length: 300 }, (_, u) => hash.set(`u${u}`, 'b', 'v', 60_000)));
    const deadline = Date.now() + 20_000;
    let left = Infinity;
    while (left > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      const client = moduleRef.get(RedisConnection).client;
      // a hash whose 'a' expired before 'b' came holds 'b' alone: one string key (compact)
      const lens = await Promise.all(
        Array.from({ length: 300 }, async (_, u) => ((await client.type(keys.build('eh', `u${u}`))) === 'hash' ? client.hlen(keys.build('eh', `u${u}`)) : 0)),
      );
      left = lens.filter((n) => n > 2).length; // 'a' swept: the live field 'b' and the meta field remain
    }
    expect(left).toBe(0);
  });

  it('a hostile key maps to its own slot: braces cannot pick another', async () => {
    const moduleRef = await boot();
    const limiter = moduleRef.get(RateLimiterService);
    const hash = moduleRef.get(ExpiringHashService);
    const { keys } = moduleRef.get(RedisConnection);
    const victimSlot = await slotOf(keys.build('fw', 'victim'));
    const hostile = ['{victim}', 'x}{victim', '}{victim}{', 'victim}', '{victim', '{}victim', '%7Bvictim%7D', 'a:{victim}:b'];
    for (const key of hostile) {
      // three features for one user key: each script call would fail with CROSSSLOT if any two
      // of its keys were in different slots (hour-long windows: the keys must outlive the scan)
      await limiter.decide([
        { key, scope: 'x', policy: { limit: 5, windowMs: 3_600_000 } },
        { key, scope: '{victim}', funnel: { capacity: 5, leakingDurationMs: 3_600_000 } },
      ]);
      await hash.set(key, 'f', 'v', 60_000);
      const written = await cluster.keys(`*{${escapeKeyPart(key)}}`);
      expect(written.length).toBeGreaterThanOrEqual(3);
      const slots = new Set(await Promise.all(written.map(slotOf)));
      // every key of this user is in the slot its escaped key names, which is not the victim's
      expect([...slots]).toEqual([await slotOf(`{${escapeKeyPart(key)}}`)]);
      expect(slots.has(victimSlot)).toBe(false);
    }
    // '%7Bvictim%7D' is a user key of its own, not the escaped form of '{victim}'
    expect(await cluster.keys(`*{%257Bvictim%257D}`)).not.toEqual([]);
  });

  it("computes a key's slot as the cluster does (decisions are batched per slot)", async () => {
    const samples = fc.sample(fc.oneof(fc.string(), fc.string({ unit: 'grapheme' }), fc.constantFrom('{}', '{a}b', 'x{}{y}', '{{z}}')), 300);
    for (const key of samples) {
      const raw = `rl:fw:${key}`;
      expect([raw, clusterSlot(raw)]).toEqual([raw, await slotOf(raw)]);
    }
  });

  it("serves the README's quotes example: a class limit per IP, handler limits per API key, never over-granted", async () => {
    const byApiKey = (ctx: ExecutionContext) => String(ctx.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers['x-api-key']);
    @Controller('quotes')
    @RateLimit({ limit: 6, windowMs: 3_600_000, name: 'hourly' }) // per client IP
    class QuotesController {
      @Get(':symbol/history')
      @RateLimit({ limit: 3, windowMs: 60_000, key: byApiKey })
      @RateLimit({ limit: 4, windowMs: 60_000, algorithm: 'token-bucket', key: byApiKey })
      history() {
        return { ok: true };
      }
    }
    const app = await controllerApp(cluster, { controllers: [QuotesController] });
    closers.push(() => app.close());
    const history = (apiKey: string) => app.http.get('/quotes/ACME/history').set('x-api-key', apiKey);

    // 40 requests at once over 4 API keys (each in its own slot, none in the IP's)
    const apiKeys = ['alpha', 'bravo', 'charlie', 'delta'];
    const statuses = await Promise.all(
      Array.from({ length: 40 }, (_, i) => history(apiKeys[i % 4]!).then((r) => ({ apiKey: apiKeys[i % 4]!, status: r.status }))),
    );
    expect(statuses.filter((r) => r.status !== 200 && r.status !== 429)).toEqual([]);
    const granted = statuses.filter((r) => r.status === 200);
    expect(granted.length).toBeGreaterThan(0);
    expect(granted.length).toBeLessThanOrEqual(6);
    for (const apiKey of apiKeys) expect(granted.filter((r) => r.apiKey === apiKey).length).toBeLessThanOrEqual(3);

    // every refused request's charges came back: the IP has exactly 6 - granted left
    const fresh = Array.from({ length: 7 }, (_, i) => `fresh-${i}`);
    const after: number[] = [];
    for (const apiKey of fresh) after.push((await history(apiKey)).status);
    expect(after).toEqual([...Array<number>(6 - granted.length).fill(200), ...Array<number>(1 + granted.length).fill(429)]);
  });

  it('loads every script on every master at start-up', async () => {
    await cluster.onEveryMaster('SCRIPT', 'FLUSH');
    await boot();
    const shas = loadScripts().map((s) => s.sha1);
    const loaded = await cluster.onEveryMaster('SCRIPT', 'EXISTS', ...shas);
    expect(loaded).toEqual((await cluster.masters()).map(() => shas.map(() => 1)));
  });

  it('recovers a NOSCRIPT when a slot moves to a master that lacks the scripts (resharding)', async () => {
    const limiter = (await boot()).get(RateLimiterService);
    const policy = { limit: 10, windowMs: 600_000 };
    const key = 'moving';
    for (let i = 0; i < 4; i++) await limiter.consume(key, policy);
    const infos = await cluster.describe();
    const slot = await slotOf(`{${key}}`);
    const from = infos.find((i) => i.role === 'master' && i.slots.some(([a, b]) => slot >= a && slot <= b))!;
    const to = infos.find((i) => i.role === 'master' && i.id !== from.id)!;
    await cluster.ask(cluster.node(to.port), 'SCRIPT', 'FLUSH');
    await cluster.ask(cluster.node(to.port), 'CONFIG', 'RESETSTAT');
    await moveSlot(cluster, slot, from, to);
    expect((await cluster.masterOf(`{${key}}`)).port).toBe(to.port);

    // the counter came along, and the script runs on its new master
    const decisions = [];
    for (let i = 0; i < 7; i++) decisions.push(await limiter.consume(key, policy));
    expect(decisions.map((d) => d.remaining)).toEqual([5, 4, 3, 2, 1, 0, 0]);
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, true, false]);
    // the new master answered the first EVALSHA with NOSCRIPT (Redis 7.0 counts that nowhere),
    // was sent the source once with EVAL, then ran the other six by sha
    const stats = String(await cluster.ask(cluster.node(to.port), 'INFO', 'commandstats'));
    expect(stats).toMatch(/cmdstat_eval:calls=1,/);
    expect(stats).toMatch(/cmdstat_evalsha:calls=6,/);
  });

  it("keeps DelayQueue wake-ups on the queue's shard (SSUBSCRIBE / SPUBLISH, not a cluster-wide PUBLISH)", async () => {
    const moduleRef = await boot();
    const queues = moduleRef.get(DelayQueueService);
    const channel = moduleRef.get(RedisConnection).keys.build('dqw', 'sharded');
    const owner = await cluster.masterOf(channel);
    const got: string[] = [];
    const consumer = queues.consume('sharded', async (message) => {
      got.push(message.id);
    });
    const count = async (node: RedisNode, kind: string) => ((await cluster.ask(node, 'PUBSUB', kind, channel)) as [string, number])[1];
    for (const deadline = Date.now() + 10_000; (await count(owner, 'SHARDNUMSUB')) === 0 && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(await count(owner, 'SHARDNUMSUB')).toBe(1);
    expect(await Promise.all(cluster.nodes.map((n) => count(n, 'NUMSUB')))).toEqual(cluster.nodes.map(() => 0));

    await Promise.all(cluster.nodes.map((n) => cluster.ask(n, 'CONFIG', 'RESETSTAT')));
    await queues.enqueue('sharded', 'x', { id: 'woken', delayMs: 100 });
    for (const deadline = Date.now() + 10_000; got.length === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 25));
    await consumer.stop();
    expect(got).toEqual(['woken']);
    const stats = await Promise.all(cluster.nodes.map(async (n) => String(await cluster.ask(n, 'INFO', 'commandstats'))));
    // the wake-up, and maybe the probe a new subscription gets (see WakeUps): on the owner alone
    expect(stats.filter((s) => s.includes('cmdstat_spublish:'))).toHaveLength(1);
    expect(stats[cluster.nodes.indexOf(owner)]).toMatch(/cmdstat_spublish:calls=\d+,/);
    expect(stats.filter((s) => s.includes('cmdstat_publish:'))).toEqual([]);
  });

  it('takes a Cluster client the app owns, and leaves it open at shutdown', async () => {
    const client = cluster.client();
    const moduleRef = await Test.createTestingModule({
      imports: [RedisLimitModule.forRoot({ redis: client, keyPrefix: uniquePrefix('owned') })],
    }).compile();
    await moduleRef.init();
    const queues = moduleRef.get(DelayQueueService);
    const got: unknown[] = [];
    const consumer = queues.consume('jobs', async (message) => {
      got.push(message.payload);
    });
    await queues.enqueue('jobs', { n: 1 }, { delayMs: 50 });
    const deadline = Date.now() + 10_000;
    while (got.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    await consumer.stop();
    await moduleRef.close();
    expect(got).toEqual([{ n: 1 }]);
    expect(client.status).toBe('ready');
    expect(await client.ping()).toBe('PONG');
    client.disconnect();
  });

  it('runs as a least-privilege ACL user (aclRules), including the cluster commands', async () => {
    const rules = aclRules({ keyPrefix: 'acl:' });
    await Promise.all(cluster.nodes.map((n) => cluster.ask(n, 'ACL', 'SETUSER', 'limiter', 'on', '>secret', ...rules)));
    await Promise.all(cluster.nodes.map((n) => cluster.ask(n, 'ACL', 'LOG', 'RESET')));
    const { nodes } = cluster.connection.cluster;
    const moduleRef = await boot({
      redis: { cluster: { nodes, options: { redisOptions: { username: 'limiter', password: 'secret' } } } },
      keyPrefix: 'acl:',
    });
    const limiter = moduleRef.get(RateLimiterService);
    const queues = moduleRef.get(DelayQueueService);
    const got: string[] = [];
    const consumer = queues.consume('acl-jobs', async (message) => {
      got.push(message.id);
    });
    for (let u = 0; u < 30; u++) expect((await limiter.consume(`user-${u}`, { limit: 1, windowMs: 60_000 })).allowed).toBe(true);
    await moduleRef.get(ExpiringHashService).set('h', 'f', 'v', 60_000);
    await queues.enqueue('acl-jobs', 'x', { id: 'j', delayMs: 50 });
    for (const deadline = Date.now() + 10_000; got.length === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 25));
    await consumer.stop();
    expect(got).toEqual(['j']);
    // ioredis' CLIENT SETINFO label (Redis >= 7.2) is the only refusal it may meet
    const logs = (await cluster.onEveryMaster('ACL', 'LOG')) as unknown[][][];
    const refused = logs.flat().map((entry) => entry[entry.indexOf('object') + 1]);
    expect(refused.filter((command) => command !== 'client|setinfo')).toEqual([]);
  });

  it('subscribes again on a new connection when ioredis loses its shard subscriptions in a reconnect', async () => {
    const moduleRef = await boot();
    const queues = moduleRef.get(DelayQueueService);
    const channel = moduleRef.get(RedisConnection).keys.build('dqw', 'deafened');
    const got: string[] = [];
    const consumer = queues.consume('deafened', async (message) => {
      got.push(message.id);
    });
    const subscribed = async (count: number) => {
      for (const deadline = Date.now() + 30_000; (await cluster.subscribers(channel)) !== count && Date.now() < deadline;) {
        await new Promise((r) => setTimeout(r, 50));
      }
      return cluster.subscribers(channel);
    };
    expect(await subscribed(1)).toBe(1);
    // What ioredis 6.0 leaves behind when its subscriber group's reset hangs as a cluster comes
    // back from an outage (a CI run beside a CPU hog): the shards' subscribers stopped, none coming
    // back, the cluster client 'ready' again after its reconnect.
    const subscriber = (queues as unknown as { wakeUps: { subscriber: Cluster } }).wakeUps.subscriber;
    (subscriber as unknown as { shardedSubscribers: { stop(): void } }).shardedSubscribers.stop();
    expect(await subscribed(0)).toBe(0);
    subscriber.emit('ready');
    // its probe goes unheard, then a new connection subscribes
    expect(await subscribed(1)).toBe(1);
    await queues.enqueue('deafened', 'x', { id: 'heard', delayMs: 100 });
    for (const deadline = Date.now() + 10_000; got.length === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 25));
    await consumer.stop();
    expect(got).toEqual(['heard']);
  });

  // last: it stops the whole cluster
  it('a consumer started while the cluster is down begins once it is back, woken by its shard', async () => {
    const moduleRef = await boot({ commandTimeoutMs: 300 });
    const queues = moduleRef.get(DelayQueueService);
    await cluster.stop();
    const got: string[] = [];
    const consumer = queues.consume('late-start', async (message) => {
      got.push(message.id);
    });
    await expect(queues.enqueue('late-start', 'x')).rejects.toMatchObject({ code: expect.stringMatching(/^REDIS_(UNAVAILABLE|TIMEOUT)$/) });
    await cluster.resume();
    const channel = moduleRef.get(RedisConnection).keys.build('dqw', 'late-start');
    for (const deadline = Date.now() + 20_000; (await cluster.subscribers(channel)) === 0 && Date.now() < deadline;) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await cluster.subscribers(channel)).toBe(1);
    await queues.enqueue('late-start', 'x', { id: 'after', delayMs: 100 });
    for (const deadline = Date.now() + 10_000; got.length === 0 && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 25));
    await consumer.stop();
    expect(got).toEqual(['after']);
  });
});

/** Moves one hash slot and its keys between masters, the way redis-cli --cluster reshard does. */
async function moveSlot(cluster: TestCluster, slot: number, from: { id: string; port: number }, to: { id: string; port: number }) {
  const source = cluster.node(from.port);
  const target = cluster.node(to.port);
  await cluster.ask(target, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', from.id);
  await cluster.ask(source, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', to.id);
  for (;;) {
    const keys = (await cluster.ask(source, 'CLUSTER', 'GETKEYSINSLOT', String(slot), '100')) as string[];
    if (keys.length === 0) break;
    await cluster.ask(source, 'MIGRATE', target.host, String(target.port), '', '0', '5000', 'KEYS', ...keys);
  }
  for (const node of await cluster.masters()) {
    await cluster.ask(node, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', to.id);
  }
}
