import { Inject, Injectable, Logger, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { countRequest } from '../observability/counted-requests.js';
import { RedisConnection } from '../redis/redis-connection.js';
import type { KeyResolver } from '../transports/guard.options.js';
import { applyFailMode } from '../transports/responses.js';
import { DecisionEngine } from './decision-engine.js';
import type { StackDecision } from './decision.types.js';
import { Outcomes } from './outcome.js';
import { decideLocally } from './local/local-fail-mode.js';
import { RateLimitPlans, resolveLimits, type RequestLimits } from './rate-limit.plans.js';
import { RouteLog } from './route-log.js';
import { decideShadowed, reportShadowRefusal } from './shadow.js';
import { resolveSkip } from './skip-if.js';
import { openRoute, sendDecisionHeaders } from '../transports/guard-opening.js';
import { defaultKey, requireTransport, transportOf, userFailure } from '../transports/transport.adapter.js';

// Shared by every instance: the decorators' guards (one per module), the module's own, an
// APP_GUARD and subclasses are all instances, and a request is decided once whichever meets it.
const decided = new WeakSet<object>();
/** True when another guard has decided this request already; else marks it as decided here. */
const firstDecision = (req: object): boolean => decided.has(req) || (decided.add(req), false);

/**
 * Applies a handler's `@RateLimit` and `@Funnel` declarations and the module's defaultLimits in one
 * atomic decision. Attached by the decorators and, with defaultLimits, by the module; works as an
 * APP_GUARD too. Whichever runs first decides for all. Subclasses may override the protected hooks
 * (take extra providers by property injection and keep the inherited constructor).
 * @example
 * ```ts
 * @Injectable()
 * export class UserRateLimitGuard extends RateLimitGuard {
 *   protected override getTracker(ctx: ExecutionContext): string {
 *     return ctx.switchToHttp().getRequest().user?.id ?? 'anonymous';
 *   }
 * }
 * // providers: [{ provide: APP_GUARD, useClass: UserRateLimitGuard }]
 * ```
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  private readonly log = new RouteLog(new Logger('RateLimitGuard'));
  private readonly shadowLog = new RouteLog({ error: (message: string) => new Logger('RateLimitGuard').warn(message) });
  private readonly outcomes = new Outcomes(this.engine, this.log);
  /** The default key of limits without their own `key`. */
  private readonly tracker: KeyResolver = (ctx) => this.getTracker(ctx);
  /** The overridable hook, bound once rather than a closure per request. */
  private readonly requestResponse = (ctx: ExecutionContext) => this.getRequestResponse(ctx);

  constructor(
    @Inject(DecisionEngine) private readonly engine: DecisionEngine,
    @Inject(RateLimitPlans) private readonly plans: RateLimitPlans,
    @Inject(RedisConnection) private readonly redis: RedisConnection,
  ) {}

  /**
   * Decides the request's limits: true when granted, skipped, or Redis failed under failMode
   * 'open'. Sets the configured headers (and Retry-After on a refusal) first.
   * @throws whatever throwTooManyRequests throws on a refusal (default RateLimitException, 429);
   * a 503 of the transport under failMode 'closed' when Redis fails; an HttpException a `key`,
   * `cost`, `limit`, `windowMs` or `skipIf` function threw; else a 500 for a resolver that threw
   * or gave a bad value (logged at most once a minute per route). A socket.io message's
   * acknowledgement, if it has one, gets the refusal too.
   */
  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    try {
      return await this.decide(ctx);
    } catch (error) {
      transportOf(ctx)?.acknowledge?.(ctx, error);
      throw error;
    }
  }

  private async decide(ctx: ExecutionContext): Promise<boolean> {
    const opened = openRoute(ctx, this.plans, firstDecision, this.requestResponse);
    if (opened === undefined) return true;
    const { transport, req, res, plan } = opened;
    let limits: RequestLimits;
    try {
      if (await resolveSkip((c) => this.shouldSkip(c), ctx)) return true;
      limits = await resolveLimits(plan, ctx, this.tracker);
    } catch (error) {
      // the first failure of the stack answers the request, and is the one logged
      throw userFailure(transport, this.log.failure(plan.route, error));
    }

    let result;
    let local = false;
    try {
      const route = plan.route;
      // the plan was checked at start-up: straight to the engine, nothing checked again
      result = await decideShadowed({ decide: (stack, options) => this.engine.decide(stack, { ...options, route }) }, limits.stack, plan.limits);
      this.redis.reportSuccess();
      if (result.allowed) countRequest(req, result.shadowRefused.length > 0 ? 'shadow-refused' : 'allowed');
    } catch (error) {
      if (applyFailMode(error, plan.failMode, this.redis, plan.route, () => transport.unavailable()) === 'open') return true;
      // 'local': this process decides, shadows still never refuse, and refusals answer as Redis's do
      local = true;
      result = await decideShadowed({ decide: (stack) => decideLocally(this.redis, plan.route, stack) }, limits.stack, plan.limits);
    }

    sendDecisionHeaders(transport, res, this.redis.options.headers, limits.policies, result.decisions, result.allowed ? undefined : result.retryAfterMs);
    reportShadowRefusal(this.redis.events, this.shadowLog, plan.route, limits.stack, result);
    await this.outcomes.after({ ctx, route: plan.route, req, res, stack: limits.stack, limits: plan.limits, result, local });
    if (!result.allowed) await this.throwTooManyRequests(ctx, result);
    return true;
  }

  /** The key of limits without a `key` of their own: a non-empty string (anything else is a 500).
   * Default: the module's `tracker`, else the transport's (HTTP: the client IP, IPv6 masked to
   * `ipv6Subnet`). */
  protected getTracker(ctx: ExecutionContext): string | Promise<string> {
    return defaultKey(ctx, this.redis.options);
  }

  /** The request (what a decision is remembered by, so it is decided once) and the response
   * (what takes the headers). Default: the transport's (HTTP: Express or Fastify request and reply). */
  protected getRequestResponse(ctx: ExecutionContext): { req: object; res: unknown } {
    return requireTransport(ctx).getRequestResponse(ctx);
  }

  /** true: no limit applies to this request. Default: the module's `skipIf`, else false. A
   * result that is not a boolean is a 500; an HttpException thrown answers as itself. */
  protected shouldSkip(ctx: ExecutionContext): boolean | Promise<boolean> {
    return this.redis.options.skipIf?.(ctx) ?? false;
  }

  /** Answers a refused request (its headers, Retry-After included, are already set); must throw.
   * Default: RateLimitException, 429 `{ statusCode, message, retryAfterMs }` (GraphQL:
   * GraphQLLimitError; WebSocket: WsException; microservices: RpcException). */
  protected throwTooManyRequests(ctx: ExecutionContext, result: StackDecision): never | Promise<never> {
    throw requireTransport(ctx).tooManyRequests(result.retryAfterMs);
  }
}
