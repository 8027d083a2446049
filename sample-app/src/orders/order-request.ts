import { BadRequestException, type ExecutionContext } from '@nestjs/common';

export interface OrderRequest {
  item: string;
  /** A positive integer; default 1. */
  quantity: number;
}

const MAX_ITEM = 200;

/** Checks a `POST /orders` body; 400 unless it holds a non-empty item and, if any, a positive integer quantity. */
export function parseOrderRequest(body: unknown): OrderRequest {
  const { item, quantity = 1 } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof item !== 'string' || item.trim().length === 0 || item.length > MAX_ITEM) {
    throw new BadRequestException(`item must be 1-${MAX_ITEM} characters`);
  }
  if (typeof quantity !== 'number' || !Number.isSafeInteger(quantity) || quantity <= 0) {
    throw new BadRequestException('quantity must be a positive integer');
  }
  return { item, quantity };
}

/** The caller's user id (a stand-in for authentication); 400 when the header is missing or empty. */
export function parseUserId(header: string | string[] | undefined): string {
  const userId = Array.isArray(header) ? header[0] : header;
  if (!userId) throw new BadRequestException('x-user-id header required');
  return userId;
}

// The cap's guard runs before pipes: it reads the raw header (Express and Fastify alike).
export const userIdOf = (ctx: ExecutionContext): string =>
  parseUserId(ctx.switchToHttp().getRequest<{ headers: Record<string, string | string[] | undefined> }>().headers['x-user-id']);
