import { Module, type DynamicModule } from '@nestjs/common';
import { GraphQLModule } from '@nestjs/graphql';
import type { Platform } from '../platform.js';
import { QuotesModule } from '../quotes/quotes.module.js';
import { QuotesResolver } from './quotes.resolver.js';

/**
 * `POST /graphql`, schema built from the resolvers in memory: Apollo on Express, Mercurius on
 * Fastify. Each driver is imported only on its platform, so an app on one never loads the other.
 */
export async function sampleGraphQLModule(platform: Platform): Promise<DynamicModule> {
  const graphql =
    platform === 'express'
      ? // no stack traces in the answers: a refusal reads as { code, statusCode, retryAfterMs }
        GraphQLModule.forRoot({ driver: (await import('@nestjs/apollo')).ApolloDriver, autoSchemaFile: true, includeStacktraceInErrorResponses: false })
      : GraphQLModule.forRoot({ driver: (await import('@nestjs/mercurius')).MercuriusDriver, autoSchemaFile: true });
  return { module: SampleGraphQLModule, imports: [graphql, QuotesModule], providers: [QuotesResolver] };
}

@Module({})
export class SampleGraphQLModule {}
