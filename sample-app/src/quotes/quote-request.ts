import { BadRequestException, UnauthorizedException, type ExecutionContext } from '@nestjs/common';

// Guards run before pipes, so limit keys and costs read the raw request (Express and Fastify
// expose headers and query the same way) and reject bad input themselves.

interface RawRequest {
  headers: Record<string, string | string[] | undefined>;
  query?: Record<string, unknown>;
}

const request = (ctx: ExecutionContext) => ctx.switchToHttp().getRequest<RawRequest>();

const SYMBOL = /^[A-Z][A-Z0-9.]{0,9}$/;
/** Most symbols one bulk request may ask for. */
export const MAX_BULK_SYMBOLS = 10;

export function parseSymbol(raw: string): string {
  const symbol = raw.toUpperCase();
  if (!SYMBOL.test(symbol)) throw new BadRequestException(`'${raw}' is not a ticker symbol`);
  return symbol;
}

/** `?symbols=ACME,GLOBEX` → ['ACME', 'GLOBEX']; 400 when empty, malformed or too many. */
export function parseSymbols(raw: unknown): string[] {
  if (typeof raw !== 'string' || raw.trim() === '') {
    throw new BadRequestException('symbols is required, e.g. ?symbols=ACME,GLOBEX');
  }
  const symbols = [...new Set(raw.split(',').map((s) => parseSymbol(s.trim())))];
  if (symbols.length > MAX_BULK_SYMBOLS) throw new BadRequestException(`at most ${MAX_BULK_SYMBOLS} symbols per request`);
  return symbols;
}

/** Cost of a bulk request: one permit per distinct symbol. */
export const symbolCount = (ctx: ExecutionContext): number => parseSymbols(request(ctx).query?.['symbols']).length;

/** History is limited per API key, whatever IP the caller uses. */
export const apiKey = (ctx: ExecutionContext): string => parseApiKey(request(ctx).headers['x-api-key']);

/** The caller's API key from its x-api-key header; 401 when missing or empty. */
export function parseApiKey(value: string | string[] | undefined): string {
  const key = Array.isArray(value) ? value[0] : value;
  if (!key) throw new UnauthorizedException('x-api-key header required');
  return key;
}
