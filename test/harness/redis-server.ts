import { createServer } from 'node:net';
import { RedisMemoryServer } from 'redis-memory-server';
import { FLAVORS, redisServerBinary, type RedisFlavor } from './redis-binary.js';

export interface StartOptions {
  /** Extra redis-server arguments, e.g. ['--appendonly', 'yes']. */
  args?: string[];
  /** Default: the jest project's `__REDIS_FLAVOR__` global, else REDIS_FLAVOR, else 'redis7'. */
  flavor?: RedisFlavor;
  /** Start a server of its own even when REDIS_URL is set: for tests that stop, pause or
   * otherwise disturb their server, which they must never do to one they did not start. */
  own?: boolean;
}

/** The server flavor this test process runs against (jest projects set it per project). */
export function currentFlavor(): RedisFlavor {
  const flavor = (globalThis as { __REDIS_FLAVOR__?: string }).__REDIS_FLAVOR__ ?? process.env['REDIS_FLAVOR'] ?? 'redis7';
  if (!FLAVORS.includes(flavor as RedisFlavor)) {
    throw new Error(`REDIS_FLAVOR must be one of ${FLAVORS.join(', ')}, got ${flavor}`);
  }
  return flavor as RedisFlavor;
}

/**
 * A real redis-server on a free loopback port, started for one test file or suite and stopped
 * after it (redis-memory-server spawns it, and kills it if this process dies). With REDIS_URL
 * set, every handle points at that server instead and start/stop do nothing.
 */
export class TestRedis {
  private server: RedisMemoryServer | undefined;
  private running = false;

  private constructor(
    readonly host: string,
    readonly port: number,
    readonly external: boolean,
    private readonly args: string[],
    readonly flavor: RedisFlavor,
  ) {}

  static async start(options: StartOptions = {}): Promise<TestRedis> {
    const external = options.own ? undefined : process.env['REDIS_URL'];
    if (external) {
      const url = new URL(external);
      return new TestRedis(url.hostname, Number(url.port || 6379), true, [], currentFlavor());
    }
    const flavor = options.flavor ?? currentFlavor();
    const redis = new TestRedis('127.0.0.1', await freePort(), false, options.args ?? [], flavor);
    await redis.resume();
    return redis;
  }

  get url(): string {
    return this.external ? process.env['REDIS_URL']! : `redis://${this.host}:${this.port}`;
  }

  /** Stops the server; the port stays reserved for `resume()`. A no-op on REDIS_URL's server. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    await this.server?.stop();
  }

  /** Starts the server (again) on the same port, e.g. after stop() in an outage test. */
  async resume(): Promise<void> {
    if (this.external || this.running) return;
    if (this.server) {
      // restart the same instance: it reuses its port, whereas a new instance asks get-port,
      // which refuses a port it handed out in the last 15-30 s and silently picks another
      await this.server.start();
    } else {
      this.server = await RedisMemoryServer.create({
        instance: { ip: this.host, port: this.port, args: ['--save', '', ...this.args] },
        binary: { systemBinary: redisServerBinary(this.flavor) },
        autoStart: true,
      });
    }
    this.running = true;
  }
}

async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const probe = createServer();
      probe.once('error', reject);
      probe.listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    if (port !== 6379 && port !== 0) return port;
  }
}
