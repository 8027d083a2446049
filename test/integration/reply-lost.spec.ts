import 'reflect-metadata';
import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { Test } from '@nestjs/testing';
import { RateLimiterService, RedisLimitError, RedisLimitModule } from '../../lib/index.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { RedisNode } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

/**
 * A TCP proxy to a Redis server that, once armed with a marker, lets through the next request
 * carrying it and then cuts that connection instead of passing its reply back: Redis has run the
 * command, the client never hears so. What CLIENT KILL or a restart does in the soak, on cue.
 */
class ReplyCutter {
  private marker: string | undefined;
  readonly cut: Socket[] = [];
  private constructor(private readonly server: Server) {}

  static async start(port: number): Promise<ReplyCutter> {
    let cutter: ReplyCutter | undefined;
    const server = createServer((client) => {
      const upstream = connect(port, '127.0.0.1');
      let cutting = false;
      client.on('data', (chunk) => {
        if (cutter!.marker !== undefined && chunk.includes(cutter!.marker)) {
          cutter!.marker = undefined;
          cutting = true;
        }
        upstream.write(chunk);
      });
      upstream.on('data', (chunk) => {
        if (!cutting) return void client.write(chunk);
        cutter!.cut.push(client);
        client.destroy();
        upstream.destroy();
      });
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return (cutter = new ReplyCutter(server));
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The next request carrying `marker` runs, and its connection is cut before the reply. */
  arm(marker: string): void {
    this.marker = marker;
  }

  close(): void {
    this.server.close();
  }
}

// A decision whose reply is lost on the way back (the connection cut after Redis ran it) is
// charged once: the client must not send it again on the next connection. ioredis resends a
// command in flight at a disconnect up to maxRetriesPerRequest times; the soak saw a refusal with
// one permit fewer charged than the limit, about 3 s after a CLIENT KILL.
describe('a reply lost to a dropped connection', () => {
  let redis: RedisNode;
  let cutter: ReplyCutter;
  beforeAll(async () => {
    redis = await RedisNode.start();
    cutter = await ReplyCutter.start(redis.port);
  });
  afterAll(async () => {
    cutter?.close();
    await redis?.stop();
  });

  it.each(['fixed-window', 'sliding-window', 'token-bucket'] as const)('%s: the decision it ran is charged once, not sent again', async (algorithm) => {
    const moduleRef = await Test.createTestingModule({
      imports: [RedisLimitModule.forRoot({ redis: `redis://127.0.0.1:${cutter.port}`, keyPrefix: uniquePrefix('lost'), commandTimeoutMs: 2_000 })],
    }).compile();
    await moduleRef.init();
    try {
      const limiter = moduleRef.get(RateLimiterService);
      const policy = { limit: 5, windowMs: 600_000, algorithm };
      // warm: scripts loaded, the grant secret read
      expect((await limiter.consume('warm', policy)).allowed).toBe(true);
      const key = `reply-lost-${algorithm}`;
      const cuts = cutter.cut.length;
      cutter.arm(key);
      await expect(limiter.consume(key, policy)).rejects.toThrow(RedisLimitError);
      expect(cutter.cut.length).toBe(cuts + 1);
      // reconnected, and nothing was sent again: one permit charged, by the decision Redis ran
      await until(
        async () => (await limiter.peek(key, policy).catch(() => undefined)) !== undefined,
        10_000,
        () => 'not reconnected',
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect((await limiter.peek(key, policy)).remaining).toBe(4);
    } finally {
      await moduleRef.close();
    }
  });
});
