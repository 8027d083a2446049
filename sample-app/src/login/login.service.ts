import { createHash, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { LoginRequest } from './login-request.js';

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Stands in for a user store: one demo account, alice / wonderland. */
const ACCOUNTS = new Map([['alice', digest('wonderland')]]);

@Injectable()
export class LoginService {
  /** Whether the password is the account's (compared in constant time). */
  verify({ account, password }: LoginRequest): boolean {
    const expected = ACCOUNTS.get(account.toLowerCase());
    return expected !== undefined && timingSafeEqual(expected, digest(password));
  }
}
