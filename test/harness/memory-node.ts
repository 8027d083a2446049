import type { Redis } from 'ioredis';
import type { RedisLimitModuleOptions } from '../../lib/index.js';
import type { Clock } from '../../lib/redis/clock.js';
import { MemoryClient } from '../../lib/testing/memory-client.js';
import { MemoryServer } from '../../lib/testing/memory-server.js';
import type { RedisFlavor } from './redis-binary.js';

/** The wall clock, as a Redis server's TIME reads it (the suites compare its times with Date.now()). */
export const WALL_CLOCK: Clock = { now: () => Date.now(), onAdvance: () => () => undefined, standsStill: false };

/**
 * The in-memory engine of RedisLimitModule.forTesting() behind RedisNode's face, for the jest
 * `:memory` project: the suites that describe the library's semantics run on it as they run on
 * every server, so the two engines cannot drift. It keeps the wall clock's time, as the suites written
 * against a real server expect (forTesting's own clock
 * stands still until a test moves it; test/integration/for-testing.spec.ts is about that).
 * Every module and raw client of one node shares its keyspace, as processes share a server.
 */
export class MemoryNode {
  readonly topology = 'standalone';
  /** A Redis without hash field expiry, as INFO says (ExpiringHash takes its index mode). */
  readonly flavor: RedisFlavor = 'redis7';
  readonly acl = false;
  readonly external = false;
  readonly host = 'memory';
  readonly port = 0;
  private readonly server = new MemoryServer(WALL_CLOCK);

  static start(): Promise<MemoryNode> {
    return Promise.resolve(new MemoryNode());
  }

  get connection(): NonNullable<RedisLimitModuleOptions['redis']> {
    return new MemoryClient(this.server) as unknown as Redis;
  }

  get url(): string {
    throw new Error('the in-memory engine has no URL: this suite needs a real server');
  }

  get rawConnection(): string {
    return this.url;
  }

  client(): Redis {
    return new MemoryClient(this.server) as unknown as Redis;
  }

  keys(pattern: string): Promise<string[]> {
    return this.client().keys(pattern);
  }

  async onEveryMaster(...command: string[]): Promise<unknown[]> {
    return [await this.client().call(command[0]!, ...command.slice(1))];
  }

  async subscribers(channel: string): Promise<number> {
    const [, count] = (await this.client().pubsub('NUMSUB', channel)) as [string, number];
    return count;
  }

  get pid(): number | undefined {
    return undefined;
  }

  signal(): void {
    throw new Error('the in-memory engine has no process to signal: this suite needs a real server');
  }

  /** Nothing runs to stop: a suite's teardown. (A test that stops its server to make an outage
   * runs on servers only: see ./on-a-server.ts.) */
  stop(): Promise<void> {
    return Promise.resolve();
  }

  resume(): Promise<void> {
    return Promise.resolve();
  }
}
