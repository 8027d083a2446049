import { BadRequestException, type ExecutionContext } from '@nestjs/common';

export interface LoginRequest {
  account: string;
  password: string;
}

const MAX_FIELD = 200;

/** Checks a `POST /login` body; 400 unless it holds a non-empty account and password. */
export function parseLoginRequest(body: unknown): LoginRequest {
  const { account, password } = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof account !== 'string' || account.length === 0 || account.length > MAX_FIELD) {
    throw new BadRequestException(`account must be 1-${MAX_FIELD} characters`);
  }
  if (typeof password !== 'string' || password.length === 0 || password.length > MAX_FIELD) {
    throw new BadRequestException(`password must be 1-${MAX_FIELD} characters`);
  }
  return { account, password };
}

// The limit's guard runs before pipes: it validates the whole body, so a malformed login is a
// 400 that charges no account. Accounts are counted case-blind, as they log in.
export const accountOf = (ctx: ExecutionContext): string => parseLoginRequest(ctx.switchToHttp().getRequest<{ body?: unknown }>().body).account.toLowerCase();
