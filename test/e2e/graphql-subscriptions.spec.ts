import 'reflect-metadata';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Module, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { Args, GraphQLModule, Int, Query, Resolver, Subscription } from '@nestjs/graphql';
import type { MercuriusDriverConfig } from '@nestjs/mercurius';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { createClient, type Client, type FormattedExecutionResult } from 'graphql-ws';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { RateLimit, RedisLimitModule, type RedisLimitModuleOptions } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from '../harness/limiter-app.js';
import { ErrorLog } from '../harness/logged-app.js';
import { MercuriusDriver } from '../harness/mercurius-driver.js';
import { TestRedis } from '../harness/redis-server.js';

// Subscriptions over WebSocket (graphql-transport-ws), served by each driver on its platform
// (Apollo with graphql-ws on Express, Mercurius on Fastify) and reached by a real graphql-ws
// client. There is no HTTP request per operation: the guard runs once per subscribe, and the
// default tracker reads the address of the connection's upgrade request.
type Driver = 'apollo' | 'mercurius';
const DRIVERS: Driver[] = ['apollo', 'mercurius'];

const room = (ctx: ExecutionContext) => ctx.getArgByIndex<{ room: string }>(1).room;

@Resolver()
class TickerResolver {
  // a schema needs a Query
  @Query(() => Int)
  ping(): number {
    return 1;
  }

  // three events per subscription: a limit counts subscribes, not events
  @Subscription(() => Int, { resolve: (tick: number) => tick })
  @RateLimit({ limit: 2, windowMs: 60_000, key: room })
  async *roomTicks(@Args('room') _room: string): AsyncGenerator<number> {
    yield* [1, 2, 3];
  }

  // no decorator: only the module's defaultLimits reach it
  @Subscription(() => Int, { resolve: (tick: number) => tick })
  async *ticks(): AsyncGenerator<number> {
    yield 1;
  }
}

type GraphQLContext = ApolloDriverConfig['context'];

/** A started app on an ephemeral port; `context` is the Apollo driver's context option. */
async function boot(driver: Driver, redis: TestRedis, options: RedisLimitModuleOptions, context?: GraphQLContext, logger: ErrorLog | false = false) {
  const graphql =
    driver === 'apollo'
      ? GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true, subscriptions: { 'graphql-ws': true }, context })
      : GraphQLModule.forRoot<MercuriusDriverConfig>({ driver: MercuriusDriver, autoSchemaFile: true, subscription: true });
  @Module({
    imports: [
      RedisLimitModule.forRoot({ redis: redis.connection, keyPrefix: uniquePrefix('gql-sub'), commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS, ...options }),
      graphql,
    ],
    providers: [TickerResolver],
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication(driver === 'apollo' ? new ExpressAdapter() : new FastifyAdapter(), { logger });
  await app.listen(0, '::'); // both 127.0.0.1 and ::1 reach it
  return app;
}

/** A graphql-ws client of `app`, reached at `host` (the client address the server sees). */
function client(app: INestApplication, host = '127.0.0.1'): Client {
  const { port } = app.getHttpServer().address() as AddressInfo;
  return createClient({ url: `ws://${host.includes(':') ? `[${host}]` : host}:${port}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 });
}

type Result = FormattedExecutionResult<Record<string, unknown>, Record<string, unknown>>;

/** Every result of one subscription, once it completes. A subscribe that fails is one result
 * with its errors: Apollo's graphql-ws server sends them as a `next` result, Mercurius as an
 * `error` message (which the client throws). */
async function subscribe(client: Client, query: string): Promise<Result[]> {
  const results: Result[] = [];
  try {
    for await (const result of client.iterate<Record<string, unknown>, Record<string, unknown>>({ query })) results.push(result);
  } catch (errors) {
    if (!Array.isArray(errors)) throw errors;
    results.push({ errors });
  }
  return results;
}

/** Subscribes `count` times one after another; for each: the events' values, or the error's code. */
async function outcomes(client: Client, count: number, query: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for (let i = 0; i < count; i++) {
    const results = await subscribe(client, query);
    const error = results[0]?.errors?.[0];
    out.push(error ? (error.extensions?.['code'] ?? error.message) : results.map((r) => Object.values(r.data ?? {})[0]));
  }
  return out;
}

/** For a describe block: one redis-server, and the app and clients each test starts, closed after it. */
function withApp() {
  const ctx = {} as { redis: TestRedis; app: INestApplication | undefined; connect(host?: string): Client };
  const clients: Client[] = [];
  beforeAll(async () => {
    ctx.redis = await TestRedis.start();
  });
  afterAll(() => ctx.redis.stop());
  afterEach(async () => {
    await Promise.all(clients.splice(0).map(async (c) => c.dispose()));
    await ctx.app?.close();
    ctx.app = undefined;
  });
  ctx.connect = (host) => {
    const c = client(ctx.app!, host);
    clients.push(c);
    return c;
  };
  return ctx;
}

describe.each(DRIVERS)('GraphQL subscriptions with %s', (driver) => {
  const ctx = withApp();

  it('limits a subscription with a key per subscribe, with TOO_MANY_REQUESTS and retryAfterMs', async () => {
    ctx.app = await boot(driver, ctx.redis, {});
    const c = ctx.connect();
    expect(await outcomes(c, 3, 'subscription { roomTicks(room: "a") }')).toEqual([[1, 2, 3], [1, 2, 3], 'TOO_MANY_REQUESTS']);
    expect(await outcomes(c, 1, 'subscription { roomTicks(room: "b") }')).toEqual([[1, 2, 3]]);

    const [refused] = await subscribe(c, 'subscription { roomTicks(room: "a") }');
    expect(refused!.errors![0]!.extensions).toMatchObject({ code: 'TOO_MANY_REQUESTS', statusCode: 429 });
    expect(refused!.errors![0]!.extensions!['retryAfterMs']).toBeGreaterThan(0);
  });

  it('keys the defaults by the client address, never by one key for all', async () => {
    ctx.app = await boot(driver, ctx.redis, { defaultLimits: [{ limit: 1, windowMs: 60_000 }] });
    expect(await outcomes(ctx.connect('127.0.0.1'), 2, 'subscription { ticks }')).toEqual([[1], 'TOO_MANY_REQUESTS']);
    // another address, another counter
    expect(await outcomes(ctx.connect('::1'), 2, 'subscription { ticks }')).toEqual([[1], 'TOO_MANY_REQUESTS']);
  });
});

// Nest's Apollo driver hands graphql-ws's own context to the app's context function, and makes it
// the operation's `req` when the function returns none (as without a function).
describe("GraphQL subscriptions with apollo: the app's context function", () => {
  const ctx = withApp();

  it('keys the defaults by the client address when the context builds its own req and passes extra through', async () => {
    const context = ({ req, connectionParams, extra }: { req?: unknown; connectionParams?: unknown; extra?: unknown }) => ({
      req: req ?? { headers: connectionParams },
      extra,
    });
    ctx.app = await boot('apollo', ctx.redis, { defaultLimits: [{ limit: 1, windowMs: 60_000 }] }, context);
    expect(await outcomes(ctx.connect('127.0.0.1'), 2, 'subscription { ticks }')).toEqual([[1], 'TOO_MANY_REQUESTS']);
    expect(await outcomes(ctx.connect('::1'), 2, 'subscription { ticks }')).toEqual([[1], 'TOO_MANY_REQUESTS']);
  });

  // A common context for auth over subscriptions: connectionParams dressed as a request's headers.
  // Such a `req` has no address, and one key for every client would let one client lock out all.
  it('fails a keyless subscribe with a logged error when the context hides the connection', async () => {
    const log = new ErrorLog();
    const context = ({ req, connectionParams }: { req?: unknown; connectionParams?: unknown }) => ({ req: req ?? { headers: connectionParams } });
    ctx.app = await boot('apollo', ctx.redis, { defaultLimits: [{ limit: 1, windowMs: 60_000 }] }, context, log);
    const c = ctx.connect();
    expect(await outcomes(c, 2, 'subscription { ticks }')).toEqual(['Internal Server Error', 'Internal Server Error']);
    // the keyed one still works: its key is its own
    expect(await outcomes(c, 1, 'subscription { roomTicks(room: "a") }')).toEqual([[1, 2, 3]]);
    expect(log.errors.join('\n')).toMatch(/TickerResolver\.ticks.*graphql-ws.*key/s);
  });
});
