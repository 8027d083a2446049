import { Controller, Post, type ExecutionContext } from '@nestjs/common';
import { RateLimit } from '../../lib/index.js';
import { DAY_MS } from './fixed-windows.js';

// What the tests of named limits (resetLimit, explain) share: limits keyed by an account header,
// a tier picked by a plan header, and a login route with two limits of one name.

const header = (ctx: ExecutionContext, name: string) => ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers[name];

/** The request's `x-account` header ('none' without one): the limits' key. */
export const account = (ctx: ExecutionContext): string => header(ctx, 'x-account') ?? 'none';

/** Whether the request's `x-plan` header says 'pro': a user tier. */
export const isPro = (ctx: ExecutionContext): boolean => header(ctx, 'x-plan') === 'pro';

@Controller('auth')
export class LoginController {
  // two limits of one name on one route (two algorithms), a lockout on the first; a day's fixed
  // window, so none ends between the grants and the refusal a test expects
  @Post('login')
  @RateLimit({ name: 'login', limit: 2, windowMs: DAY_MS, algorithm: 'fixed-window', blockMs: 600_000, key: account })
  @RateLimit({ name: 'login', limit: 3, windowMs: 600_000, algorithm: 'token-bucket', key: account })
  login() {
    return 'ok';
  }
}
