import { Injectable } from '@nestjs/common';
import { assertFailMode, type FailMode, type KeyResolver } from '../redis-limit.options.js';
import type { RouteRef } from '../route-identity.js';
import { RoutePlans } from '../route-plans.js';
import { assertPermits, funnelSpec, rateLimitSpec, type LimitSpec } from './policy.js';
import { RATE_LIMITS, SKIP_RATE_LIMIT, type CostResolver, type LimitEntry } from './rate-limit.metadata.js';
import type { StackedLimit } from './rate-limiter.service.js';

/** One checked limit of a route. */
export interface PlannedLimit {
  spec: LimitSpec;
  /** The counter's scope: the shared name, or the route (method, path, class and handler).
   * Redis keys add the algorithm and window, so a changed `limit` keeps the counter. */
  scope: string;
  /** The policy's name in RateLimit-Policy headers. */
  policyName: string;
  key: KeyResolver | undefined;
  cost: CostResolver;
  isFunnel: boolean;
}

/** Everything the guard needs for one handler, checked once at start-up. */
export interface RoutePlan {
  route: string;
  limits: PlannedLimit[];
  failMode: FailMode;
}

/**
 * Reads @RateLimit / @Funnel / @SkipRateLimit of every controller when the application starts,
 * merges handler and class declarations, checks every option and keeps the result per (class, handler).
 * A bad option makes `app.init()` fail with `Controller.handler` in the message.
 */
@Injectable()
export class RateLimitPlans extends RoutePlans<RoutePlan | null> {
  protected readonly what = 'rate-limit';

  protected compile(route: RouteRef): RoutePlan | null {
    return compile(route, this.redis.options.failMode);
  }
}

/** Resolves a plan's limits for one request, in the form RateLimiterService.decide takes. */
export function stackFor(limit: PlannedLimit, key: string, permits: number): StackedLimit {
  const { spec } = limit;
  return limit.isFunnel
    ? { key, scope: limit.scope, permits, funnel: { capacity: spec.limit, leakingDurationMs: spec.windowMs } }
    : { key, scope: limit.scope, permits, policy: { limit: spec.limit, windowMs: spec.windowMs, algorithm: ALGORITHM_NAMES[spec.algorithm] } };
}

const ALGORITHM_NAMES = { fw: 'fixed-window', sw: 'sliding-window', tb: 'token-bucket' } as const;

function compile({ controller, handler, route, scope }: RouteRef, moduleFailMode: FailMode): RoutePlan | null {
  const own: LimitEntry[] = Reflect.getMetadata(RATE_LIMITS, handler) ?? [];
  const inherited: LimitEntry[] = Reflect.getMetadata(RATE_LIMITS, controller) ?? [];
  const skip = Reflect.getMetadata(SKIP_RATE_LIMIT, handler) ?? (own.length === 0 && Reflect.getMetadata(SKIP_RATE_LIMIT, controller));
  if (skip === true) return null;

  // handler wins: a class-level limit gives way to a handler-level one of the same name
  // (unnamed ones give way to any unnamed handler-level limit)
  const ownNames = new Set(own.map((entry) => entry.options?.name));
  const entries = [...own, ...inherited.filter((entry) => !ownNames.has(entry.options?.name))];
  if (entries.length === 0) return null;

  try {
    const limits = uniquePolicyNames(entries.map((entry, i) => plan(entry, scope, i)));
    assertOwnCounters(limits, entries);
    const modes = entries.map((entry) => entry.options?.failMode ?? moduleFailMode);
    return { route, limits, failMode: modes.includes('closed') ? 'closed' : 'open' };
  } catch (error) {
    throw new (error instanceof RangeError ? RangeError : TypeError)(`${route}: ${(error as Error).message}`);
  }
}

/** The options each decorator takes: anything else (a misspelt `failmode`) is refused. */
const OPTION_NAMES = {
  rate: ['limit', 'windowMs', 'algorithm', 'key', 'cost', 'name', 'failMode'],
  funnel: ['capacity', 'leakingDurationMs', 'quota', 'key', 'name', 'failMode'],
} as const;

// A counter is its scope, algorithm (the key's kind) and window: two limits of a route on one
// counter would each charge it, and the tighter would silently decide for both.
function assertOwnCounters(limits: PlannedLimit[], entries: LimitEntry[]): void {
  const seen = new Set<string>();
  limits.forEach((limit, i) => {
    const { kind, windowMs } = limit.spec;
    const id = `${kind}:${windowMs}:${limit.scope}`;
    if (seen.has(id)) {
      const name = entries[i]!.options.name;
      const counter = name === undefined ? `of ${limit.scope}` : `'${name}'`;
      throw new TypeError(
        `two limits share the counter ${counter} (${KIND_NAMES[kind]}, windowMs ${windowMs}); give one a name of its own, or another window or algorithm`,
      );
    }
    seen.add(id);
  });
}

const KIND_NAMES = { fw: 'fixed-window', sw: 'sliding-window', tb: 'token-bucket', fn: 'funnel' } as const;

// A RateLimit header names the policy it describes, so a route's policy names must differ: names
// that clash get the algorithm, then the window, then their position appended, until none does.
const NAME_SUFFIXES: ((limit: PlannedLimit, index: number) => string)[] = [
  (limit) => KIND_NAMES[limit.spec.kind],
  (limit) => `${limit.spec.windowMs}ms`,
  (_limit, index) => `#${index + 1}`,
];

function uniquePolicyNames(limits: PlannedLimit[]): PlannedLimit[] {
  for (const suffix of NAME_SUFFIXES) {
    const names = limits.map((limit) => limit.policyName);
    const clashes = (name: string) => names.indexOf(name) !== names.lastIndexOf(name);
    if (!names.some(clashes)) break;
    limits = limits.map((limit, i) => (clashes(limit.policyName) ? { ...limit, policyName: `${limit.policyName}-${suffix(limit, i)}` } : limit));
  }
  return limits;
}

function plan(entry: LimitEntry, routeScope: string, index: number): PlannedLimit {
  const decorator = entry.type === 'rate' ? '@RateLimit' : '@Funnel';
  const at = `${decorator}(#${index + 1})`;
  if (typeof entry.options !== 'object' || entry.options === null) throw new TypeError(`${at} takes an options object`);
  const known: readonly string[] = OPTION_NAMES[entry.type];
  const unknown = Object.keys(entry.options).find((option) => !known.includes(option));
  if (unknown !== undefined) throw new TypeError(`${at}.${unknown} is not an option (${known.join(', ')})`);
  const { key, name, failMode } = entry.options;
  if (key !== undefined && typeof key !== 'function') throw new TypeError(`${at}.key must be a function (ctx) => string`);
  if (name !== undefined && (typeof name !== 'string' || name.length === 0)) {
    throw new TypeError(`${at}.name must be a non-empty string`);
  }
  if (failMode !== undefined) assertFailMode(failMode, `${at}.failMode`);

  let spec: LimitSpec;
  let cost: CostResolver;
  if (entry.type === 'rate') {
    spec = rateLimitSpec(entry.options, at);
    cost = entry.options.cost === undefined ? 1 : entry.options.cost;
    if (typeof cost !== 'function') assertPermits(cost, spec.limit, `${at}.cost`);
  } else {
    spec = funnelSpec(entry.options, at);
    cost = entry.options.quota === undefined ? 1 : entry.options.quota;
    assertPermits(cost, spec.limit, `${at}.quota`);
  }
  const policy = `${spec.limit}-per-${spec.windowMs}ms`;
  return {
    spec,
    scope: name ?? routeScope,
    policyName: name ?? policy,
    key,
    cost,
    isFunnel: entry.type === 'funnel',
  };
}
