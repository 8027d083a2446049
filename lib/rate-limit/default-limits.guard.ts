import { Inject, Injectable, type ExecutionContext } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import { RedisConnection } from '../redis/redis-connection.js';
import { DecisionEngine } from './decision-engine.js';
import { RateLimitGuard } from './rate-limit.guard.js';
import { RateLimitPlans } from './rate-limit.plans.js';

// GUARDS_METADATA of @nestjs/common/constants (no public entry point; unchanged since Nest 5)
const GUARDS = '__guards__';

/** The app's own global RateLimitGuards (APP_GUARD or useGlobalGuards, say a subclass with its
 * own hooks): `first` is the first instance Nest runs, `any` counts request-scoped ones too. */
interface AppGuards {
  first: RateLimitGuard | undefined;
  any: boolean;
}

/**
 * The module's own APP_GUARD: brings defaultLimits to the routes no other RateLimitGuard decides.
 * It stands aside for every route when the app has a global RateLimitGuard of its own: wherever
 * this one runs, as a global guard, that one runs too (Nest runs an app's global guards together),
 * in the place the app gave it. And for a route whose decorators attach the guard, which then
 * decides in its place among the route's guards (after an auth guard that sets the user a `key`
 * reads, as without defaults).
 *
 * Registered always: forRootAsync's options are not known when the module's providers are, and
 * without defaultLimits it costs one boolean per request.
 */
@Injectable()
export class DefaultLimitsGuard extends RateLimitGuard {
  private readonly active: boolean;
  private appGuards: AppGuards | undefined;

  constructor(
    @Inject(DecisionEngine) engine: DecisionEngine,
    @Inject(RateLimitPlans) plans: RateLimitPlans,
    @Inject(RedisConnection) redis: RedisConnection,
    @Inject(ApplicationConfig) private readonly config: ApplicationConfig,
  ) {
    super(engine, plans, redis);
    const defaults = redis.options.defaultLimits;
    // anything but an array fails app.init() in RateLimitPlans
    this.active = !Array.isArray(defaults) || defaults.length > 0;
  }

  override async canActivate(ctx: ExecutionContext): Promise<boolean> {
    return this.appRateLimitGuards().any ? true : this.decideDefaults(ctx);
  }

  /** The defaults of a route no decorator attaches the guard to, decided here. */
  protected async decideDefaults(ctx: ExecutionContext): Promise<boolean> {
    if (!this.active || guardedByDecorator(ctx)) return true;
    return super.canActivate(ctx);
  }

  // global guards are fixed once the routes are set up, before the first request
  protected appRateLimitGuards(): AppGuards {
    this.appGuards ??= {
      first: this.config.getGlobalGuards().find((guard): guard is RateLimitGuard => typeof guard === 'object' && isOtherRateLimitGuard(guard)),
      any:
        this.config.getGlobalGuards().some(isOtherRateLimitGuard) ||
        this.config.getGlobalRequestGuards().some((wrapper) => isOtherRateLimitGuard(wrapper.metatype)),
    };
    return this.appGuards;
  }
}

/**
 * The guard GatewayEnhancers puts first on every gateway class, where Nest 11 runs none of the
 * app's global guards (Nest 12 runs them first, and this then finds the message decided: a
 * request is decided once). It stands in for them, never aside on a guess that they run: the
 * app's own global RateLimitGuard decides the message (its hooks: tracker, refusal), as it does
 * on Nest 12; without one, the module's defaults do, as its APP_GUARD would.
 */
export class GatewayDefaultLimitsGuard extends DefaultLimitsGuard {
  override async canActivate(ctx: ExecutionContext): Promise<boolean> {
    // a request-scoped one has no instance outside a request's context: the defaults decide
    return this.appRateLimitGuards().first?.canActivate(ctx) ?? this.decideDefaults(ctx);
  }
}

/** A RateLimitGuard (class or instance) other than the module's own. */
function isOtherRateLimitGuard(guard: unknown): boolean {
  const instance: unknown = typeof guard === 'function' ? guard.prototype : guard;
  return (guard === RateLimitGuard || instance instanceof RateLimitGuard) && guard !== DefaultLimitsGuard && !(instance instanceof DefaultLimitsGuard);
}

function guardedByDecorator(ctx: ExecutionContext): boolean {
  return [ctx.getHandler(), ctx.getClass()].some((target) => {
    const guards = Reflect.getMetadata(GUARDS, target) as unknown[] | undefined;
    return guards?.some(isOtherRateLimitGuard) === true;
  });
}
