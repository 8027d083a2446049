import { timingSafeEqual } from 'node:crypto';
import { Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';

/** The admin key when ADMIN_KEY is not set: fine for a demo, to be replaced anywhere else. */
export const DEMO_ADMIN_KEY = 'demo-admin-key';

interface AdminRequest {
  headers: Record<string, unknown>;
}

/** The key a request brings: the `x-admin-key` header (scripts), or the password of HTTP Basic
 * authentication (a browser, which asks for it once and sends it with every request after). */
function givenKey(headers: Record<string, unknown>): string {
  const header = headers['x-admin-key'];
  if (typeof header === 'string') return header;
  const basic = /^Basic ([A-Za-z0-9+/=]+)$/.exec(typeof headers['authorization'] === 'string' ? headers['authorization'] : '');
  if (basic === null) return '';
  const credentials = Buffer.from(basic[1]!, 'base64').toString('utf8');
  return credentials.slice(credentials.indexOf(':') + 1);
}

/** Admin routes and the dashboard: the admin key (ADMIN_KEY, read per request) or a 401 that
 * makes a browser ask for it (any user name, the key as password). */
@Injectable()
export class AdminKeyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const expected = Buffer.from(process.env['ADMIN_KEY'] || DEMO_ADMIN_KEY);
    const key = Buffer.from(givenKey(http.getRequest<AdminRequest>().headers));
    // compared in constant time: the key is a secret
    if (key.length === expected.length && timingSafeEqual(key, expected)) return true;
    // Express' res.header and Fastify's reply.header alike
    http.getResponse<{ header(name: string, value: string): unknown }>().header('WWW-Authenticate', 'Basic realm="admin", charset="UTF-8"');
    throw new UnauthorizedException('x-admin-key (or the Basic auth password) is missing or wrong');
  }
}
