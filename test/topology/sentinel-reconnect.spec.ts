import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { RateLimiterService, RedisLimitModule } from '../../lib/index.js';
import { ChannelSubscription } from '../../lib/redis/channel-subscription.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { ask } from '../harness/ask.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { TestSentinel } from '../harness/redis-sentinel.js';

/** Until `check` holds; false after `ms`. */
async function eventually(check: () => boolean | Promise<boolean>, ms = 20_000): Promise<boolean> {
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(50))
    if (
      await Promise.resolve()
        .then(check)
        .catch(() => false)
    )
      return true;
  return false;
}

/**
 * ioredis' failover detector (which the module turns on behind Sentinel) ends a client for good
 * when +switch-master arrives while a reconnect attempt is still asking a sentinel where the
 * master is: the detector's disconnect aborts that attempt, and ioredis' reconnect timer swallows
 * the rejection and leaves the client in status 'end'. Under load (slow sentinel answers) this
 * happened by chance in sentinel-failover.spec.ts; here a stopped sentinel holds the attempt open
 * for as long as the failover takes, every time.
 */
describe('Sentinel: a failover announced while a reconnect is asking a sentinel for the master', () => {
  let sentinel: TestSentinel | undefined;
  let moduleRef: TestingModule | undefined;
  let watcher: Redis | undefined;
  let subscription: ChannelSubscription | undefined;
  afterEach(async () => {
    watcher?.disconnect();
    subscription?.close(); // not the module's: its own shutdown leaves it be
    await moduleRef?.close();
    await sentinel?.stop();
  });

  it('reconnects the client and its subscriber connections instead of ending them', async () => {
    sentinel = await TestSentinel.start();
    const channel = `${uniquePrefix('reconnect')}channel`;
    moduleRef = await Test.createTestingModule({
      imports: [RedisLimitModule.forRoot({ redis: sentinel.connection, keyPrefix: uniquePrefix('reconnect'), commandTimeoutMs: 500 })],
    }).compile();
    await moduleRef.init();
    const connection = moduleRef.get(RedisConnection);
    const limiter = moduleRef.get(RateLimiterService);
    const policy = { limit: 1_000_000, windowMs: 600_000 };
    const client = connection.client as Redis;
    // how the library subscribes (refusal-cache invalidations, overrides): again on every reconnect
    let live = 0;
    subscription = new ChannelSubscription(connection, channel, { message: () => undefined, live: () => void live++, lost: () => undefined });
    const subscriber = (subscription as unknown as { subscriber: Redis }).subscriber;
    expect(await eventually(() => live >= 1)).toBe(true);
    const ended: string[] = [];
    client.on('end', () => ended.push('client'));
    subscriber.on('end', () => ended.push('subscriber'));
    expect((await limiter.consume('k', policy)).allowed).toBe(true);

    // each connection resolved the master from the first sentinel and asks it first again
    const [, second] = sentinel.sentinels;
    watcher = new Redis({ ...second!, lazyConnect: true });
    watcher.on('error', () => undefined);
    await watcher.connect();
    const switched = new Promise<void>((resolve) => watcher!.on('message', () => resolve()));
    await watcher.subscribe('+switch-master');
    const fromPort = Number(((await ask(second!, 'SENTINEL', 'get-master-addr-by-name', sentinel.name)) as string[])[1]);

    sentinel.signalSentinel(0, 'SIGSTOP');
    try {
      sentinel.nodes.find((node) => node.port === fromPort)!.signal('SIGKILL');
      // both reconnect and wait on the stopped sentinel's answer
      expect(await eventually(() => client.status === 'connecting' && subscriber.status === 'connecting')).toBe(true);
      // the other two agree on a new master and announce it; the connections' failover detectors
      // (subscribed to every sentinel) hear it too
      await switched;
      await sleep(500);
      expect([client.status, subscriber.status]).toEqual(['connecting', 'connecting']);
    } finally {
      sentinel.signalSentinel(0, 'SIGCONT');
    }

    // the attempts are answered now, and aborted: ioredis ends both connections
    expect(await eventually(() => ended.length === 2, 5_000)).toBe(true);
    expect(ended.sort()).toEqual(['client', 'subscriber']);
    // the module connects them again, to the new master
    const recovered = await eventually(async () => client.status === 'ready' && (await limiter.consume('k', policy)).allowed);
    console.log(`after the aborted reconnects: client ${client.status}, subscriber ${subscriber.status}`);
    expect(recovered).toBe(true);
    expect(await eventually(async () => subscriber.status === 'ready' && (await sentinel!.subscribers(channel)) === 1)).toBe(true);
  }, 90_000);
});
