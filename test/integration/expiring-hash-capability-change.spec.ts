import 'reflect-metadata';
import { Controller, Post } from '@nestjs/common';
import { jest } from '@jest/globals';
import { ExpiringHashService, MaxPending, PendingSlot, RedisLimitError, RedisScriptError } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { controllerApp, statusesOf } from '../harness/controller-app.js';
import { WITHOUT_HSETEX } from '../harness/expiring-hash.js';
import { limiterModule } from '../harness/limiter-app.js';
import { RedisNode, type StartOptions } from '../harness/redis-server.js';
import { ServerSwitch } from '../harness/server-switch.js';
import { until } from '../harness/until.js';

// The server under an application changes while it runs (a failover to an older replica, a rolling
// downgrade): the library must not go on using a command it found on the old one. Each test starts
// its servers behind one address (ServerSwitch) and moves the application from one to the other.
// It needs Redis 8 and the system's Redis 7, so jest.config.js runs it once, in the Redis 8 project
// (REDIS8_ONLY).

const REDIS8: StartOptions = { own: true, flavor: 'redis8' };
const DOWNGRADES: [string, StartOptions][] = [
  ['Redis 7.0, without field expiry', { own: true, flavor: 'redis7' }],
  ['a server without HSETEX (as Redis 7.4)', { own: true, flavor: 'redis8', args: WITHOUT_HSETEX }],
];

// a slot stays held after its request succeeded: the second one turns the compact hash full
@Controller('orders')
class OrdersController {
  @Post()
  @MaxPending(3, { name: 'orders', ttlMs: 60_000, owner: () => 'one-user', failMode: 'closed' })
  create(@PendingSlot() id: string) {
    return { id };
  }
}

describe('ExpiringHash when the server changes under the application', () => {
  const stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
  });

  /** Both servers, and a switch in front of the first. */
  async function servers(from: StartOptions, to: StartOptions) {
    const [first, second] = await Promise.all([RedisNode.start(from), RedisNode.start(to)]);
    stops.push(
      () => first.stop(),
      () => second.stop(),
    );
    const address = await ServerSwitch.start(first);
    stops.push(() => address.stop());
    return { first, second, address };
  }

  /** Moves the application to `server` and waits until its connection reads there. */
  async function switchTo(address: ServerSwitch, server: RedisNode, hash: ExpiringHashService) {
    address.switchTo(server);
    const reads = () =>
      hash.count('reconnected').then(
        () => true,
        (error: unknown) => {
          if (error instanceof RedisLimitError) return false;
          throw error;
        },
      );
    await until(reads, 20_000, () => 'the application did not reconnect through the switch');
  }

  /** Sets three fields on each of `keys` (all at once) and reserves a fourth; what failed, and what
   * is left. */
  async function writeAndRead(hash: ExpiringHashService, keys: string[]) {
    const failures: string[] = [];
    const attempt = async (what: string, write: () => Promise<unknown>) => {
      try {
        await write();
      } catch (error) {
        failures.push(`${what}: ${(error as Error).message}`);
      }
    };
    const writeOne = async (key: string) => {
      // the first is the compact layout, the second turns it full, the third writes into it
      for (const field of ['a', 'b', 'c']) await attempt(`set ${key} ${field}`, () => hash.set(key, field, field, 60_000));
      await attempt(`reserve ${key} d`, () => hash.reserve(key, 'd', 'd', 60_000, 10));
    };
    await Promise.all(keys.map(writeOne));
    const left = await Promise.all(keys.map((key) => hash.getAll(key)));
    return { failures, left: left.map((all) => ({ ...all })) };
  }

  const ALL = { a: 'a', b: 'b', c: 'c', d: 'd' };

  it.each(DOWNGRADES)('from Redis 8 to %s: every write completes, none acknowledged is lost', async (_, to) => {
    const { second, address } = await servers(REDIS8, to);
    const app = await limiterModule(second, { redis: address.url });
    stops.push(() => app.close());
    const hash = app.moduleRef.get(ExpiringHashService);
    expect(await writeAndRead(hash, ['before'])).toEqual({ failures: [], left: [ALL] });
    expect(await hash.mode()).toBe('native');

    await switchTo(address, second, hash);
    const asks = jest.spyOn(app.moduleRef.get(RedisConnection), 'hasCommand');
    const keys = Array.from({ length: 20 }, (_, i) => `k${i + 1}`);
    expect(await writeAndRead(hash, keys)).toEqual({ failures: [], left: keys.map(() => ALL) });
    // the first writes on the new server found it changed, and shared one question to it
    expect(asks.mock.calls).toEqual([['HPEXPIRE']]);
    expect(await hash.update('k1', 'a', 'A')).toBe(true);
    expect(await hash.expire('k1', 'b', 120_000)).toBe(true);
    expect(await hash.getAll('k1')).toEqual({ ...ALL, a: 'A' });
    expect(await hash.ttl('k1', 'b')).toBeGreaterThan(60_000);
    expect(await hash.mode()).toBe(to.flavor === 'redis7' ? 'index' : 'native');
  });

  it("with expiringHash.mode 'native', from Redis 8 to Redis 7.0: each write fails whole, as a Redis failure", async () => {
    const { second, address } = await servers(REDIS8, DOWNGRADES[0]![1]);
    const app = await limiterModule(second, { redis: address.url, expiringHash: { mode: 'native' } });
    stops.push(() => app.close());
    const hash = app.moduleRef.get(ExpiringHashService);
    expect(await writeAndRead(hash, ['before'])).toEqual({ failures: [], left: [ALL] });
    await switchTo(address, second, hash);
    for (const field of ['a', 'b']) await expect(hash.set('k', field, field, 60_000)).rejects.toThrow(RedisScriptError);
    await expect(hash.reserve('k', 'c', 'c', 60_000, 3)).rejects.toThrow(RedisScriptError);
    expect(await second.keys('*')).toEqual([]);
  });

  it.each(DOWNGRADES)('from Redis 8 to %s: a @MaxPending route (failMode closed) answers as before, never 503', async (_, to) => {
    const { second, address } = await servers(REDIS8, to);
    const app = await controllerApp(second, { controllers: [OrdersController], options: { redis: address.url } });
    stops.push(() => app.close());
    const post = () => app.http.post('/orders');
    expect(await statusesOf(post, 4)).toEqual([201, 201, 201, 429]);

    await switchTo(address, second, app.app.get(ExpiringHashService));
    // the new server holds none of the old one's slots
    expect(await statusesOf(post, 4)).toEqual([201, 201, 201, 429]);
  });

  it('from Redis 7 to Redis 8: writes go on in index mode (native mode is taken up on a restart)', async () => {
    const { second, address } = await servers({ own: true, flavor: 'redis7' }, REDIS8);
    const app = await limiterModule(second, { redis: address.url });
    stops.push(() => app.close());
    const hash = app.moduleRef.get(ExpiringHashService);
    expect(await writeAndRead(hash, ['before'])).toEqual({ failures: [], left: [ALL] });

    await switchTo(address, second, hash);
    expect(await writeAndRead(hash, ['k1', 'k2'])).toEqual({ failures: [], left: [ALL, ALL] });
    expect(await hash.mode()).toBe('index');
  });
});
