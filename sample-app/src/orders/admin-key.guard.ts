import { timingSafeEqual } from 'node:crypto';
import { Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';

/** The admin key when ADMIN_KEY is not set: fine for a demo, to be replaced anywhere else. */
export const DEMO_ADMIN_KEY = 'demo-admin-key';

/** Admin routes: the `x-admin-key` header must equal ADMIN_KEY (read per request), else 401. */
@Injectable()
export class AdminKeyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const given = context.switchToHttp().getRequest<{ headers: Record<string, unknown> }>().headers['x-admin-key'];
    const expected = Buffer.from(process.env['ADMIN_KEY'] || DEMO_ADMIN_KEY);
    const key = Buffer.from(typeof given === 'string' ? given : '');
    // compared in constant time: the key is a secret
    if (key.length !== expected.length || !timingSafeEqual(key, expected)) throw new UnauthorizedException('x-admin-key is missing or wrong');
    return true;
  }
}
