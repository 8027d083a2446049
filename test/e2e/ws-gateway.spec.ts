import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { Module, type INestApplication } from '@nestjs/common';
import { IoAdapter } from '@nestjs/platform-socket.io';
import { WsAdapter } from '@nestjs/platform-ws';
import { Test } from '@nestjs/testing';
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import { io, type Socket } from 'socket.io-client';
import WebSocket from 'ws';
import { MaxPending, RateLimit, RedisLimitModule, SkipRateLimit, type RedisLimitModuleOptions } from '../../lib/index.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { RedisNode, TestRedis } from '../harness/redis-server.js';

// Gateways on both of Nest's WebSocket adapters, served on an ephemeral port and reached by real
// clients: the `ws` package and socket.io-client.
type AdapterName = 'ws' | 'socket.io';
const ADAPTERS: AdapterName[] = ['ws', 'socket.io'];

/** What a client got back for one message: the handler's answer or Nest's 'exception' event. */
interface Reply {
  event: string;
  data: unknown;
}

/** One connected client; `send` waits for the reply to that message before the next is sent. */
interface Client {
  send(event: string, data?: unknown): Promise<Reply>;
  close(): void;
}

const REPLY_EVENTS = ['ok', 'exception'];

/** Replies in the order they arrive, each handed to the oldest `next()` waiting for one. */
function replyQueue() {
  const arrived: Reply[] = [];
  const waiting: ((reply: Reply) => void)[] = [];
  return {
    push(reply: Reply) {
      const next = waiting.shift();
      if (next) next(reply);
      else arrived.push(reply);
    },
    next(): Promise<Reply> {
      const reply = arrived.shift();
      return reply ? Promise.resolve(reply) : new Promise((resolve) => waiting.push(resolve));
    },
  };
}

async function wsClient(port: number): Promise<Client> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}`);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const replies = replyQueue();
  socket.on('message', (raw) => replies.push(JSON.parse(String(raw)) as Reply));
  return {
    send(event, data = {}) {
      const reply = replies.next();
      socket.send(JSON.stringify({ event, data }));
      return reply;
    },
    close: () => socket.close(),
  };
}

async function ioClient(port: number): Promise<Client> {
  const socket: Socket = io(`http://127.0.0.1:${port}`, { transports: ['websocket'], forceNew: true, reconnection: false });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('connect_error', reject);
  });
  const replies = replyQueue();
  for (const event of REPLY_EVENTS) socket.on(event, (data: unknown) => replies.push({ event, data }));
  return {
    send(event, data = {}) {
      const reply = replies.next();
      socket.emit(event, data);
      return reply;
    },
    close: () => socket.close(),
  };
}

@WebSocketGateway()
class ChatGateway {
  @SubscribeMessage('post')
  @RateLimit({ limit: 2, windowMs: 60_000 })
  post(@MessageBody() body: unknown) {
    return { event: 'ok', data: body };
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

// What start-up discovery must refuse on a gateway.
@WebSocketGateway()
class BadLimitGateway {
  @SubscribeMessage('bad')
  @RateLimit({ limit: -5, windowMs: 60_000 })
  bad() {
    return { event: 'ok', data: 'bad' };
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

interface GatewayApp {
  app: INestApplication;
  connect(): Promise<Client>;
  close(): Promise<void>;
}

async function gatewayApp(adapter: AdapterName, connection: RedisLimitModuleOptions['redis'], options: RedisLimitModuleOptions = {}, gateways: Function[] = [ChatGateway]): Promise<GatewayApp> {
  @Module({
    imports: [RedisLimitModule.forRoot({ redis: connection, keyPrefix: uniquePrefix('ws'), ...options })],
    providers: gateways as never[],
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  app.useWebSocketAdapter(adapter === 'ws' ? new WsAdapter(app) : new IoAdapter(app));
  try {
    await app.listen(0, '127.0.0.1');
  } catch (error) {
    await app.close(); // a failed start still opened the Redis connection
    throw error;
  }
  const { port } = app.getHttpServer().address() as AddressInfo;
  const clients: Client[] = [];
  return {
    app,
    async connect() {
      const client = await (adapter === 'ws' ? wsClient(port) : ioClient(port));
      clients.push(client);
      return client;
    },
    async close() {
      for (const client of clients) client.close();
      await app.close();
    },
  };
}

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

  it('counts two sockets from one address on one counter (the default tracker)', async () => {
    served = await gatewayApp(adapter, redis.connection);
    const [first, second] = [await served.connect(), await served.connect()];
    expect((await first.send('post')).event).toBe('ok');
    expect((await second.send('post')).event).toBe('ok');
    expect(await first.send('post')).toEqual(refusal);
    expect(await second.send('post')).toEqual(refusal);
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

  it('decides a message once when class and handler limits each attach the guard', async () => {
    served = await gatewayApp(adapter, redis.connection, {}, [StackedGateway]);
    const client = await served.connect();
    expect((await sendAll(client, 'stacked', 4)).map((reply) => reply.event)).toEqual(['ok', 'ok', 'ok', 'exception']);
  });
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

  async function startupError(gateway: Function): Promise<unknown> {
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
