import { Inject, type OnModuleInit, type Type } from '@nestjs/common';
import { DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';
import { RedisConnection } from './redis/redis-connection.js';
import { isFieldResolver } from './handler-kind.js';
import { modulePathOf, routeRef, type RouteRef } from './route-identity.js';
import { problemsError } from './validation.js';

/**
 * Per-route plans of one kind of decorator, checked once: every controller's handlers when the
 * application starts, so a bad option fails `app.init()`; a controller discovery did not see
 * (e.g. registered late) on its first request. Subclasses say what a plan is.
 *
 * A plan belongs to a (class, handler) pair, not to the handler: controllers that inherit one
 * handler from a base class each keep their own decorators.
 */
/** @nestjs/graphql's token for its module options (GRAPHQL_MODULE_OPTIONS). */
const GRAPHQL_MODULE_OPTIONS = 'GqlModuleOptions';

const NOT_A_HANDLER = 'it is not an HTTP route, a GraphQL resolver, a WebSocket message handler or a microservice handler';

export abstract class RoutePlans<P> implements OnModuleInit {
  private readonly plans = new Map<Function, Map<Function, P>>();
  /** Names the decorators in the start-up error, e.g. 'rate-limit'. */
  protected abstract readonly what: string;

  constructor(
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(ModulesContainer) private readonly modules: ModulesContainer,
    @Inject(RedisConnection) protected readonly redis: RedisConnection,
  ) {}

  /** Builds one route's plan from its decorators; throws, naming `Controller.handler`, on bad options. */
  protected abstract compile(route: RouteRef): P;

  /** The decorators, as start-up errors name them, e.g. '@MaxPending'. */
  protected abstract readonly decorators: string;
  /** Whether `target` (a class or a method) carries one of them. */
  protected abstract declaredOn(target: Function): boolean;

  /**
   * Compiles every handler of every controller and provider (resolvers, gateways); reports every
   * bad one in a single error. A decorator on a method no transport calls, or on a class with no
   * such method, cannot take effect: that is an error too, never silently ignored.
   */
  onModuleInit(): void {
    const problems: Error[] = [];
    const applicationId = (this.modules as { applicationId?: string }).applicationId;
    const seen = new Set<Function>();
    for (const { metatype, host } of [...this.discovery.getControllers(), ...this.discovery.getProviders()]) {
      if (typeof metatype !== 'function' || seen.has(metatype)) continue;
      seen.add(metatype);
      const modulePath = modulePathOf(host?.metatype, applicationId);
      let handlers = 0;
      const prototype = metatype.prototype as Record<string, unknown>;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const handler = prototype[method] as Function;
        const route = routeRef(metatype as Type, handler, modulePath);
        try {
          if (route.kind === undefined) {
            if (this.declaredOn(handler)) throw new TypeError(`${route.route}: ${this.decorators} cannot take effect here: ${NOT_A_HANDLER}`);
            continue;
          }
          handlers += 1;
          if (isFieldResolver(handler) && this.declaredOn(handler) && !this.fieldEnhanced()) {
            throw new TypeError(
              `${route.route}: ${this.decorators} cannot take effect on a @ResolveField unless GraphQLModule's fieldResolverEnhancers includes '${this.enhancer}'`,
            );
          }
          this.remember(metatype as Type, handler, this.compile(route));
        } catch (error) {
          problems.push(error as Error);
        }
      }
      if (handlers === 0 && this.declaredOn(metatype)) {
        problems.push(
          new TypeError(`${metatype.name}: ${this.decorators} cannot take effect here: it has no method that ${NOT_A_HANDLER.replace(/^it is not/, 'is')}`),
        );
      }
    }
    if (problems.length > 0) throw problemsError(`Invalid ${this.what} options`, problems);
  }

  /** What the decorators attach, which a field resolver runs only where GraphQLModule says so. */
  protected readonly enhancer: 'guards' | 'interceptors' = 'guards';

  /** Whether the app's GraphQL module runs `enhancer` on field resolvers (its options provider,
   * found by Nest's token, so @nestjs/graphql is never imported). */
  private fieldEnhanced(): boolean {
    for (const module of this.modules.values()) {
      const options = module.providers.get(GRAPHQL_MODULE_OPTIONS)?.instance as { fieldResolverEnhancers?: unknown } | undefined;
      if (options !== undefined) return Array.isArray(options.fieldResolverEnhancers) && options.fieldResolverEnhancers.includes(this.enhancer);
    }
    return false;
  }

  /** The plan of a route (null when its decorators ask for nothing). */
  forRoute(controller: Type, handler: Function): P {
    const known = this.plans.get(controller);
    if (known?.has(handler)) return known.get(handler)!;
    const plan = this.compile(routeRef(controller, handler));
    this.remember(controller, handler, plan);
    return plan;
  }

  private remember(controller: Function, handler: Function, plan: P): void {
    let handlers = this.plans.get(controller);
    if (handlers === undefined) this.plans.set(controller, (handlers = new Map<Function, P>()));
    handlers.set(handler, plan);
  }
}
