import { setTimeout as sleep } from 'node:timers/promises';
import { Test } from '@nestjs/testing';
import { Cluster as Cluster5, Redis as Redis5 } from 'ioredis5';
import {
  DelayQueueService,
  ExpiringHashService,
  RateLimiterService,
  RedisLimitModule,
  RedisTimeoutError,
  type DelayedMessage,
  type RedisLimitModuleOptions,
} from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { limiterModule, uniquePrefix, type LimiterApp } from '../harness/limiter-app.js';
import { currentTopology, freePort, TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// An app that already uses ioredis 5 passes its own client (issue 14). `ioredis5` is ioredis 5.9.0,
// the floor of our peer range (sharded subscribers since 5.6, their 'subscribersReady' event since
// 5.9; on 5.3 the wake-up test below fails on a cluster, the early message 5 s late). In this
// repository `ioredis` is version 6, so the library's option types are 6's and a 5 client is
// another class to TypeScript: hence the cast. In an app the peer dependency resolves to the app's
// own ioredis; the compat fixture nest11-cjs type-checks `redis: new Redis(url)` with ioredis 5.
const asOption = (client: Redis5 | Cluster5) => client as unknown as RedisLimitModuleOptions['redis'];

/** A user's ioredis 5 client of the test server or cluster, with ioredis' default options. */
function clientOf(redis: TestRedis): Redis5 | Cluster5 {
  if (redis.topology === 'cluster') return new Cluster5(redis.connection.cluster.nodes);
  const url = redis.connection;
  if (typeof url !== 'string') throw new Error('the harness connects a module to a server with a URL');
  return new Redis5(url);
}

describe('an ioredis 5 client passed as `redis`', () => {
  let redis: TestRedis;
  let client: Redis5 | Cluster5;
  let app: LimiterApp;

  beforeAll(async () => {
    redis = await TestRedis.start();
    client = clientOf(redis);
    app = await limiterModule(redis, { redis: asOption(client), expiringHash: { sweepIntervalMs: 0 } });
  });
  afterAll(async () => {
    await app?.close();
    client?.disconnect();
    await redis?.stop();
  });

  it('is adopted as it is: the module runs on it and tells a cluster from a server', () => {
    const connection = app.moduleRef.get(RedisConnection);
    expect(connection.client).toBe(client);
    expect(connection.cluster).toBe(currentTopology() === 'cluster');
  });

  it('RateLimiterService.consume counts and refuses on it', async () => {
    const policy = { limit: 2, windowMs: 60_000 };
    expect(await app.limiter.consume('k5', policy)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await app.limiter.consume('k5', policy)).toMatchObject({ allowed: true, remaining: 0 });
    const refused = await app.limiter.consume('k5', policy);
    expect(refused).toMatchObject({ allowed: false, remaining: 0 });
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(await app.keys(`${app.prefix}*`)).not.toHaveLength(0);
  });

  it('ExpiringHashService.set/get keep a field until its ttl', async () => {
    const hash = app.moduleRef.get(ExpiringHashService);
    // a ttl a loaded machine cannot outrun between set and get (a 50 ms one did, on the cluster,
    // and 1 s is one stall of the two calls between)
    await hash.set('h5', 'short', 'a', 3_000);
    await hash.set('h5', 'long', 'b', 60_000);
    expect(await hash.get('h5', 'short')).toBe('a');
    await sleep(3_100);
    expect(await hash.get('h5', 'short')).toBeNull();
    expect(await hash.get('h5', 'long')).toBe('b');
  });

  it('DelayQueueService delivers, and an earlier message wakes a sleeping consumer over its duplicate()', async () => {
    const queue = app.moduleRef.get(DelayQueueService);
    const received: { message: DelayedMessage; at: number }[] = [];
    const consumer = queue.consume('q5', (message) => void received.push({ message, at: Date.now() }));
    await queue.enqueue('q5', 'late', { delayMs: 60_000 });
    const first = await queue.enqueue('q5', 'soon', { delayMs: 30 });
    await until(
      () => received.length === 1,
      10_000,
      () => 'the first message never arrived',
    );
    expect(received[0]!.message).toMatchObject({ id: first, payload: 'soon', attempt: 1 });
    await sleep(50); // the consumer now sleeps until the late one
    const sent = Date.now();
    await queue.enqueue('q5', 'early', { delayMs: 100 });
    await until(
      () => received.length === 2,
      10_000,
      () => 'the early message never arrived',
    );
    expect(received[1]!.message.payload).toBe('early');
    // heard on the subscriber (SUBSCRIBE, or SSUBSCRIBE on a cluster), far below the 5 s re-check
    expect(received[1]!.at - sent).toBeLessThan(2000);
    await consumer.stop();
    expect(await queue.size('q5')).toEqual({ scheduled: 1, inFlight: 0, dead: 0 });
  });

  it('the module never closes it', async () => {
    const other = await limiterModule(redis, { redis: asOption(client) });
    await other.close();
    expect(client.status).toBe('ready');
    expect(await app.limiter.consume('after-close', { limit: 1, windowMs: 60_000 })).toMatchObject({ allowed: true });
  });
});

it('commandTimeoutMs bounds a call on an ioredis 5 client that queues while it cannot connect', async () => {
  // ioredis' defaults: the offline queue holds the command while it retries the connection
  const unreachable = new Redis5(await freePort(), '127.0.0.1');
  unreachable.on('error', () => undefined);
  const options = { redis: asOption(unreachable), commandTimeoutMs: 200, keyPrefix: uniquePrefix('v5-down') };
  const moduleRef = await Test.createTestingModule({ imports: [RedisLimitModule.forRoot(options)] }).compile();
  await moduleRef.init(); // waits up to 2 s for the client, then goes on without it
  try {
    const call = performance.now();
    const consumed = moduleRef.get(RateLimiterService).consume('k', { limit: 1, windowMs: 1000 });
    await expect(consumed).rejects.toBeInstanceOf(RedisTimeoutError);
    // the deadline's error, well before ioredis' own retries would give the command up (about 10 s);
    // a loaded machine answered a 200 ms deadline in 1.4 s (hog run 27), so no tighter bound
    expect(performance.now() - call).toBeLessThan(5000);
  } finally {
    await moduleRef.close();
    unreachable.disconnect();
  }
});
