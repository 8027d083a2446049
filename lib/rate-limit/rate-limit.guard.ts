import {
  Inject,
  Injectable,
  InternalServerErrorException,
  Logger,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { RedisConnection } from '../redis/redis-connection.js';
import { rateLimitHeaders } from './headers.js';
import { applyFailMode, setHeaders, tooManyRequests } from './http.js';
import { RateLimitPlans, stackFor, type PlannedLimit, type RoutePlan } from './rate-limit.plans.js';
import { RateLimiterService } from './rate-limiter.service.js';

/**
 * Applies a handler's @RateLimit and @Funnel declarations in one atomic decision. Attached by the
 * decorators; when several attach it to one route, the first to run decides for all.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  private readonly decided = new WeakSet<object>();
  private readonly logger = new Logger('RateLimitGuard');

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
    const stack = await Promise.all(plan.limits.map(async (limit) => stackFor(limit, await this.keyOf(limit, ctx), this.costOf(limit, plan, ctx))));

    let result;
    try {
      result = await this.limiter.decide(stack);
    } catch (error) {
      applyFailMode(error, plan.failMode, this.redis, plan.route);
      return true;
    }
    this.redis.reportSuccess();

    const response = http.getResponse<unknown>();
    const policies = plan.limits.map((l) => ({ name: l.policyName, limit: l.spec.limit, windowMs: l.spec.windowMs }));
    setHeaders(response, rateLimitHeaders(this.redis.options.headers, policies, result.decisions));
    if (!result.allowed) throw tooManyRequests(response, result.retryAfterMs);
    return true;
  }

  private async keyOf(limit: PlannedLimit, ctx: ExecutionContext): Promise<string> {
    const key = await (limit.key ?? this.redis.options.tracker)(ctx);
    if (typeof key !== 'string' || key.length === 0) {
      // an absent key would pool every such request into one counter: refuse to guess
      throw this.misconfigured(`key resolved to ${JSON.stringify(key)}, not a non-empty string`, ctx);
    }
    return key;
  }

  private costOf(limit: PlannedLimit, plan: RoutePlan, ctx: ExecutionContext): number {
    const cost = typeof limit.cost === 'function' ? limit.cost(ctx) : limit.cost;
    if (!Number.isSafeInteger(cost) || cost <= 0 || cost > limit.spec.limit) {
      throw this.misconfigured(`cost resolved to ${cost}; it must be a positive integer <= ${limit.spec.limit}`, ctx, plan.route);
    }
    return cost;
  }

  private misconfigured(problem: string, ctx: ExecutionContext, route = `${ctx.getClass().name}.${ctx.getHandler().name}`) {
    this.logger.error(`${route}: ${problem}`);
    return new InternalServerErrorException();
  }
}
