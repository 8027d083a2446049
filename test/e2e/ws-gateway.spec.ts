import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { BadRequestException, Injectable, type ExecutionContext, type Provider } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { io } from 'socket.io-client';
import { Funnel, MaxPending, RateLimit, RateLimitGuard, SkipRateLimit, type RedisLimitModuleOptions } from '../../lib/index.js';
import { isLimitKey, uniquePrefix } from '../harness/limiter-app.js';
import { ADAPTERS, gatewayApp as serve, type AdapterName, type Client, type GatewayApp, type Reply } from '../harness/gateway-app.js';
import { RedisNode, TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// Gateways on both of Nest's WebSocket adapters (test/harness/gateway-app.ts): real servers on an
// ephemeral port, real clients.
@WebSocketGateway()
class ChatGateway {
  @SubscribeMessage('post')
  @RateLimit({ limit: 2, windowMs: 60_000 })
  post(@MessageBody() body: unknown) {
    return { event: 'ok', data: body };
  }

  @SubscribeMessage('drip')
  @Funnel({ capacity: 2, leakingDurationMs: 60_000 })
  drip() {
    return { event: 'ok', data: 'drop' };
  }

  @SubscribeMessage('ping')
  @RateLimit({ limit: 1, windowMs: 60_000 })
  @SkipRateLimit()
  ping() {
    return { event: 'ok', data: 'pong' };
  }
}

// No decorator: only the module's defaultLimits can reach it.
@WebSocketGateway()
class PlainGateway {
  @SubscribeMessage('plain')
  plain() {
    return { event: 'ok', data: 'plain' };
  }
}

// A class-level limit and a handler-level one each attach the guard: two guards, one decision.
@WebSocketGateway()
@RateLimit({ limit: 3, windowMs: 60_000 })
class StackedGateway {
  @SubscribeMessage('stacked')
  @RateLimit({ name: 'ws-stacked', limit: 100, windowMs: 60_000 })
  stacked() {
    return { event: 'ok', data: 'stacked' };
  }
}

// A key function that refuses the message with an HttpException, as an HTTP route's would.
@WebSocketGateway()
class KeyedGateway {
  @SubscribeMessage('keyed')
  @RateLimit({
    limit: 5,
    windowMs: 60_000,
    key: (ctx) => {
      const user = ctx.switchToWs().getData<{ user?: string }>().user;
      if (user === undefined) throw new BadRequestException('user is required');
      return user;
    },
  })
  keyed() {
    return { event: 'ok', data: 'keyed' };
  }
}

// What start-up discovery must refuse on a gateway.
@WebSocketGateway()
class BadLimitGateway {
  @SubscribeMessage('bad')
  @RateLimit({ limit: -5, windowMs: 60_000 })
  bad() {
    return { event: 'ok', data: 'bad' };
  }
}

// Answers by acknowledgement on socket.io: a reply without `event` goes to the client's callback.
@WebSocketGateway()
class AckGateway {
  @SubscribeMessage('ask')
  @RateLimit({ limit: 1, windowMs: 60_000 })
  ask(@MessageBody() body: unknown) {
    return { answer: body };
  }
}

@WebSocketGateway()
class PendingGateway {
  @SubscribeMessage('job')
  @MaxPending(2, { name: 'ws-jobs', ttlMs: 60_000 })
  job() {
    return { event: 'ok', data: 'job' };
  }
}

// A subclass as APP_GUARD: its tracker keys gateway messages by the user the message names.
@Injectable()
class ByUserGuard extends RateLimitGuard {
  protected override getTracker(ctx: ExecutionContext): string {
    return ctx.switchToWs().getData<{ user?: string }>().user ?? 'anon';
  }
}

const gatewayApp = (
  adapter: AdapterName,
  connection: RedisLimitModuleOptions['redis'],
  options: RedisLimitModuleOptions = {},
  providers: Provider[] = [ChatGateway],
  host?: string,
) => serve(adapter, connection, options, providers, host);

const refusal = { event: 'exception', data: { statusCode: 429, message: 'Too Many Requests', retryAfterMs: expect.any(Number) } };

async function sendAll(client: Client, event: string, n: number, data: unknown = {}): Promise<Reply[]> {
  const out: Reply[] = [];
  for (let i = 0; i < n; i++) out.push(await client.send(event, data));
  return out;
}

describe.each(ADAPTERS)('a gateway on the %s adapter', (adapter) => {
  let redis: TestRedis;
  let served: GatewayApp | undefined;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  it('answers `limit` messages, then an exception event with 429 and retryAfterMs', async () => {
    served = await gatewayApp(adapter, redis.connection);
    const client = await served.connect();
    const replies = await sendAll(client, 'post', 3, { n: 1 });
    expect(replies.slice(0, 2)).toEqual([
      { event: 'ok', data: { n: 1 } },
      { event: 'ok', data: { n: 1 } },
    ]);
    expect(replies[2]).toEqual(refusal);
    const retryAfterMs = (replies[2]!.data as { retryAfterMs: number }).retryAfterMs;
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it("answers a key function's HttpException as an exception event with its body, not a 500", async () => {
    served = await gatewayApp(adapter, redis.connection, {}, [KeyedGateway]);
    const client = await served.connect();
    expect(await client.send('keyed', { user: 'u1' })).toEqual({ event: 'ok', data: 'keyed' });
    expect(await client.send('keyed', {})).toEqual({
      event: 'exception',
      data: { statusCode: 400, message: 'user is required', error: 'Bad Request' },
    });
  });

  it('counts two sockets from one address on one counter (the default tracker)', async () => {
    served = await gatewayApp(adapter, redis.connection);
    const [first, second] = [await served.connect(), await served.connect()];
    expect((await first.send('post')).event).toBe('ok');
    expect((await second.send('post')).event).toBe('ok');
    expect(await first.send('post')).toEqual(refusal);
    expect(await second.send('post')).toEqual(refusal);
  });

  it('counts an IPv6 client by its /56 prefix (ipv6Subnet)', async () => {
    const keyPrefix = uniquePrefix('ws6');
    served = await gatewayApp(adapter, redis.connection, { keyPrefix }, [ChatGateway], '::1');
    const client = await served.connect();
    expect((await client.send('post')).event).toBe('ok');
    const keys = (await redis.keys(`${keyPrefix}*`)).filter(isLimitKey);
    expect(keys).toHaveLength(1);
    // the tracker is the key's hash tag (':' escaped): ::1 masked to its /56
    expect(keys[0]).toMatch(/\{%3A%3A\/56\}$/);
  });

  it('refuses a @Funnel handler over capacity the same way', async () => {
    served = await gatewayApp(adapter, redis.connection);
    const client = await served.connect();
    const replies = await sendAll(client, 'drip', 3);
    expect(replies.map((reply) => reply.event)).toEqual(['ok', 'ok', 'exception']);
    expect(replies[2]).toEqual(refusal);
  });

  it('lets @SkipRateLimit handlers through', async () => {
    served = await gatewayApp(adapter, redis.connection);
    const client = await served.connect();
    expect((await sendAll(client, 'ping', 3)).map((reply) => reply.event)).toEqual(['ok', 'ok', 'ok']);
  });

  it('lets messages skipIf exempts through, and counts the others', async () => {
    served = await gatewayApp(adapter, redis.connection, {
      skipIf: (ctx) => ctx.getType() === 'ws' && (ctx.switchToWs().getData<{ internal?: boolean }>()?.internal ?? false),
    });
    const client = await served.connect();
    expect((await sendAll(client, 'post', 3, { internal: true })).map((reply) => reply.event)).toEqual(['ok', 'ok', 'ok']);
    expect((await sendAll(client, 'post', 3)).map((reply) => reply.event)).toEqual(['ok', 'ok', 'exception']);
  });

  it('applies defaultLimits to message handlers without a decorator', async () => {
    served = await gatewayApp(adapter, redis.connection, { defaultLimits: [{ limit: 2, windowMs: 60_000 }] }, [PlainGateway]);
    const client = await served.connect();
    const replies = await sendAll(client, 'plain', 3);
    expect(replies.map((reply) => reply.event)).toEqual(['ok', 'ok', 'exception']);
    expect(replies[2]).toEqual(refusal);
  });

  it('applies defaultLimits with a RateLimitGuard subclass as APP_GUARD, keyed by its tracker', async () => {
    served = await gatewayApp(adapter, redis.connection, { defaultLimits: [{ limit: 1, windowMs: 60_000 }] }, [
      PlainGateway,
      { provide: APP_GUARD, useClass: ByUserGuard },
    ]);
    const client = await served.connect();
    expect((await sendAll(client, 'plain', 2, { user: 'alice' })).map((reply) => reply.event)).toEqual(['ok', 'exception']);
    expect((await client.send('plain', { user: 'bob' })).event).toBe('ok');
  });

  it('decides a message once when class and handler limits each attach the guard', async () => {
    served = await gatewayApp(adapter, redis.connection, {}, [StackedGateway]);
    const client = await served.connect();
    expect((await sendAll(client, 'stacked', 4)).map((reply) => reply.event)).toEqual(['ok', 'ok', 'ok', 'exception']);
  });

  // socket.io only: a `ws` message has no callback
  if (adapter === 'socket.io') {
    describe('a message sent with an acknowledgement', () => {
      /** A socket.io client of `served`, and the 'exception' events it got. */
      async function ioClient(app: GatewayApp) {
        const { port } = app.app.getHttpServer().address() as AddressInfo;
        const socket = io(`http://127.0.0.1:${port}`, { transports: ['websocket'], forceNew: true, reconnection: false });
        await new Promise<void>((resolve, reject) => {
          socket.once('connect', () => resolve());
          socket.once('connect_error', reject);
        });
        const exceptions: unknown[] = [];
        socket.on('exception', (data: unknown) => exceptions.push(data));
        // generous: before the fix a refused message's callback was never called at all
        const ask = (event: string, data: unknown): Promise<unknown> => socket.timeout(20_000).emitWithAck(event, data);
        return { socket, exceptions, ask };
      }

      it('gets the refusal in its callback, and the exception event as before', async () => {
        served = await gatewayApp('socket.io', redis.connection, {}, [AckGateway]);
        const client = await ioClient(served);
        try {
          expect(await client.ask('ask', { n: 1 })).toEqual({ answer: { n: 1 } });
          const refused = await client.ask('ask', { n: 2 });
          expect(refused).toEqual(refusal.data);
          await until(
            () => client.exceptions.length === 1,
            20_000,
            () => `exception events: ${JSON.stringify(client.exceptions)}`,
          );
          expect(client.exceptions).toEqual([refused]);
        } finally {
          client.socket.close();
        }
      });

      it("gets a key function's HttpException in its callback", async () => {
        served = await gatewayApp('socket.io', redis.connection, {}, [KeyedGateway]);
        const client = await ioClient(served);
        try {
          expect(await client.ask('keyed', {})).toEqual({ statusCode: 400, message: 'user is required', error: 'Bad Request' });
        } finally {
          client.socket.close();
        }
      });
    });
  }
});

describe.each(ADAPTERS)('a gateway on the %s adapter while Redis is down', (adapter) => {
  // each test stops its own server
  let redis: RedisNode;
  let served: GatewayApp | undefined;
  beforeEach(async () => {
    redis = await RedisNode.start({ own: true });
  });
  afterEach(async () => {
    await served?.close();
    served = undefined;
    await redis.stop();
  });

  it("answers 503 in an exception event under failMode 'closed'", async () => {
    served = await gatewayApp(adapter, redis.connection, { failMode: 'closed', commandTimeoutMs: 300 });
    const client = await served.connect();
    expect((await client.send('post')).event).toBe('ok');
    await redis.stop();
    expect(await client.send('post')).toEqual({ event: 'exception', data: { statusCode: 503, message: 'Rate limiter unavailable' } });
  });

  it("lets messages through under failMode 'open'", async () => {
    served = await gatewayApp(adapter, redis.connection, { failMode: 'open', commandTimeoutMs: 300 });
    const client = await served.connect();
    expect((await client.send('post')).event).toBe('ok');
    await redis.stop();
    expect((await sendAll(client, 'post', 3)).map((reply) => reply.event)).toEqual(['ok', 'ok', 'ok']);
  });
});

describe('start-up with gateways', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());

  async function startupError(gateway: Provider): Promise<unknown> {
    try {
      const served = await gatewayApp('ws', redis.connection, {}, [gateway]);
      await served.close();
      return undefined;
    } catch (error) {
      return error;
    }
  }

  it('fails app.init() on bad options, naming Class.method', async () => {
    const error = await startupError(BadLimitGateway);
    expect(error).toBeInstanceOf(RangeError);
    expect((error as Error).message).toMatch(/BadLimitGateway\.bad: @RateLimit\(#1\)\.limit/);
  });

  it('fails app.init() on @MaxPending, which a message handler cannot release', async () => {
    const error = await startupError(PendingGateway);
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/PendingGateway\.job: @MaxPending cannot take effect here/);
  });
});
