import { ForbiddenException, Inject, Injectable, UnsupportedMediaTypeException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { DASHBOARD_OPTIONS, type ResolvedDashboardOptions } from './dashboard.options.js';
import { isJson, isSameOrigin } from './same-origin.js';

interface HttpRequest {
  method: string;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * Every dashboard request goes through the app's `canActivate` (403 when it says no); actions
 * (POST) also need the dashboard writable, a same-origin browser or none, and a JSON body.
 */
@Injectable()
export class DashboardGuard implements CanActivate {
  constructor(@Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (!(await this.options.canActivate(ctx))) throw new ForbiddenException('canActivate refused this dashboard request');
    const req = ctx.switchToHttp().getRequest<HttpRequest>();
    if (req.method === 'GET' || req.method === 'HEAD') return true;
    if (this.options.readOnly)
      throw new ForbiddenException('the dashboard is read-only (RedisLimitDashboardModule.register({ readOnly: false }) allows actions)');
    if (!isSameOrigin(req.headers)) throw new ForbiddenException('a dashboard action must come from the dashboard page itself (same origin)');
    if (!isJson(req.headers)) throw new UnsupportedMediaTypeException('a dashboard action takes a JSON body (Content-Type: application/json)');
    return true;
  }
}
