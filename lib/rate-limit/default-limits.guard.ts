import { Inject, Injectable, type ExecutionContext } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import { RedisConnection } from '../redis/redis-connection.js';
import { RateLimitGuard } from './rate-limit.guard.js';
import { RateLimitPlans } from './rate-limit.plans.js';
import { RateLimiterService } from './rate-limiter.service.js';

// GUARDS_METADATA of @nestjs/common/constants (no public entry point; unchanged since Nest 5)
const GUARDS = '__guards__';

/**
 * The module's own APP_GUARD: brings defaultLimits to the routes no RateLimitGuard guards. It
 * stands aside for every route when the app has a global RateLimitGuard of its own (APP_GUARD or
 * useGlobalGuards, say a subclass with its own hooks), so that one decides; and for a route whose
 * decorators attach the guard, which then decides in its place among the route's guards (after
 * an auth guard that sets the user a `key` reads, as without defaults).
 *
 * Registered always: forRootAsync's options are not known when the module's providers are, and
 * without defaultLimits it costs one boolean per request.
 */
@Injectable()
export class DefaultLimitsGuard extends RateLimitGuard {
  private readonly active: boolean;
  private othersDecide: boolean | undefined;

  constructor(
    @Inject(RateLimiterService) limiter: RateLimiterService,
    @Inject(RateLimitPlans) plans: RateLimitPlans,
    @Inject(RedisConnection) redis: RedisConnection,
    @Inject(ApplicationConfig) private readonly config: ApplicationConfig,
  ) {
    super(limiter, plans, redis);
    const defaults = redis.options.defaultLimits;
    // anything but an array fails app.init() in RateLimitPlans
    this.active = !Array.isArray(defaults) || defaults.length > 0;
  }

  override async canActivate(ctx: ExecutionContext): Promise<boolean> {
    if (!this.active || this.appHasItsOwn() || guardedByDecorator(ctx)) return true;
    return super.canActivate(ctx);
  }

  // global guards are fixed once the routes are set up, before the first request
  private appHasItsOwn(): boolean {
    this.othersDecide ??=
      this.config.getGlobalGuards().some(isOtherRateLimitGuard) ||
      this.config.getGlobalRequestGuards().some((wrapper) => isOtherRateLimitGuard(wrapper.metatype));
    return this.othersDecide;
  }
}

/** A RateLimitGuard (class or instance) other than this one. */
function isOtherRateLimitGuard(guard: unknown): boolean {
  if (typeof guard === 'function') return guard === RateLimitGuard || (guard.prototype instanceof RateLimitGuard && guard !== DefaultLimitsGuard);
  return guard instanceof RateLimitGuard && !(guard instanceof DefaultLimitsGuard);
}

function guardedByDecorator(ctx: ExecutionContext): boolean {
  return [ctx.getHandler(), ctx.getClass()].some((target) => {
    const guards = Reflect.getMetadata(GUARDS, target) as unknown[] | undefined;
    return guards?.some(isOtherRateLimitGuard) === true;
  });
}
