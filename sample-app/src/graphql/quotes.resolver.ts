import { randomUUID } from 'node:crypto';
import { Inject } from '@nestjs/common';
import { Args, Float, Mutation, Query, Resolver } from '@nestjs/graphql';
import { RateLimit } from '../../../lib/index.js';
import { parseSymbol } from '../quotes/quote-request.js';
import { QuotesService } from '../quotes/quotes.service.js';
import { PriceAlertModel, QuoteModel } from './quote.model.js';

/**
 * The quotes over GraphQL. Each field's own limit is named, so the app's unnamed default (100 per
 * minute per IP) still applies beside it: a refusal is an entry of `errors` with
 * `extensions: { code: 'TOO_MANY_REQUESTS', retryAfterMs }`.
 */
@Resolver(() => QuoteModel)
export class QuotesResolver {
  constructor(@Inject(QuotesService) private readonly quotes: QuotesService) {}

  /** 5 per 10 s per IP, like `GET /quotes/:symbol`: the 6th within 10 s is refused. */
  @Query(() => QuoteModel)
  @RateLimit({ name: 'graphql-quote', limit: 5, windowMs: 10_000, algorithm: 'sliding-window' })
  quote(@Args('symbol', { type: () => String }) symbol: string): QuoteModel {
    return this.quotes.quote(parseSymbol(symbol));
  }

  /** 5 alerts per minute per IP. */
  @Mutation(() => PriceAlertModel)
  @RateLimit({ name: 'graphql-alert', limit: 5, windowMs: 60_000 })
  createAlert(@Args('symbol', { type: () => String }) symbol: string, @Args('price', { type: () => Float }) price: number): PriceAlertModel {
    return { id: randomUUID(), symbol: parseSymbol(symbol), price };
  }
}
