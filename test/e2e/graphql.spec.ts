import 'reflect-metadata';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Injectable, Module, UseGuards, type CanActivate, type ExecutionContext, type INestApplication, type LoggerService, type Type } from '@nestjs/common';
import { Context, Field, GraphQLModule, Int, Mutation, ObjectType, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { jest } from '@jest/globals';
import type { MercuriusDriverConfig } from '@nestjs/mercurius';
import { createRequire } from 'node:module';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import {
  ExpiringHashService,
  Funnel,
  MaxConcurrent,
  MaxPending,
  PendingSlot,
  RateLimit,
  RedisLimitModule,
  SkipRateLimit,
  type RedisLimitModuleOptions,
} from '../../lib/index.js';
import { uniquePrefix } from '../harness/limiter-app.js';
import { until } from '../harness/until.js';
import { ErrorLog } from '../harness/logged-app.js';
import { RedisNode, TestRedis } from '../harness/redis-server.js';

// Resolvers served by a real GraphQL server over HTTP, with each driver on its own platform:
// Apollo on Express, Mercurius on Fastify. A refusal is an entry of `errors`, not an HTTP status.
type Driver = 'apollo' | 'mercurius';
const DRIVERS: Driver[] = ['apollo', 'mercurius'];

// mercurius requires @fastify/static, which requires content-disposition 3, an ES module: Node
// loads that (require(esm)), Jest's module loader cannot. It only serves GraphiQL's files, which
// no test asks for: the CommonJS content-disposition 2 Express uses stands in.
const require = createRequire(import.meta.url);
const esmOnly = require.resolve('content-disposition', { paths: [require.resolve('@fastify/static')] });
jest.doMock(esmOnly, () => require('content-disposition'));
const { MercuriusDriver } = await import('@nestjs/mercurius');

let hits = 0;
const internal = (ctx: ExecutionContext) =>
  (ctx.getArgByIndex<{ req?: { headers?: Record<string, string | undefined> } }>(2)?.req?.headers?.['x-internal'] ?? '') === 'yes';

@Injectable()
class DenyGuard implements CanActivate {
  canActivate(): boolean {
    return false;
  }
}

@Resolver()
class QuotesResolver {
  @Query(() => Int)
  @RateLimit({ limit: 2, windowMs: 60_000 })
  quote(): number {
    return ++hits;
  }

  @Mutation(() => Int)
  @RateLimit({ limit: 2, windowMs: 60_000 })
  order(): number {
    return ++hits;
  }

  @Query(() => Int)
  @RateLimit({ limit: 1, windowMs: 60_000 })
  @SkipRateLimit()
  health(): number {
    return 1;
  }

  // no decorator: only the module's defaultLimits reach it
  @Query(() => Int)
  plain(): number {
    return 1;
  }

  @Query(() => Int)
  @RateLimit({ limit: 1, windowMs: 60_000 })
  tight(): number {
    return 1;
  }

  @Query(() => Int)
  @RateLimit({ name: 'app', limit: 1, windowMs: 60_000 })
  named(): number {
    return 1;
  }

  @Query(() => Int)
  @Funnel({ capacity: 2, leakingDurationMs: 60_000 })
  drip(): number {
    return 1;
  }

  @Mutation(() => String)
  @MaxPending(2, { name: 'carts', ttlMs: 60_000 })
  cart(@PendingSlot() slot: string): string {
    return slot;
  }

  @Mutation(() => String)
  @MaxPending(1, { name: 'payments', ttlMs: 60_000 })
  pay(): string {
    throw new Error('payment declined');
  }

  @Mutation(() => String)
  @MaxPending(20, { name: 'tickets', ttlMs: 60_000 })
  ticket(@PendingSlot() slot: string): string {
    return slot;
  }

  // MaxPending's guard runs first (decorators apply bottom-up), then DenyGuard refuses
  @Mutation(() => String, { nullable: true })
  @UseGuards(DenyGuard)
  @MaxPending(3, { name: 'denied', ttlMs: 60_000, owner: () => 'u1' })
  denied(): string {
    return 'never';
  }

  // a mutation's fields run one after another: this one sees what the fields before it left
  @Mutation(() => Int)
  closeListeners(@Context() gql: { req?: { res?: NodeJS.EventEmitter }; reply?: { raw: NodeJS.EventEmitter } }): number {
    return (gql.reply?.raw ?? gql.req!.res!).listenerCount('close');
  }
}

@Resolver()
class BadResolver {
  @Query(() => Int)
  @RateLimit({ limit: -5, windowMs: 60_000 })
  bad(): number {
    return 1;
  }
}

/** Exports held until the test lets them go. */
const exportGates: (() => void)[] = [];

@Resolver()
class ExportsResolver {
  // a schema needs a query
  @Query(() => Int)
  exports(): number {
    return exportGates.length;
  }

  @Mutation(() => Int)
  @MaxConcurrent(1, { key: () => 'tenant' })
  async startExport(): Promise<number> {
    await new Promise<void>((resolve) => exportGates.push(resolve));
    return 1;
  }
}

@ObjectType()
class ExportBasket {
  @Field(() => Int)
  id!: number;
}

@Resolver(() => ExportBasket)
class ExportBasketResolver {
  @Query(() => ExportBasket)
  exportBasket(): ExportBasket {
    return { id: 1 };
  }

  @ResolveField(() => Int)
  @MaxConcurrent(1)
  size(): number {
    return 3;
  }
}

@ObjectType()
class Basket {
  @Field(() => Int)
  id!: number;
}

@Resolver(() => Basket)
class BasketResolver {
  @Query(() => Basket)
  basket(): Basket {
    return { id: 1 };
  }

  @ResolveField(() => Int)
  @RateLimit({ limit: 2, windowMs: 60_000 })
  total(): number {
    return 3;
  }
}

/** A started app serving `resolvers` (app.init() checks their decorators). */
async function boot(
  driver: Driver,
  redis: TestRedis,
  options: RedisLimitModuleOptions = {},
  resolvers: Function[] = [QuotesResolver],
  fieldResolverEnhancers?: ('guards' | 'interceptors' | 'filters')[],
  logger: LoggerService | false = false,
): Promise<INestApplication> {
  const graphql =
    driver === 'apollo'
      ? GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true, fieldResolverEnhancers })
      : GraphQLModule.forRoot<MercuriusDriverConfig>({ driver: MercuriusDriver, autoSchemaFile: true, fieldResolverEnhancers });
  @Module({
    imports: [RedisLimitModule.forRoot({ redis: redis.connection, keyPrefix: uniquePrefix('graphql'), ...options }), graphql],
    providers: resolvers as Type[],
  })
  class AppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
  const app = moduleRef.createNestApplication(driver === 'apollo' ? new ExpressAdapter() : new FastifyAdapter(), { logger });
  try {
    await app.init();
  } catch (error) {
    await app.close();
    throw error;
  }
  if (driver === 'mercurius') await app.getHttpAdapter().getInstance().ready();
  return app;
}

interface GraphQLResponse {
  status: number;
  headers: Record<string, string | undefined>;
  body: { data?: Record<string, unknown> | null; errors?: { message: string; path?: string[]; extensions?: Record<string, unknown> }[] };
}

/** `count` operations one after another, each after the previous answered. */
async function send(app: INestApplication, count: number, query: string, headers: Record<string, string> = {}): Promise<GraphQLResponse[]> {
  const out: GraphQLResponse[] = [];
  for (let i = 0; i < count; i++) {
    const response = await request(app.getHttpServer()).post('/graphql').set(headers).send({ query });
    out.push({ status: response.status, headers: response.headers, body: response.body });
  }
  return out;
}

const codes = (responses: GraphQLResponse[]) => responses.map((r) => r.body.errors?.[0]?.extensions?.['code'] ?? null);

describe.each(DRIVERS)('GraphQL resolvers with %s', (driver) => {
  let redis: TestRedis;
  let app: INestApplication | undefined;
  beforeAll(async () => {
    redis = await TestRedis.start();
  });
  afterAll(() => redis.stop());
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it.each([
    ['query', '{ quote }', 'quote'],
    ['mutation', 'mutation { order }', 'order'],
  ])('refuses a %s over its limit with a GraphQL error and the headers on the HTTP response', async (_kind, query, field) => {
    app = await boot(driver, redis);
    const responses = await send(app, 3, query);
    expect(codes(responses)).toEqual([null, null, 'TOO_MANY_REQUESTS']);
    expect(responses.slice(0, 2).map((r) => typeof r.body.data?.[field])).toEqual(['number', 'number']);
    expect(responses.map((r) => [r.headers['x-ratelimit-limit'], r.headers['x-ratelimit-remaining']])).toEqual([
      ['2', '1'],
      ['2', '0'],
      ['2', '0'],
    ]);
    const refusal = responses[2]!.body.errors![0]!;
    expect(refusal.path).toEqual([field]);
    expect(refusal.extensions).toMatchObject({ code: 'TOO_MANY_REQUESTS', statusCode: 429 });
    expect(refusal.extensions!['retryAfterMs']).toBeGreaterThan(0);
    expect(Number(responses[2]!.headers['retry-after'])).toBe(Math.ceil((refusal.extensions!['retryAfterMs'] as number) / 1000));
  });

  it('a resolver with a bad option fails app.init() naming Resolver.method', async () => {
    await expect(boot(driver, redis, {}, [BadResolver])).rejects.toThrow(/BadResolver\.bad: .*limit/);
  });

  it('a limit on a @ResolveField fails app.init() unless the module runs guards on fields', async () => {
    await expect(boot(driver, redis, {}, [BasketResolver])).rejects.toThrow(/BasketResolver\.total: .*fieldResolverEnhancers includes 'guards'/);
    app = await boot(driver, redis, {}, [BasketResolver], ['guards']);
    expect(codes(await send(app, 3, '{ basket { total } }'))).toEqual([null, null, 'TOO_MANY_REQUESTS']);
  });

  it('@MaxConcurrent refuses a second operation while the first resolves, and frees the slot when its field is resolved', async () => {
    app = await boot(driver, redis, {}, [ExportsResolver]);
    const post = () => request(app!.getHttpServer()).post('/graphql').send({ query: 'mutation { startExport }' });
    const first = post().then((r) => r);
    await until(
      () => exportGates.length === 1,
      10_000,
      () => 'the first export never reached its resolver',
    );
    const second = await post();
    expect(second.body.errors[0].extensions).toMatchObject({ code: 'TOO_MANY_REQUESTS', statusCode: 429, retryAfterMs: expect.any(Number) });
    exportGates.shift()!();
    expect((await first).body.data).toEqual({ startExport: 1 });
    const third = post().then((r) => r);
    await until(
      () => exportGates.length === 1,
      10_000,
      () => 'the third export never reached its resolver',
    );
    exportGates.shift()!();
    expect((await third).body.data).toEqual({ startExport: 1 });
  });

  it('@MaxConcurrent on a @ResolveField fails app.init() unless the module runs interceptors on fields', async () => {
    await expect(boot(driver, redis, {}, [ExportBasketResolver])).rejects.toThrow(
      /ExportBasketResolver\.size: .*fieldResolverEnhancers includes 'interceptors'/,
    );
    app = await boot(driver, redis, {}, [ExportBasketResolver], ['interceptors']);
    expect(codes(await send(app, 2, '{ exportBasket { size } }'))).toEqual([null, null]);
  });

  it('logs no error for a refusal: a client over its limit cannot fill the log', async () => {
    const log = new ErrorLog();
    app = await boot(driver, redis, {}, [QuotesResolver], undefined, log);
    expect(codes(await send(app, 3, '{ quote }'))).toEqual([null, null, 'TOO_MANY_REQUESTS']);
    expect(log.errors).toEqual([]);
  });

  it('@Funnel refuses a query over its capacity', async () => {
    app = await boot(driver, redis);
    expect(codes(await send(app, 3, '{ drip }'))).toEqual([null, null, 'TOO_MANY_REQUESTS']);
  });

  it('decides each limited field of one operation on its own', async () => {
    app = await boot(driver, redis);
    // two aliases of one field: two resolver calls, two permits of the same counter
    const [both] = await send(app, 1, '{ a: quote b: quote }');
    expect(both!.body.errors).toBeUndefined();
    const [third] = await send(app, 1, '{ quote }');
    expect(codes([third!])).toEqual(['TOO_MANY_REQUESTS']);
  });

  it('@MaxPending caps a mutation, one slot per field, and @PendingSlot reads it', async () => {
    app = await boot(driver, redis);
    // two fields of one operation: two slots, each with its own id
    const [both] = await send(app, 1, 'mutation { a: cart b: cart }');
    expect(both!.body.errors).toBeUndefined();
    const ids = [both!.body.data?.['a'], both!.body.data?.['b']];
    expect(ids).toEqual([expect.stringMatching(/^[0-9a-f-]{36}$/), expect.stringMatching(/^[0-9a-f-]{36}$/)]);
    expect(ids[0]).not.toBe(ids[1]);
    const [third] = await send(app, 1, 'mutation { cart }');
    expect(third!.body.errors![0]!.extensions).toMatchObject({ code: 'TOO_MANY_REQUESTS', statusCode: 429 });
    expect(third!.body.errors![0]!.extensions!['retryAfterMs']).toBeGreaterThan(0);
    expect([third!.headers['x-ratelimit-limit'], third!.headers['x-ratelimit-remaining']]).toEqual(['2', '0']);
  });

  it('@MaxPending puts one close listener on the response however many fields take a slot', async () => {
    app = await boot(driver, redis);
    const listenersAfter = async (slots: number) => {
      const aliases = Array.from({ length: slots }, (_, i) => `t${i}: ticket`).join(' ');
      const [response] = await send(app!, 1, `mutation { ${aliases} closeListeners }`);
      expect(response!.body.errors).toBeUndefined();
      return response!.body.data?.['closeListeners'];
    };
    // 12 aliases: past the 10 listeners after which Node warns of a leak
    expect(await listenersAfter(12)).toBe(await listenersAfter(1));
  });

  it('@MaxPending releases the slot of every field a later guard refuses', async () => {
    app = await boot(driver, redis);
    const [response] = await send(app, 1, 'mutation { d0: denied d1: denied d2: denied }');
    expect(response!.body.errors).toHaveLength(3);
    expect(response!.headers['x-ratelimit-remaining']).toBe('0'); // all three were reserved
    const hash = app.get(ExpiringHashService);
    await until(
      async () => (await hash.count('denied:u1')) === 0,
      20_000,
      async () => `${await hash.count('denied:u1')} slots still held`,
    );
  });

  it('@MaxPending gives the slot back when the mutation throws', async () => {
    app = await boot(driver, redis);
    const responses = await send(app, 3, 'mutation { pay }');
    expect(responses.map((r) => r.body.errors?.[0]?.message)).toEqual(['payment declined', 'payment declined', 'payment declined']);
  });

  it('@SkipRateLimit and skipIf skip the limits', async () => {
    app = await boot(driver, redis, { skipIf: internal });
    const health = await send(app, 3, '{ health }');
    expect(codes(health)).toEqual([null, null, null]);
    expect(health.filter((r) => 'x-ratelimit-limit' in r.headers)).toEqual([]);
    const skipped = await send(app, 3, '{ quote }', { 'x-internal': 'yes' });
    expect(codes(skipped)).toEqual([null, null, null]);
    expect(codes(await send(app, 3, '{ quote }'))).toEqual([null, null, 'TOO_MANY_REQUESTS']);
  });

  it('defaultLimits reach an undecorated resolver and give way to its own limit', async () => {
    app = await boot(driver, redis, { defaultLimits: [{ limit: 3, windowMs: 60_000 }] });
    const plain = await send(app, 4, '{ plain }');
    expect(codes(plain)).toEqual([null, null, null, 'TOO_MANY_REQUESTS']);
    expect(plain.map((r) => r.headers['x-ratelimit-limit'])).toEqual(['3', '3', '3', '3']);
    expect(codes(await send(app, 2, '{ tight }'))).toEqual([null, 'TOO_MANY_REQUESTS']);
  });

  it('a named default gives way to a limit of the same name', async () => {
    app = await boot(driver, redis, { defaultLimits: [{ name: 'app', limit: 5, windowMs: 60_000 }] });
    const named = await send(app, 2, '{ named }');
    expect(named.map((r) => r.headers['x-ratelimit-limit'])).toEqual(['1', '1']);
    expect(codes(named)).toEqual([null, 'TOO_MANY_REQUESTS']);
    // the same name is the same counter, app-wide: the default's limit over it
    const plain = await send(app, 1, '{ plain }');
    expect(plain.map((r) => [r.headers['x-ratelimit-limit'], r.headers['x-ratelimit-remaining']])).toEqual([['5', '3']]);
  });
});

describe.each(DRIVERS)('GraphQL resolvers with %s while Redis is down', (driver) => {
  let redis: RedisNode;
  let app: INestApplication | undefined;
  beforeEach(async () => {
    redis = await RedisNode.start({ own: true });
  });
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await redis.stop();
  });

  it("failMode 'closed' answers SERVICE_UNAVAILABLE", async () => {
    app = await boot(driver, redis, { failMode: 'closed', commandTimeoutMs: 300 });
    expect(codes(await send(app, 1, '{ quote }'))).toEqual([null]);
    await redis.stop();
    const [refused] = await send(app, 1, '{ quote }');
    expect(refused!.body.errors![0]!.extensions).toMatchObject({ code: 'SERVICE_UNAVAILABLE', statusCode: 503 });
  });

  it("failMode 'open' lets operations through", async () => {
    app = await boot(driver, redis, { failMode: 'open', commandTimeoutMs: 300 });
    expect(codes(await send(app, 1, '{ quote }'))).toEqual([null]);
    await redis.stop();
    const responses = await send(app, 4, '{ quote }');
    expect(codes(responses)).toEqual([null, null, null, null]);
    expect(responses.map((r) => typeof r.body.data?.['quote'])).toEqual(['number', 'number', 'number', 'number']);
  });
});
