import { assertKey } from '../redis/keys.js';
import type { RateLimitDecideSpec } from '../redis/script-bindings.generated.js';
import type { StackedLimit } from './decision.types.js';
import { assertPermits, funnelSpec, rateLimitSpec, type LimitSpec } from './policy.js';

/**
 * A limit of a stack, checked: what DecisionEngine decides, trusting it as it is. Made once per
 * call from public input by RateLimiterService, or per request from a route's plan (checked at
 * start-up) by the guards. Also decide.lua's spec for it (algorithm, limit, windowMs, permits),
 * which a decision sends as it is: no second object per limit.
 */
export interface CheckedLimit extends RateLimitDecideSpec {
  key: string;
  /** Separates counters that share a key (a route, a shared name); undefined: the key's own. */
  scope: string | undefined;
  spec: LimitSpec;
}

/** A checked limit from parts already checked. */
export function checkedLimit(key: string, scope: string | undefined, spec: LimitSpec, permits: number): CheckedLimit {
  return { key, scope, spec, permits, algorithm: spec.algorithm, limit: spec.limit, windowMs: spec.windowMs };
}

/** A limit's key, scope and policy or funnel from public input, checked; `at` prefixes the names in
 * errors (e.g. `limits[1]`). */
export function checkTarget(limit: StackedLimit, at = ''): { key: string; scope: string | undefined; spec: LimitSpec; isFunnel: boolean } {
  const name = (arg: string) => (at ? `${at}.${arg}` : arg);
  assertKey(limit.key, name('key'));
  if (limit.scope !== undefined) assertKey(limit.scope, name('scope'));
  // a limit that names a funnel (even an undefined one) and no policy is a funnel, and is named so
  const isFunnel = limit.funnel !== undefined || (limit.policy === undefined && 'funnel' in limit);
  const spec = isFunnel ? funnelSpec(limit.funnel!, name('funnel')) : rateLimitSpec(limit.policy!, name('policy'));
  return { key: limit.key, scope: limit.scope, spec, isFunnel };
}

/** A stack's limit from public input, checked with its permits (1 for a peek). */
export function checkStackedLimit(limit: StackedLimit, peek = false, at = ''): CheckedLimit {
  const { key, scope, spec, isFunnel } = checkTarget(limit, at);
  const permits = peek || limit.permits === undefined ? 1 : limit.permits;
  const argument = isFunnel ? 'quota' : 'permits';
  assertPermits(permits, spec.limit, at ? `${at}.${argument}` : argument);
  return checkedLimit(key, scope, spec, permits);
}
