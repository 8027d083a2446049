import 'reflect-metadata';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Controller, Get, Injectable, type DynamicModule, type ExecutionContext, type INestApplication, type Provider } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { GraphQLModule, Int, Query, Resolver } from '@nestjs/graphql';
import { ClientProxyFactory, MessagePattern, Transport, type ClientProxy, type TcpOptions } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import { SubscribeMessage, WebSocketGateway } from '@nestjs/websockets';
import type { AddressInfo } from 'node:net';
import { firstValueFrom } from 'rxjs';
import { io, type Socket } from 'socket.io-client';
import request from 'supertest';
import { RateLimitGuard, RedisLimitModule, type RedisLimitModuleOptions } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from '../harness/limiter-app.js';
import { freePort, TestRedis } from '../harness/redis-server.js';

// defaultLimits on Nest 12 in every set-up: an HTTP route, an Apollo resolver, a socket.io gateway
// and a TCP microservice handler, none decorated, under the module alone, RateLimitGuard as
// APP_GUARD, and a subclass as APP_GUARD. test/compat/fixtures/nest11-cjs runs the same on Nest 11.
type Req = { headers: Record<string, string | undefined> };
type Answer = 'ok' | 'refused';
const LIMIT = 2;

/** The module's tracker: the user each transport's request names. */
function userOf(ctx: ExecutionContext): string {
  const type = ctx.getType<string>();
  if (type === 'rpc') return ctx.switchToRpc().getData<{ user: string }>().user;
  if (type === 'ws') return ctx.switchToWs().getData<{ user: string }>().user;
  const req = type === 'graphql' ? (ctx.getArgs()[2] as { req: Req }).req : ctx.switchToHttp().getRequest<Req>();
  return req.headers['x-user']!;
}

/** A subclass whose tracker puts every client on one counter: a refused bob shows it decided. */
@Injectable()
class OneCounterGuard extends RateLimitGuard {
  protected override getTracker(): string {
    return 'everyone';
  }
}

@Controller()
class QuoteController {
  @Get('quote')
  quote() {
    return { quote: 42 };
  }
}

@Resolver()
class QuoteResolver {
  @Query(() => Int)
  quote(): number {
    return 42;
  }
}

@WebSocketGateway()
class QuoteGateway {
  @SubscribeMessage('quote')
  quote() {
    return { event: 'quote', data: 42 };
  }
}

@Controller()
class QuoteRpc {
  @MessagePattern('quote')
  quote() {
    return 42;
  }
}

const SETUPS: [string, Provider[], Answer][] = [
  ['the module alone', [], 'ok'],
  ['RateLimitGuard as APP_GUARD', [{ provide: APP_GUARD, useClass: RateLimitGuard }], 'ok'],
  ['a subclass as APP_GUARD', [{ provide: APP_GUARD, useClass: OneCounterGuard }], 'refused'],
];

function appModule(redis: TestRedis, options: RedisLimitModuleOptions, providers: Provider[], transports: 'all' | 'rpc'): DynamicModule {
  const imports = [
    RedisLimitModule.forRoot({
      redis: redis.connection,
      keyPrefix: uniquePrefix('setup'),
      commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS,
      defaultLimits: [{ limit: LIMIT, windowMs: 60_000 }],
      ...options,
    }),
  ];
  class AppModule {}
  if (transports === 'rpc') return { module: AppModule, imports, controllers: [QuoteRpc], providers };
  imports.push(GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }));
  return { module: AppModule, imports, controllers: [QuoteController, QuoteRpc], providers: [QuoteResolver, QuoteGateway, ...providers] };
}

/** A hybrid app: HTTP, GraphQL and socket.io on one port, the TCP microservice on another. */
async function hybrid(redis: TestRedis, options: RedisLimitModuleOptions, providers: Provider[], inheritAppConfig: boolean) {
  const tcp = { host: '127.0.0.1', port: await freePort() };
  const moduleRef = await Test.createTestingModule({ imports: [appModule(redis, options, providers, 'all')] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  app.connectMicroservice<TcpOptions>({ transport: Transport.TCP, options: tcp }, { inheritAppConfig });
  try {
    await app.startAllMicroservices();
    await app.listen(0, '127.0.0.1');
  } catch (error) {
    await app.close(); // a failed start leaves the microservice listening and Redis connected
    throw error;
  }
  return new Clients(app, tcp);
}

class Clients {
  private readonly origin: string;
  private socket: Socket | undefined;
  private rpcClient: ClientProxy | undefined;

  constructor(
    readonly app: INestApplication,
    private readonly tcp: { host: string; port: number },
  ) {
    this.origin = `127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  }

  async http(user: string): Promise<Answer> {
    const { status } = await request(`http://${this.origin}`).get('/quote').set('x-user', user);
    return status === 200 ? 'ok' : status === 429 ? 'refused' : fail(`HTTP ${status}`);
  }

  async graphql(user: string): Promise<Answer> {
    const { body } = await request(`http://${this.origin}`).post('/graphql').set('x-user', user).send({ query: '{ quote }' });
    if (body.data?.quote === 42) return 'ok';
    return body.errors?.[0]?.extensions?.code === 'TOO_MANY_REQUESTS' ? 'refused' : fail(JSON.stringify(body));
  }

  async ws(user: string): Promise<Answer> {
    this.socket ??= await connected(io(`http://${this.origin}`, { transports: ['websocket'], forceNew: true, reconnection: false }));
    const socket = this.socket;
    const reply = await new Promise<{ event: string; data: unknown }>((resolve) => {
      const answer = (event: string) => (data: unknown) => {
        socket.off('quote').off('exception');
        resolve({ event, data });
      };
      socket.once('quote', answer('quote')).once('exception', answer('exception'));
      socket.emit('quote', { user });
    });
    if (reply.event === 'quote') return 'ok';
    return (reply.data as { statusCode?: number }).statusCode === 429 ? 'refused' : fail(JSON.stringify(reply));
  }

  async rpc(user: string): Promise<Answer> {
    this.rpcClient ??= ClientProxyFactory.create({ transport: Transport.TCP, options: this.tcp });
    return firstValueFrom(this.rpcClient.send<number>('quote', { user })).then(
      () => 'ok',
      (error: { statusCode?: number }) => (error.statusCode === 429 ? 'refused' : fail(JSON.stringify(error))),
    );
  }

  async close(): Promise<void> {
    this.socket?.close();
    await this.rpcClient?.close();
    await this.app.close();
  }
}

async function connected(socket: Socket): Promise<Socket> {
  await new Promise((resolve, reject) => socket.once('connect', () => resolve(undefined)).once('connect_error', reject));
  return socket;
}

function fail(what: string): never {
  throw new Error(`unexpected answer: ${what}`);
}

/** `LIMIT + 1` requests of alice, then one of bob, one after another. */
async function aliceThenBob(send: (user: string) => Promise<Answer>): Promise<Answer[]> {
  const answers: Answer[] = [];
  for (const user of [...Array<string>(LIMIT + 1).fill('alice'), 'bob']) answers.push(await send(user));
  return answers;
}

describe('defaultLimits in every set-up, on Nest 12', () => {
  let redis: TestRedis;
  let clients: Clients | undefined;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());
  afterEach(async () => {
    await clients?.close();
    clients = undefined;
  });

  it.each(SETUPS)('reach every transport under %s, decided once by the right guard', async (_setup, providers, bob) => {
    clients = await hybrid(redis, { tracker: userOf }, providers, true);
    const c = clients;
    const answers = {
      http: await aliceThenBob((user) => c.http(user)),
      graphql: await aliceThenBob((user) => c.graphql(user)),
      ws: await aliceThenBob((user) => c.ws(user)),
      rpc: await aliceThenBob((user) => c.rpc(user)),
    };
    const expected = [...Array<Answer>(LIMIT).fill('ok'), 'refused', bob];
    expect(answers).toEqual({ http: expected, graphql: expected, ws: expected, rpc: expected });
  });

  it('a hybrid app without inheritAppConfig starts over a keyless default its microservice handlers never meet', async () => {
    clients = await hybrid(redis, {}, [], false);
    const c = clients;
    // the HTTP route counts by client address; the microservice handler is not limited
    expect(await aliceThenBob((user) => c.http(user))).toEqual(['ok', 'ok', 'refused', 'refused']);
    expect(await aliceThenBob((user) => c.rpc(user))).toEqual(['ok', 'ok', 'ok', 'ok']);
  });

  it('a microservice app fails start-up over a keyless default, naming Class.method', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [appModule(redis, {}, [], 'rpc')] }).compile();
    const microservice = moduleRef.createNestMicroservice<TcpOptions>({
      transport: Transport.TCP,
      options: { host: '127.0.0.1', port: await freePort() },
      logger: false,
    });
    await expect(microservice.listen()).rejects.toThrow(/QuoteRpc\.quote: defaultLimits\[0\] has no key, and microservice handlers have no default tracker/);
    await microservice.close();
  });

  it('a hybrid app with inheritAppConfig answers each message of a handler a keyless default reaches with an error', async () => {
    clients = await hybrid(redis, {}, [], true);
    const c = clients;
    await expect(c.rpc('alice')).rejects.toThrow(/unexpected answer: .*"statusCode":500/);
  });
});
