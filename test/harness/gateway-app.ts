import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { Module, type INestApplication, type Provider } from '@nestjs/common';
import { IoAdapter } from '@nestjs/platform-socket.io';
import { WsAdapter } from '@nestjs/platform-ws';
import { Test } from '@nestjs/testing';
import { io, type Socket } from 'socket.io-client';
import WebSocket from 'ws';
import { RedisLimitModule, type RedisLimitModuleOptions } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from './limiter-app.js';

// Gateways on both of Nest's WebSocket adapters, served on an ephemeral port and reached by real
// clients: the `ws` package and socket.io-client.
export type AdapterName = 'ws' | 'socket.io';
export const ADAPTERS: AdapterName[] = ['ws', 'socket.io'];

/** What a client got back for one message: the handler's answer or Nest's 'exception' event. */
export interface Reply {
  event: string;
  data: unknown;
}

/** One connected client; `send` waits for the reply to that message before the next is sent. */
export interface Client {
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

async function wsClient(origin: string): Promise<Client> {
  const socket = new WebSocket(`ws://${origin}`);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const replies = replyQueue();
  // one Buffer a message: the client keeps ws' default binaryType, 'nodebuffer'
  socket.on('message', (raw: Buffer) => replies.push(JSON.parse(raw.toString()) as Reply));
  return {
    send(event, data = {}) {
      const reply = replies.next();
      socket.send(JSON.stringify({ event, data }));
      return reply;
    },
    close: () => socket.close(),
  };
}

async function ioClient(origin: string): Promise<Client> {
  const socket: Socket = io(`http://${origin}`, { transports: ['websocket'], forceNew: true, reconnection: false });
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

export interface GatewayApp {
  app: INestApplication;
  connect(): Promise<Client>;
  close(): Promise<void>;
}

/** An app serving the gateways among `providers` on `adapter`, listening on an ephemeral port of `host` (a loopback
 * address: IPv4 by default). */
export async function gatewayApp(
  adapter: AdapterName,
  connection: RedisLimitModuleOptions['redis'],
  options: RedisLimitModuleOptions,
  providers: Provider[],
  host = '127.0.0.1',
): Promise<GatewayApp> {
  @Module({
    imports: [RedisLimitModule.forRoot({ redis: connection, keyPrefix: uniquePrefix('ws'), commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, ...options })],
    providers,
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  app.useWebSocketAdapter(adapter === 'ws' ? new WsAdapter(app) : new IoAdapter(app));
  try {
    await app.listen(0, host);
  } catch (error) {
    await app.close(); // a failed start still opened the Redis connection
    throw error;
  }
  const { port } = app.getHttpServer().address() as AddressInfo;
  const origin = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  const clients: Client[] = [];
  return {
    app,
    async connect() {
      const client = await (adapter === 'ws' ? wsClient(origin) : ioClient(origin));
      clients.push(client);
      return client;
    },
    async close() {
      for (const client of clients) client.close();
      await app.close();
    },
  };
}
