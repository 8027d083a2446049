import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { RateLimiterService, RedisLimitModule, RedisTimeoutError, RedisUnavailableError, type RedisLimitFactoryOptions } from '../../lib/index.js';
import { RedisConnection } from '../../lib/redis/redis-connection.js';
import { awayFromWindowEnd, DAY_MS } from '../harness/fixed-windows.js';
import { RedisNode } from '../harness/redis-server.js';
import { isLimitKey, TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from '../harness/limiter-app.js';

describe('RedisLimitModule', () => {
  let redis: RedisNode;
  let raw: Redis;
  beforeAll(async () => {
    redis = await RedisNode.start();
    raw = new Redis(redis.url);
  });
  afterAll(async () => {
    raw.disconnect();
    await redis.stop();
  });

  async function boot(imports: unknown[]) {
    const moduleRef = await Test.createTestingModule({ imports: imports as never[] }).compile();
    await moduleRef.init();
    return moduleRef;
  }

  it('forRootAsync builds its options from injected providers', async () => {
    @Injectable()
    class Settings {
      readonly url = redis.url;
    }
    @Module({ providers: [Settings], exports: [Settings] })
    class SettingsModule {}
    const keyPrefix = uniquePrefix('async');
    const moduleRef = await boot([
      RedisLimitModule.forRootAsync({
        imports: [SettingsModule],
        inject: [Settings],
        useFactory: (settings: Settings): RedisLimitFactoryOptions => ({ redis: settings.url, keyPrefix, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS }),
      }),
    ]);
    await moduleRef.get(RateLimiterService).consume('k', { limit: 1, windowMs: 60_000 });
    expect((await raw.keys(`${keyPrefix}*`)).filter(isLimitKey)).toHaveLength(1);
    await moduleRef.close();
  });

  it("isGlobal goes to forRootAsync itself: in the factory's result it fails to compile and to start (issue 13 #10)", async () => {
    const keyPrefix = uniquePrefix('async-global');
    // @ts-expect-error the factory runs after Nest has decided whether the module is global
    const late = RedisLimitModule.forRootAsync({ useFactory: () => ({ redis: redis.url, keyPrefix, isGlobal: false }) });
    await expect(boot([late])).rejects.toThrow(
      new TypeError('RedisLimitModule: isGlobal belongs in forRootAsync({ isGlobal, useFactory }), not in what useFactory returns'),
    );
    expect(late.global).toBe(true);
    expect(RedisLimitModule.forRootAsync({ isGlobal: false, useFactory: () => ({ redis: redis.url, keyPrefix }) }).global).toBe(false);
    expect(RedisLimitModule.forRoot({ redis: redis.url, keyPrefix, isGlobal: false }).global).toBe(false);
  });

  it('writes every key under keyPrefix, in the database the URL names', async () => {
    const keyPrefix = uniquePrefix('db');
    const moduleRef = await boot([RedisLimitModule.forRoot({ redis: `${redis.url}/3`, keyPrefix, commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS })]);
    const limiter = moduleRef.get(RateLimiterService);
    const user = `user-${process.pid}-${Date.now()}`;
    // a fixed window's key expires when its window ends: a day's, not about to end, outlives the test
    await awayFromWindowEnd(DAY_MS);
    await limiter.consume(user, { limit: 1, windowMs: DAY_MS, algorithm: 'fixed-window' });
    await limiter.funnel(user, { capacity: 1, leakingDurationMs: 60_000 });
    const db3 = new Redis(`${redis.url}/3`);
    const written = await db3.keys(`*${user}*`);
    expect(written).toHaveLength(2);
    expect(written.every((k) => k.startsWith(keyPrefix))).toBe(true);
    expect((await db3.keys(`${keyPrefix}*`)).filter(isLimitKey)).toHaveLength(2);
    expect(await raw.keys(`${keyPrefix}*`)).toHaveLength(0);
    db3.disconnect();
    await moduleRef.close();
  });

  it('quits the client it created on shutdown, and never closes a client it was given', async () => {
    const given = new Redis(redis.url);
    const withGiven = await boot([RedisLimitModule.forRoot({ redis: given, keyPrefix: uniquePrefix() })]);
    const created = await boot([RedisLimitModule.forRoot({ redis: redis.url, keyPrefix: uniquePrefix() })]);
    const createdClient = created.get(RedisConnection).client;
    await withGiven.close();
    await created.close();
    expect(given.status).toBe('ready');
    expect(await given.ping()).toBe('PONG');
    expect(createdClient.status).toBe('end');
    given.disconnect();
  });

  it('rejects bad module options when the module starts, naming the option', async () => {
    await expect(boot([RedisLimitModule.forRoot({ redis: redis.url, commandTimeoutMs: 0 })])).rejects.toThrow(/commandTimeoutMs must be a positive integer/);
    await expect(boot([RedisLimitModule.forRoot({ redis: redis.url, keyPrefix: 'a{b}' })])).rejects.toThrow(/keyPrefix/);
    await expect(boot([RedisLimitModule.forRoot({ redis: redis.url, headers: 'x' as never })])).rejects.toThrow(/headers/);
  });

  it('starts within a few seconds when Redis is unreachable, and calls then fail fast', async () => {
    const down = await RedisNode.start({ own: true });
    await down.stop();
    const started = performance.now();
    const moduleRef = await boot([RedisLimitModule.forRoot({ redis: down.url, commandTimeoutMs: 300 })]);
    expect(performance.now() - started).toBeLessThan(5000);
    const call = performance.now();
    await expect(moduleRef.get(RateLimiterService).consume('k', { limit: 1, windowMs: 1000 })).rejects.toThrow(RedisUnavailableError);
    // not held for a reconnect; bounded loosely, as a loaded machine is slow to run any timer
    expect(performance.now() - call).toBeLessThan(5000);
    await moduleRef.close();
  });

  it('bounds a hung Redis by commandTimeoutMs', async () => {
    const hung = await RedisNode.start({ own: true });
    const moduleRef = await boot([RedisLimitModule.forRoot({ redis: hung.url, commandTimeoutMs: 200 })]);
    const pauser = new Redis(hung.url);
    await pauser.call('CLIENT', 'PAUSE', '10000', 'ALL');
    const call = performance.now();
    const error = await moduleRef
      .get(RateLimiterService)
      .consume('k', { limit: 1, windowMs: 1000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisTimeoutError);
    expect((error as RedisTimeoutError).code).toBe('REDIS_TIMEOUT');
    // answered long before the pause would have ended (a loaded machine takes seconds for 200 ms)
    expect(performance.now() - call).toBeLessThan(10_000);
    await pauser.call('CLIENT', 'UNPAUSE');
    pauser.disconnect();
    await moduleRef.close();
    await hung.stop();
  });
});
