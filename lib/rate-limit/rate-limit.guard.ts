import { Inject, Injectable, Logger, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { RedisConnection } from '../redis/redis-connection.js';
import { rateLimitHeaders } from './headers.js';
import { applyFailMode, setHeaders, tooManyRequests } from './http.js';
import { RateLimitPlans, resolveLimits, type RequestLimits } from './rate-limit.plans.js';
import { RateLimiterService } from './rate-limiter.service.js';
import { RouteLog } from './route-log.js';

/**
 * Applies a handler's @RateLimit and @Funnel declarations in one atomic decision. Attached by the
 * decorators; when several attach it to one route, the first to run decides for all.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  private readonly decided = new WeakSet<object>();
  private readonly log = new RouteLog(new Logger('RateLimitGuard'));

  constructor(
    @Inject(RateLimiterService) private readonly limiter: RateLimiterService,
    @Inject(RateLimitPlans) private readonly plans: RateLimitPlans,
    @Inject(RedisConnection) private readonly redis: RedisConnection,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (ctx.getType() !== 'http') return true;
    const http = ctx.switchToHttp();
    const request = http.getRequest<object>();
    if (this.decided.has(request)) return true;
    this.decided.add(request);

    const plan = this.plans.forRoute(ctx.getClass(), ctx.getHandler());
    if (plan === null) return true;
    let limits: RequestLimits;
    try {
      limits = await resolveLimits(plan, ctx, this.redis.options.tracker);
    } catch (error) {
      // the first failure of the stack answers the request, and is the one logged
      throw this.log.failure(plan.route, error);
    }

    let result;
    try {
      result = await this.limiter.decide(limits.stack);
    } catch (error) {
      applyFailMode(error, plan.failMode, this.redis, plan.route);
      return true;
    }
    this.redis.reportSuccess();

    const response = http.getResponse<unknown>();
    setHeaders(response, rateLimitHeaders(this.redis.options.headers, limits.policies, result.decisions));
    if (!result.allowed) throw tooManyRequests(response, result.retryAfterMs);
    return true;
  }
}
