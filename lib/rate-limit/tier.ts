import type { ExecutionContext } from '@nestjs/common';
import { countsScaled, KIND_NAMES, rateLimitSpec, type LimitSpec, type RateLimitPolicy } from './policy.js';
import { resolvePositiveInteger, UserFunctionError } from './user-functions.js';
import { describeValue } from '../validation.js';

/** A `limit` or `windowMs` that depends on the request, e.g. on the user's plan (user tiers):
 * resolved per request to a positive integer; anything else, or a throw that is not an
 * HttpException, is a 500 (logged). */
export type TierResolver = (ctx: ExecutionContext) => number | Promise<number>;

/** A limit's spec whose `limit` and `windowMs` may be functions, resolved per request. */
export interface TieredSpec extends Omit<LimitSpec, 'limit' | 'windowMs'> {
  limit: number | TierResolver;
  windowMs: number | TierResolver;
}

/** Both numbers known at start-up: the spec is final. */
export const isFixed = (spec: TieredSpec): spec is LimitSpec => typeof spec.limit === 'number' && typeof spec.windowMs === 'number';

/**
 * A `@RateLimit`'s policy checked at start-up: `limit` and `windowMs` are each a positive integer
 * or a function; what is known is checked now, the rest on every request (see resolveSpec).
 */
export function tieredSpec(options: RateLimitPolicy | { limit: unknown; windowMs: unknown }, at: string): TieredSpec {
  const { limit, windowMs } = options;
  for (const [option, value] of [
    ['limit', limit],
    ['windowMs', windowMs],
  ] as const) {
    if (typeof value !== 'number' && typeof value !== 'function') {
      throw new TypeError(`${at}.${option} must be a positive integer or a function (ctx) => number, got ${describeValue(value)}`);
    }
  }
  if (typeof limit === 'number' && typeof windowMs === 'number') return rateLimitSpec(options as RateLimitPolicy, at);
  // the algorithm and the number given are checked as usual, with 1 standing in for a function
  const checked = rateLimitSpec(
    { ...(options as RateLimitPolicy), limit: typeof limit === 'number' ? limit : 1, windowMs: typeof windowMs === 'number' ? windowMs : 1 },
    at,
  );
  return { ...checked, limit: limit as number | TierResolver, windowMs: windowMs as number | TierResolver };
}

/**
 * A request's spec: each function resolved to a positive integer, a token bucket still exact
 * (limit × windowMs ≤ 2^53). Anything else is a UserFunctionError (a 500, logged), as for `cost`.
 */
export async function resolveSpec(spec: TieredSpec, at: string, ctx: ExecutionContext): Promise<LimitSpec> {
  if (isFixed(spec)) return spec;
  const limit = typeof spec.limit === 'number' ? spec.limit : await resolvePositiveInteger(`${at}.limit`, spec.limit, ctx);
  const windowMs = typeof spec.windowMs === 'number' ? spec.windowMs : await resolvePositiveInteger(`${at}.windowMs`, spec.windowMs, ctx);
  if (countsScaled(spec.algorithm) && limit * windowMs > Number.MAX_SAFE_INTEGER) {
    throw new UserFunctionError(
      `${at}: limit × windowMs resolved to ${limit} × ${windowMs}, above 2^53: a ${KIND_NAMES[spec.algorithm]} cannot count it exactly`,
    );
  }
  return { kind: spec.kind, algorithm: spec.algorithm, limit, windowMs };
}
