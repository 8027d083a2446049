import { Body, Controller, HttpCode, HttpStatus, Inject, Post, UnauthorizedException } from '@nestjs/common';
import { RateLimit } from '../../../lib/index.js';
import { accountOf, parseLoginRequest } from './login-request.js';
import { LoginService } from './login.service.js';

const FIFTEEN_MINUTES_MS = 15 * 60_000;

@Controller('login')
export class LoginController {
  constructor(@Inject(LoginService) private readonly logins: LoginService) {}

  /**
   * 5 failed attempts per 15 minutes per account, then the account is locked out for 15 minutes.
   * Every attempt is charged up front; one that succeeds is given back once its response is sent
   * (countIf), so only failures count. The 6th attempt after 5 failures within 15 minutes is
   * refused (429) and starts the lockout; attempts during it are refused without extending it.
   */
  @Post()
  @HttpCode(HttpStatus.OK)
  @RateLimit({
    name: 'login',
    limit: 5,
    windowMs: FIFTEEN_MINUTES_MS,
    key: accountOf,
    countIf: (_ctx, outcome) => outcome.statusCode === HttpStatus.UNAUTHORIZED,
    blockMs: FIFTEEN_MINUTES_MS,
  })
  login(@Body() body: unknown): { account: string } {
    const request = parseLoginRequest(body);
    if (!this.logins.verify(request)) throw new UnauthorizedException('wrong account or password');
    return { account: request.account };
  }
}
