import { Inject } from '@nestjs/common';
import { MessageBody, SubscribeMessage, WebSocketGateway, WsException } from '@nestjs/websockets';
import { RateLimit } from '../../../lib/index.js';
import { QuotesService, type Quote } from '../quotes/quotes.service.js';

const SYMBOL = /^[A-Z][A-Z0-9.]{0,9}$/;

/**
 * Quotes over WebSocket at `/ws` (the `ws` adapter): send `{"event":"quote","data":{"symbol":"ACME"}}`,
 * get `{"event":"quote","data":{...}}`. A refusal is Nest's `exception` event with
 * `{ statusCode: 429, message: 'Too Many Requests', retryAfterMs }`; the socket stays open.
 */
@WebSocketGateway({ path: '/ws' })
export class QuotesGateway {
  constructor(@Inject(QuotesService) private readonly quotes: QuotesService) {}

  /** 5 per 10 s per client address, beside the app's default (named, so the default stays). */
  @SubscribeMessage('quote')
  @RateLimit({ name: 'ws-quote', limit: 5, windowMs: 10_000, algorithm: 'sliding-window' })
  quote(@MessageBody() body: unknown): { event: 'quote'; data: Quote } {
    const raw = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['symbol'] : undefined;
    const symbol = typeof raw === 'string' ? raw.toUpperCase() : '';
    if (!SYMBOL.test(symbol)) throw new WsException(`${JSON.stringify(raw ?? null)} is not a ticker symbol`);
    return { event: 'quote', data: this.quotes.quote(symbol) };
  }
}
