// The GraphQL rows' app (Apollo on Express, as the sample app serves it): the sample app's quote as
// three queries, with no guard, under @RateLimit, and under @nestjs/throttler's documented GraphQL
// set-up (a ThrottlerGuard whose getRequestResponse reads the GraphQL context, and a context that
// carries `res` for its headers), stored in Redis as the HTTP throttler row is. Loaded by
// http-app.ts only in the process that serves it, so the HTTP rows' apps never load GraphQL.
import { Inject, Injectable, Module, UseGuards, type DynamicModule, type ExecutionContext } from '@nestjs/common';
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Args, GqlExecutionContext, GraphQLModule, Query, Resolver } from '@nestjs/graphql';
import { Throttle, ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { Redis } from 'ioredis';
import { RateLimit, RedisLimitModule } from '../lib/index.js';
import { QuoteModel } from '../sample-app/src/graphql/quote.model.js';
import { parseSymbol } from '../sample-app/src/quotes/quote-request.js';
import { QuotesService } from '../sample-app/src/quotes/quotes.service.js';

/** The queries the GraphQL rows load, one field each, answered alike. */
export const GRAPHQL_QUERIES = ['plainQuote', 'rateLimitedQuote', 'throttledQuote'] as const;
export type GraphQLQuery = (typeof GRAPHQL_QUERIES)[number];

/** The POST body of one row's request: the field aliased to `quote`, so every answer is the same
 * size. */
export const graphqlBody = (query: GraphQLQuery, symbol: string) =>
  JSON.stringify({ query: `{ quote: ${query}(symbol: "${symbol}") { symbol price currency asOf } }` });

@Injectable()
class GqlThrottlerGuard extends ThrottlerGuard {
  protected override getRequestResponse(context: ExecutionContext) {
    const gql = GqlExecutionContext.create(context).getContext<{ req: Record<string, unknown>; res: Record<string, unknown> }>();
    return { req: gql.req, res: gql.res };
  }
}

export function graphqlBenchModule(redis: { host: string; port: number }, limit: number, windowMs: number): DynamicModule {
  @Resolver(() => QuoteModel)
  class QuoteQueries {
    constructor(@Inject(QuotesService) private readonly quotes: QuotesService) {}

    @Query(() => QuoteModel)
    plainQuote(@Args('symbol', { type: () => String }) symbol: string): QuoteModel {
      return this.quotes.quote(parseSymbol(symbol));
    }

    // fixed window, as the throttler counts
    @Query(() => QuoteModel)
    @RateLimit({ limit, windowMs, algorithm: 'fixed-window' })
    rateLimitedQuote(@Args('symbol', { type: () => String }) symbol: string): QuoteModel {
      return this.quotes.quote(parseSymbol(symbol));
    }

    @Query(() => QuoteModel)
    @UseGuards(GqlThrottlerGuard)
    @Throttle({ default: { limit, ttl: windowMs } })
    throttledQuote(@Args('symbol', { type: () => String }) symbol: string): QuoteModel {
      return this.quotes.quote(parseSymbol(symbol));
    }
  }

  return {
    module: GraphQLBenchModule,
    imports: [
      GraphQLModule.forRoot<ApolloDriverConfig>({
        driver: ApolloDriver,
        autoSchemaFile: true,
        // the throttler's guard sets its headers on `res`, which Apollo's default context lacks
        context: ({ req, res }: { req: unknown; res: unknown }) => ({ req, res }),
      }),
      RedisLimitModule.forRoot({ redis }),
      ThrottlerModule.forRoot({
        throttlers: [{ limit, ttl: windowMs }],
        storage: new ThrottlerStorageRedisService(new Redis(redis)),
      }),
    ],
    providers: [QuotesService, QuoteQueries],
  };
}

@Module({})
class GraphQLBenchModule {}
