import { Inject, type OnModuleInit, type Type } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { RedisConnection } from './redis/redis-connection.js';

/**
 * Per-handler plans of one kind of decorator, checked once: every controller's handlers when the
 * application starts, so a bad option fails `app.init()`; a controller discovery did not see
 * (e.g. registered late) on its first request. Subclasses say what a plan is.
 */
export abstract class RoutePlans<P> implements OnModuleInit {
  private readonly plans = new Map<Function, P>();
  /** Names the decorators in the start-up error, e.g. 'rate-limit'. */
  protected abstract readonly what: string;

  constructor(
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(RedisConnection) protected readonly redis: RedisConnection,
  ) {}

  /** Builds one handler's plan from its decorators; throws, naming `Controller.handler`, on bad options. */
  protected abstract compile(controller: Type, handler: Function): P;

  /** Compiles every controller handler; reports every bad one in a single error. */
  onModuleInit(): void {
    const problems: Error[] = [];
    for (const { metatype } of this.discovery.getControllers()) {
      if (typeof metatype !== 'function') continue;
      for (const method of this.scanner.getAllMethodNames(metatype.prototype)) {
        const handler = metatype.prototype[method] as Function;
        try {
          this.plans.set(handler, this.compile(metatype as Type, handler));
        } catch (error) {
          problems.push(error as Error);
        }
      }
    }
    if (problems.length === 0) return;
    // a RangeError only when every problem is a number out of range
    const kind = problems.every((problem) => problem instanceof RangeError) ? RangeError : TypeError;
    throw new kind(`Invalid ${this.what} options:\n  ${problems.map((problem) => problem.message).join('\n  ')}`);
  }

  /** The plan of a handler (null when its decorators ask for nothing). */
  forRoute(controller: Type, handler: Function): P {
    if (this.plans.has(handler)) return this.plans.get(handler)!;
    const plan = this.compile(controller, handler);
    this.plans.set(handler, plan);
    return plan;
  }
}
