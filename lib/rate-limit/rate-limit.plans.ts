import { Inject, Injectable, type ExecutionContext } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { assertFailMode, type FailMode, type KeyResolver } from '../transports/guard.options.js';
import type { RouteRef } from '../route-identity.js';
import { RoutePlans } from '../route-plans.js';
import { checkedLimit, type CheckedLimit } from './checked-limit.js';
import { DecisionEngine } from './decision-engine.js';
import { defaultEntries, withDefaults } from './default-limits.js';
import type { HeaderPolicy } from '../transports/headers.js';
import { overrideForRequest, type KeyedOverrides } from './overrides.js';
import type { LimitOverride } from './overrides-policy.js';
import { assertPermits, funnelSpec, KIND_NAMES, type LimitSpec } from './policy.js';
import { RATE_LIMITS, SKIP_RATE_LIMIT, type CostResolver, type CountIf, type LimitEntry, type RateLimitOptions } from './rate-limit.metadata.js';
import { isFixed, resolveSpec, tieredSpec, type TieredSpec } from './tier.js';
import { checkCost, costOf, resolveKey, UserFunctionError } from './user-functions.js';
import { loadRpcException } from '../transports/rpc.adapter.js';
import { loadWsException } from '../transports/ws.adapter.js';
import { assertKnownOptions, assertPositiveInteger, describeValue } from '../validation.js';

/** One checked limit of a route. */
export interface PlannedLimit {
  /** Checked; a `limit` or `windowMs` function (user tiers) is resolved per request. */
  spec: TieredSpec;
  /** The counter's scope: the shared name, or the route (method, path, class and handler).
   * Redis keys add the algorithm and window, so a changed `limit` keeps the counter. */
  scope: string;
  /** The shared name, also the policy's name in RateLimit-Policy headers. */
  name: string | undefined;
  /** How errors name it, e.g. `@RateLimit(#2)`. */
  at: string;
  key: KeyResolver | undefined;
  cost: CostResolver;
  isFunnel: boolean;
  /** Decides after the response whether the charge stands (see outcome.ts). */
  countIf: CountIf | undefined;
  /** A refusal by this limit blocks its key this long (ms). */
  blockMs: number | undefined;
  /** Decided and counted, never refuses. */
  shadow: boolean;
  /** Another limit of the route has its name and kind: an override's window would merge them. */
  keepWindow: boolean;
}

/** Everything the guard needs for one handler, checked once at start-up. */
export interface RoutePlan {
  route: string;
  limits: PlannedLimit[];
  failMode: FailMode;
  /** The runtime overrides in force, by name (RateLimiterService.setOverride). */
  overrides: ReadonlyMap<string, LimitOverride>;
  /** The per-key ones, by name then key: they beat the name's. */
  keyed: KeyedOverrides;
}

/**
 * Reads `@RateLimit` / `@Funnel` / `@SkipRateLimit` of every controller when the application starts,
 * merges handler and class declarations, checks every option and keeps the result per (class, handler).
 * A bad option makes `app.init()` fail with `Controller.handler` in the message.
 */
@Injectable()
export class RateLimitPlans extends RoutePlans<RoutePlan | null> {
  protected readonly what = 'rate-limit';
  protected readonly decorators = '@RateLimit / @Funnel';

  @Inject(DecisionEngine) private readonly engine!: DecisionEngine;
  @Inject(HttpAdapterHost) private readonly http!: HttpAdapterHost;

  protected declaredOn(target: Function): boolean {
    return ((Reflect.getMetadata(RATE_LIMITS, target) as unknown[] | undefined) ?? []).length > 0;
  }

  private defaultLimits: LimitEntry[] | undefined;
  /** Some microservice handler has limits. */
  private rpcLimited = false;
  /** Some gateway message handler has limits (its own or defaultLimits). */
  private wsLimited = false;

  /** The defaults first: a bad one fails app.init() once, named `defaultLimits[i]`, not per route. */
  override onModuleInit(): void {
    this.defaults();
    super.onModuleInit();
  }

  protected compile(route: RouteRef): RoutePlan | null {
    const plan = this.declared(compile(route, this.redis.options.failMode, this.defaults(), this.redis.options.shadow, this.engine.overrides));
    if (plan !== null && route.kind === 'rpc') {
      if (this.redis.options.tracker === undefined && this.guardReaches(route)) assertKeyed(plan);
      this.rpcLimited = true;
    }
    if (plan !== null && route.kind === 'ws') this.wsLimited = true;
    return plan;
  }

  /**
   * Whether a guard surely decides this microservice handler, so its limits are checked at start-up:
   * its decorators' guard, or the app's global guards in a microservice app (no HTTP server), where
   * they are its microservice's. A hybrid app gives them to a microservice only with
   * `inheritAppConfig: true`, which no provider can see: there a default that does reach an
   * undecorated handler fails its messages instead, and one that does not stops nothing.
   */
  private guardReaches(route: RouteRef): boolean {
    return this.declaredOn(route.handler) || this.declaredOn(route.controller) || this.http.httpAdapter == null;
  }

  /** A limited microservice or gateway handler refuses with the app's RpcException or WsException:
   * loaded before the first message, as a refusal is said synchronously. */
  async onApplicationBootstrap(): Promise<void> {
    if (this.rpcLimited) await loadRpcException();
    if (this.wsLimited) await loadWsException();
  }

  /** The module's defaultLimits, checked on their own as the stack of a route without decorators. */
  private defaults(): LimitEntry[] {
    if (this.defaultLimits === undefined) {
      const entries = defaultEntries(this.redis.options.defaultLimits);
      this.declared(compile(DEFAULTS_ROUTE, this.redis.options.failMode, entries, this.redis.options.shadow, this.engine.overrides));
      this.defaultLimits = entries;
    }
    return this.defaultLimits;
  }

  /** Tells the overrides which names the plan's limits carry, and how they meet an override. */
  private declared(plan: RoutePlan | null): RoutePlan | null {
    for (const limit of plan?.limits ?? []) {
      if (limit.name === undefined) continue;
      this.engine.overrides.declare(limit.name, {
        at: `${plan!.route}: ${limit.at}`,
        kind: limit.spec.kind,
        limit: typeof limit.spec.limit === 'number' ? limit.spec.limit : undefined,
        windowMs: typeof limit.spec.windowMs === 'number' ? limit.spec.windowMs : undefined,
        cost: typeof limit.cost === 'number' ? limit.cost : undefined,
        keepWindow: limit.keepWindow,
      });
    }
    return plan;
  }
}

// There is no default tracker for RPC: a microservice message carries no address of its sender.
function assertKeyed(plan: RoutePlan): void {
  const keyless = plan.limits.find((limit) => limit.key === undefined);
  if (keyless !== undefined) {
    throw new TypeError(`${plan.route}: ${keyless.at} has no key, and microservice handlers have no default tracker; give it a key, or the module a tracker`);
  }
}

/** Where defaultLimits are checked: errors read `RedisLimitModule: defaultLimits[0].limit ...`. */
const DEFAULTS_ROUTE: RouteRef = {
  controller: class RedisLimitModuleDefaults {},
  handler: function defaultLimits() {},
  route: 'RedisLimitModule',
  scope: 'defaultLimits',
};

/** One request's limits: what DecisionEngine.decide takes (checked: the plan was at start-up, and
 * what the request resolved is checked here), and the policies the headers name. */
export interface RequestLimits {
  stack: CheckedLimit[];
  policies: HeaderPolicy[];
}

/**
 * A plan's limits for one request: each one's numbers (user tiers), key and permits. A user
 * function's failure rejects with a UserFunctionError, or with the HttpException it threw.
 */
export async function resolveLimits(plan: RoutePlan, ctx: ExecutionContext, tracker: KeyResolver): Promise<RequestLimits> {
  // no override anywhere: not one lookup
  const overrides = plan.overrides.size === 0 && plan.keyed.size === 0 ? undefined : plan;
  let overridden = false;
  const resolved = await Promise.all(
    plan.limits.map(async (limit) => {
      let spec = isFixed(limit.spec) ? limit.spec : await resolveSpec(limit.spec, limit.at, ctx);
      const key = await resolveKey('key', limit.key ?? tracker, ctx);
      const cost = costOf(limit.cost, ctx);
      if (overrides !== undefined && limit.name !== undefined) {
        // checked against what this request resolved (a tier, a cost function), as setOverride
        // checks what is known at start-up: an override that does not fit gives way to the
        // name's, and that to the declared spec
        const target = { at: `${plan.route}: ${limit.at}`, keepWindow: limit.keepWindow };
        const own = overrides.keyed.get(limit.name)?.get(key);
        const named = overrides.overrides.get(limit.name);
        const applied =
          (own === undefined ? undefined : overrideForRequest(limit.name, target, spec, own, cost)) ??
          (named === undefined ? undefined : overrideForRequest(limit.name, target, spec, named, cost));
        if (applied !== undefined) {
          spec = applied;
          overridden = true;
        }
      }
      return { limit, spec, key, permits: checkCost(cost, spec.limit) };
    }),
  );
  if (plan.limits.some((limit) => typeof limit.spec.windowMs === 'function')) assertResolvedCounters(resolved);
  return {
    stack: resolved.map(({ limit, spec, key, permits }) => checkedLimit(key, limit.scope, spec, permits)),
    policies: (overridden ? undefined : fixedPolicies.get(plan)) ?? headerPolicies(plan, resolved, !overridden),
  };
}

/** The policies of a plan without tiers are the same for every request: named once (an
 * override's are named per request). */
const fixedPolicies = new WeakMap<RoutePlan, HeaderPolicy[]>();

function headerPolicies(plan: RoutePlan, resolved: readonly { limit: PlannedLimit; spec: LimitSpec }[], declared: boolean): HeaderPolicy[] {
  const names = policyNames(resolved.map(({ limit, spec }) => ({ name: limit.name, spec })));
  const policies = resolved.map(({ spec }, i) => ({ name: names[i]!, limit: spec.limit, windowMs: spec.windowMs }));
  if (declared && plan.limits.every((limit) => isFixed(limit.spec))) fixedPolicies.set(plan, policies);
  return policies;
}

function compile(
  { controller, handler, route, scope }: RouteRef,
  moduleFailMode: FailMode,
  defaults: readonly LimitEntry[],
  moduleShadow: boolean,
  overrides: { table: ReadonlyMap<string, LimitOverride>; keyed: KeyedOverrides },
): RoutePlan | null {
  const own = (Reflect.getMetadata(RATE_LIMITS, handler) as LimitEntry[] | undefined) ?? [];
  const inherited = (Reflect.getMetadata(RATE_LIMITS, controller) as LimitEntry[] | undefined) ?? [];
  const skip: unknown = Reflect.getMetadata(SKIP_RATE_LIMIT, handler) ?? (own.length === 0 && Reflect.getMetadata(SKIP_RATE_LIMIT, controller));
  if (skip === true) return null;

  // handler wins: a class-level limit gives way to a handler-level one of the same name
  // (unnamed ones give way to any unnamed handler-level limit)
  const ownNames = new Set(own.map((entry) => entry.options?.name));
  const entries = withDefaults([...own, ...inherited.filter((entry) => !ownNames.has(entry.options?.name))], defaults);
  if (entries.length === 0) return null;

  try {
    const limits = entries.map((entry, i) => plan(entry, scope, i, moduleShadow));
    assertOwnCounters(limits);
    for (const limit of limits) {
      limit.keepWindow =
        limit.name !== undefined && limits.some((other) => other !== limit && other.name === limit.name && other.spec.kind === limit.spec.kind);
    }
    const modes = entries.map((entry) => entry.options?.failMode ?? moduleFailMode);
    // the strictest mode of the stack decides it: closed, then local, then open
    const failMode = modes.includes('closed') ? 'closed' : modes.includes('local') ? 'local' : 'open';
    return { route, limits, failMode, overrides: overrides.table, keyed: overrides.keyed };
  } catch (error) {
    throw new (error instanceof RangeError ? RangeError : TypeError)(`${route}: ${(error as Error).message}`);
  }
}

/** The options each decorator takes: anything else (a misspelt `failmode`) is refused. */
const OPTION_NAMES = {
  rate: ['limit', 'windowMs', 'algorithm', 'key', 'cost', 'name', 'failMode', 'countIf', 'blockMs', 'shadow'],
  funnel: ['capacity', 'leakingDurationMs', 'quota', 'key', 'name', 'failMode'],
} as const;

// A counter is its scope, algorithm (the key's kind) and window: two limits of a route on one
// counter would each charge it, and the tighter would silently decide for both. A window that is a
// function is known per request only: checked then (assertResolvedCounters). Requiring a name or
// another algorithm for it instead would refuse tiers whose windows never meet, and a name would
// also make the counter shared across routes.
function assertOwnCounters(limits: PlannedLimit[]): void {
  const known = limits.filter((limit) => typeof limit.spec.windowMs === 'number');
  const pair = sharedCounter(known.map((limit) => ({ limit, windowMs: limit.spec.windowMs as number })));
  if (pair !== undefined) throw new TypeError(sharedCounterMessage(known[pair[1]]!, known[pair[1]]!.spec.windowMs as number));
}

/** A request's windows resolved: two limits on one counter are a programming error (a 500). */
function assertResolvedCounters(resolved: readonly { limit: PlannedLimit; spec: LimitSpec }[]): void {
  const pair = sharedCounter(resolved.map(({ limit, spec }) => ({ limit, windowMs: spec.windowMs })));
  if (pair === undefined) return;
  // two fixed windows would have failed at start-up: name the limit whose function resolved so
  const { limit, spec } = resolved[pair.find((i) => typeof resolved[i]!.limit.spec.windowMs === 'function') ?? pair[1]]!;
  throw new UserFunctionError(`${limit.at}.windowMs resolved to ${spec.windowMs}: ${sharedCounterMessage(limit, spec.windowMs)}`);
}

/** The first two limits on one counter, by index. */
function sharedCounter(limits: readonly { limit: PlannedLimit; windowMs: number }[]): [number, number] | undefined {
  const seen = new Map<string, number>();
  for (const [i, { limit, windowMs }] of limits.entries()) {
    const id = `${limit.spec.kind}:${windowMs}:${limit.scope}`;
    const first = seen.get(id);
    if (first !== undefined) return [first, i];
    seen.set(id, i);
  }
  return undefined;
}

function sharedCounterMessage(limit: PlannedLimit, windowMs: number): string {
  const counter = limit.name === undefined ? `of ${limit.scope}` : `'${limit.name}'`;
  return `two limits share the counter ${counter} (${KIND_NAMES[limit.spec.kind]}, windowMs ${windowMs}); give one a name of its own, or another window or algorithm`;
}

// A RateLimit header names the policy it describes, so a route's policy names must differ. An
// unnamed policy is named by its numbers, a tier's as this request resolved them (the header
// describes this request's limit); names that clash get the algorithm, then the window, then
// their position appended, until none does.
const NAME_SUFFIXES: ((spec: LimitSpec, index: number) => string)[] = [
  (spec) => KIND_NAMES[spec.kind],
  (spec) => `${spec.windowMs}ms`,
  (_spec, index) => `#${index + 1}`,
];

function policyNames(limits: readonly { name: string | undefined; spec: LimitSpec }[]): string[] {
  let names = limits.map(({ name, spec }) => name ?? `${spec.limit}-per-${spec.windowMs}ms`);
  for (const suffix of NAME_SUFFIXES) {
    const current = names;
    const clashes = (name: string) => current.indexOf(name) !== current.lastIndexOf(name);
    if (!current.some(clashes)) break;
    names = current.map((name, i) => (clashes(name) ? `${name}-${suffix(limits[i]!.spec, i)}` : name));
  }
  return names;
}

function plan(entry: LimitEntry, routeScope: string, index: number, moduleShadow: boolean): PlannedLimit {
  const decorator = entry.type === 'rate' ? '@RateLimit' : '@Funnel';
  const at = entry.at ?? `${decorator}(#${index + 1})`;
  if (typeof entry.options !== 'object' || entry.options === null) throw new TypeError(`${at} takes an options object`);
  const known: readonly string[] = OPTION_NAMES[entry.type];
  assertKnownOptions(entry.options, known, at);
  const { key, name, failMode } = entry.options;
  if (key !== undefined && typeof key !== 'function') throw new TypeError(`${at}.key must be a function (ctx) => string, got ${describeValue(key)}`);
  if (name !== undefined && (typeof name !== 'string' || name.length === 0)) {
    throw new TypeError(`${at}.name must be a non-empty string, got ${describeValue(name)}`);
  }
  if (failMode !== undefined) assertFailMode(failMode, `${at}.failMode`);

  let spec: TieredSpec;
  let cost: CostResolver;
  let outcome: Pick<PlannedLimit, 'countIf' | 'blockMs' | 'shadow'> = { countIf: undefined, blockMs: undefined, shadow: moduleShadow };
  if (entry.type === 'rate') {
    outcome = outcomeOptions(entry.options, at, moduleShadow);
    spec = tieredSpec(entry.options, at);
    cost = entry.options.cost === undefined ? 1 : entry.options.cost;
    if (typeof cost !== 'function') {
      // against a limit known per request only, a cost above it is refused then (checkCost)
      if (typeof spec.limit === 'number') assertPermits(cost, spec.limit, `${at}.cost`);
      else assertPositiveInteger(cost, `${at}.cost`);
    }
  } else {
    const funnel = funnelSpec(entry.options, at);
    spec = funnel;
    cost = entry.options.quota === undefined ? 1 : entry.options.quota;
    assertPermits(cost, funnel.limit, `${at}.quota`);
  }
  return {
    spec,
    scope: name ?? routeScope,
    name,
    at,
    key,
    cost,
    isFunnel: entry.type === 'funnel',
    ...outcome,
    keepWindow: false,
  };
}

/** A `@RateLimit`'s countIf, blockMs and shadow, checked; `shadow` falls back to the module's. */
function outcomeOptions(options: RateLimitOptions, at: string, moduleShadow: boolean): Pick<PlannedLimit, 'countIf' | 'blockMs' | 'shadow'> {
  const { countIf, blockMs, shadow = moduleShadow } = options;
  if (countIf !== undefined && typeof countIf !== 'function') {
    throw new TypeError(`${at}.countIf must be a function (ctx, outcome) => boolean, got ${describeValue(countIf)}`);
  }
  if (blockMs !== undefined) assertPositiveInteger(blockMs, `${at}.blockMs`);
  if (typeof shadow !== 'boolean') throw new TypeError(`${at}.shadow must be a boolean, got ${describeValue(shadow)}`);
  return { countIf, blockMs, shadow };
}
