import { Controller, Get, Inject, Param, Query } from '@nestjs/common';
import { RateLimit, SkipRateLimit } from '../../../lib/index.js';
import { apiKey, MAX_BULK_SYMBOLS, parseSymbol, parseSymbols, symbolCount } from './quote-request.js';
import { QuotesService, type DailyClose, type Quote } from './quotes.service.js';

/**
 * Quotes are limited per client IP: 5 per 10 s on each route, exact over any 10 s span. Handlers
 * that declare their own limit replace this one; health is exempt.
 */
@Controller('quotes')
@RateLimit({ limit: 5, windowMs: 10_000, algorithm: 'sliding-window' })
export class QuotesController {
  constructor(@Inject(QuotesService) private readonly quotes: QuotesService) {}

  // Declared before ':symbol' so that 'health' is not taken for a ticker symbol.
  @Get('health')
  @SkipRateLimit()
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** `GET /quotes?symbols=ACME,GLOBEX`: 20 symbols per minute per IP, each symbol one permit. */
  @Get()
  @RateLimit({ limit: 2 * MAX_BULK_SYMBOLS, windowMs: 60_000, cost: symbolCount })
  bulk(@Query('symbols') symbols: unknown): Quote[] {
    return parseSymbols(symbols).map((symbol) => this.quotes.quote(symbol));
  }

  /** The controller's limit: the 6th quote within 10 s is a 429. */
  @Get(':symbol')
  quote(@Param('symbol') symbol: string): Quote {
    return this.quotes.quote(parseSymbol(symbol));
  }

  /** Per API key: bursts of 3 per second and 5 per minute, decided together. */
  @Get(':symbol/history')
  @RateLimit({ limit: 3, windowMs: 1_000, key: apiKey })
  @RateLimit({ limit: 5, windowMs: 60_000, key: apiKey })
  history(@Param('symbol') symbol: string): { symbol: string; closes: DailyClose[] } {
    const checked = parseSymbol(symbol);
    return { symbol: checked, closes: this.quotes.history(checked) };
  }
}
