import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import type { FailMode, KeyResolver } from '../transports/guard.options.js';
import type { RouteRef } from '../route-identity.js';
import { RoutePlans } from '../route-plans.js';
import { assertSlotName, DEFAULT_LEASE_MS } from '../rate-limit/slot-options.js';
import { loadRpcException } from '../transports/rpc.adapter.js';
import { loadWsException } from '../transports/ws.adapter.js';
import { MAX_CONCURRENT, type MaxConcurrentEntry } from './max-concurrent.metadata.js';
import { assertKnownOptions, assertPositiveInteger, assertTimerMs, describeValue } from '../validation.js';

/** A handler's concurrency cap, checked once at start-up. */
export interface MaxConcurrentPlan {
  route: string;
  limit: number;
  /** The slots' name; none: the handler's own (keyed by `scope`). */
  name: string | undefined;
  scope: string;
  key: KeyResolver | undefined;
  leaseMs: number;
  /** Where Redis cannot say: 'local' is taken as 'closed' (one process cannot keep a cap that
   * holds across instances). */
  failMode: Exclude<FailMode, 'local'>;
}

/**
 * Reads `@MaxConcurrent` of every handler when the application starts (a handler's replaces its
 * controller's), checks every option and keeps the result per (class, handler). A bad option makes
 * `app.init()` fail with `Controller.handler` in the message.
 */
@Injectable()
export class MaxConcurrentPlans extends RoutePlans<MaxConcurrentPlan | null> implements OnApplicationBootstrap {
  protected readonly what = '@MaxConcurrent';
  protected readonly decorators = '@MaxConcurrent';
  protected override readonly enhancer = 'interceptors';
  private kinds = new Set<string>();

  protected declaredOn(target: Function): boolean {
    return ((Reflect.getMetadata(MAX_CONCURRENT, target) as unknown[] | undefined) ?? []).length > 0;
  }

  protected compile(route: RouteRef): MaxConcurrentPlan | null {
    const plan = compile(route, this.redis.options.failMode, this.redis.options.tracker !== undefined);
    if (plan !== null && route.kind !== undefined) this.kinds.add(route.kind);
    return plan;
  }

  /** A capped microservice or gateway handler refuses with the app's RpcException or WsException. */
  async onApplicationBootstrap(): Promise<void> {
    if (this.kinds.has('rpc')) await loadRpcException();
    if (this.kinds.has('ws')) await loadWsException();
  }
}

function compile({ controller, handler, route, kind, scope }: RouteRef, moduleFailMode: FailMode, tracked: boolean): MaxConcurrentPlan | null {
  const own = (Reflect.getMetadata(MAX_CONCURRENT, handler) as MaxConcurrentEntry[] | undefined) ?? [];
  const entries = own.length > 0 ? own : ((Reflect.getMetadata(MAX_CONCURRENT, controller) as MaxConcurrentEntry[] | undefined) ?? []);
  if (entries.length === 0) return null;
  try {
    // two caps would take two slots per request, and free them alike: one is the same cap
    if (entries.length > 1) throw new TypeError('@MaxConcurrent is declared more than once; a route takes one cap');
    const plan = check(entries[0]!, moduleFailMode, scope);
    if (kind === 'rpc' && plan.key === undefined && !tracked) {
      throw new TypeError('@MaxConcurrent has no key, and microservice handlers have no default tracker; give it a key, or the module a tracker');
    }
    return { route, ...plan };
  } catch (error) {
    throw new (error instanceof RangeError ? RangeError : TypeError)(`${route}: ${(error as Error).message}`);
  }
}

const OPTION_NAMES = ['key', 'name', 'leaseMs'];

function check({ limit, options = {} }: MaxConcurrentEntry, moduleFailMode: FailMode, scope: string): Omit<MaxConcurrentPlan, 'route'> {
  assertPositiveInteger(limit, '@MaxConcurrent(limit)');
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`@MaxConcurrent(limit, options) takes an options object { key?, name?, leaseMs? }, got ${describeValue(options)}`);
  }
  assertKnownOptions(options, OPTION_NAMES, '@MaxConcurrent');
  const { key, name, leaseMs = DEFAULT_LEASE_MS } = options;
  if (key !== undefined && typeof key !== 'function') throw new TypeError(`@MaxConcurrent.key must be a function (ctx) => string, got ${describeValue(key)}`);
  assertSlotName(name, '@MaxConcurrent.name');
  assertTimerMs(leaseMs, 'a positive integer', '@MaxConcurrent.leaseMs');
  return { limit, name, scope, key, leaseMs, failMode: moduleFailMode === 'local' ? 'closed' : moduleFailMode };
}
