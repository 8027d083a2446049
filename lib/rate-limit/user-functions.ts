import { HttpException, type ExecutionContext } from '@nestjs/common';
import type { KeyResolver } from '../transports/guard.options.js';
import type { CostResolver } from './rate-limit.metadata.js';
import { describeValue } from '../validation.js';

/** A `key`, `cost`, `limit`, `windowMs` or `owner` function that threw (anything but an
 * HttpException) or gave an unusable value: a programming error, answered with 500. */
export class UserFunctionError extends Error {
  constructor(message: string, options?: { cause: unknown }) {
    super(message, options);
    this.name = 'UserFunctionError';
  }
}

/** What a user function's throw becomes: an HttpException is the answer as it is. */
function thrown(what: string, error: unknown): unknown {
  if (error instanceof HttpException) return error;
  const reason = error instanceof Error ? `${error.name}: ${error.message}` : describeValue(error);
  return new UserFunctionError(`${what} threw ${reason}`, { cause: error });
}

/** A request's key or owner: a non-empty string (an empty one would pool every such request into
 * one counter: refuse to guess). */
export async function resolveKey(what: 'key' | 'owner', resolver: KeyResolver, ctx: ExecutionContext): Promise<string> {
  let key: unknown;
  try {
    key = await resolver(ctx);
  } catch (error) {
    throw thrown(what, error);
  }
  if (typeof key !== 'string' || key.length === 0) {
    throw new UserFunctionError(`${what} resolved to ${JSON.stringify(key)}, not a non-empty string`);
  }
  return key;
}

/** A request's `limit` or `windowMs` (user tiers): a positive integer. `what` names it, e.g.
 * `@RateLimit(#1).limit`. */
export async function resolvePositiveInteger(
  what: string,
  resolver: (ctx: ExecutionContext) => number | Promise<number>,
  ctx: ExecutionContext,
): Promise<number> {
  let value: unknown;
  try {
    value = await resolver(ctx);
  } catch (error) {
    throw thrown(what, error);
  }
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new UserFunctionError(`${what} resolved to ${describeValue(value)}; it must be a positive integer`);
  }
  return value;
}

/** What `cost` gives for this request (it is synchronous), unchecked until the limit that applies
 * is known (see checkCost): an override may change it. Called once per request. */
export function costOf(cost: CostResolver, ctx: ExecutionContext): unknown {
  try {
    return typeof cost === 'function' ? cost(ctx) : cost;
  } catch (error) {
    throw thrown('cost', error);
  }
}

/** A request's permits as costOf resolved them: a positive integer no larger than `limit`. */
export function checkCost(permits: unknown, limit: number): number {
  if (typeof permits !== 'number' || !Number.isSafeInteger(permits) || permits <= 0 || permits > limit) {
    throw new UserFunctionError(`cost resolved to ${describeValue(permits)}; it must be a positive integer <= ${limit}`);
  }
  return permits;
}
