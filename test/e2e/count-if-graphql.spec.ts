import 'reflect-metadata';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { BadRequestException, Module, type INestApplication } from '@nestjs/common';
import { Args, GraphQLModule, Int, Mutation, Query, Resolver } from '@nestjs/graphql';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { RateLimit, RateLimiterService, RedisLimitModule } from '../../lib/index.js';
import { TEST_COMMAND_TIMEOUT_MS, uniquePrefix } from '../harness/limiter-app.js';
import { TestRedis } from '../harness/redis-server.js';
import { until } from '../harness/until.js';

// countIf on a GraphQL resolver (Apollo on Express): the HTTP status is 200 whatever happened, so
// the resolver's end is the outcome: 200 when it answered, an HttpException's status when it threw.
const REDEEM = { limit: 3, windowMs: 60_000 };

@Resolver()
class VoucherResolver {
  // a schema needs a query root
  @Query(() => Int)
  balance(): number {
    return 0;
  }

  @Mutation(() => Int)
  @RateLimit({ name: 'redeem', ...REDEEM, key: () => 'shopper', countIf: (_, outcome) => outcome.statusCode === 400 })
  redeem(@Args('code') code: string): number {
    if (code !== 'GIFT') throw new BadRequestException('no such voucher');
    return 10;
  }
}

describe('countIf on a GraphQL resolver', () => {
  let redis: TestRedis;
  let app: INestApplication;
  beforeAll(async () => {
    redis = await TestRedis.start();
    @Module({
      imports: [
        RedisLimitModule.forRoot({ redis: redis.connection, keyPrefix: uniquePrefix('gql-outcome'), commandTimeoutMs: TEST_COMMAND_TIMEOUT_MS }),
        GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
      ],
      providers: [VoucherResolver],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: false });
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await redis.stop();
  });

  const redeem = async (code: string) => {
    const response = await request(app.getHttpServer())
      .post('/graphql')
      .send({ query: `mutation { redeem(code: "${code}") }` });
    return response.body as { data?: { redeem: number } | null; errors?: { extensions?: { code?: string } }[] };
  };
  const left = async () =>
    (await app.get(RateLimiterService).decide([{ key: 'shopper', scope: 'redeem', policy: REDEEM }], { peek: true })).decisions[0]!.remaining;

  it('gives back the answered mutations and counts the bad vouchers', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await redeem('GIFT')).data).toEqual({ redeem: 10 });
      await until(
        async () => (await left()) === 3,
        20_000,
        async () => `${await left()} left`,
      );
    }
    for (let i = 0; i < 3; i++) expect((await redeem('NOPE')).errors?.[0]?.extensions?.code).toBe('BAD_REQUEST');
    expect(await left()).toBe(0);
    expect((await redeem('GIFT')).errors?.[0]?.extensions?.code).toBe('TOO_MANY_REQUESTS');
  });
});
