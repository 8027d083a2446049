// The sample app's quote route under `path`, with the decorators a bench row puts on it (none, a
// limiter's, a guard's): every HTTP row serves the same handler.
import { applyDecorators, Controller, Get, Inject, Param, type Type } from '@nestjs/common';
import { parseSymbol } from '../../sample-app/src/quotes/quote-request.js';
import { QuotesService, type Quote } from '../../sample-app/src/quotes/quotes.service.js';

export function quoteController(path: string, ...decorators: (ClassDecorator | MethodDecorator)[]): Type {
  @Controller(path)
  class QuoteController {
    constructor(@Inject(QuotesService) private readonly quotes: QuotesService) {}
    @Get(':symbol')
    @applyDecorators(...decorators)
    quote(@Param('symbol') symbol: string): Quote {
      return this.quotes.quote(parseSymbol(symbol));
    }
  }
  // Nest names controllers in its errors by class name
  Object.defineProperty(QuoteController, 'name', { value: `QuoteController(${path})` });
  return QuoteController;
}
