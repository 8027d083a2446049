import { HttpException, type ExecutionContext } from '@nestjs/common';
import { UserFunctionError } from './user-functions.js';
import { describeValue } from '../validation.js';

/**
 * Whether a request skips its limits, as `shouldSkip` says: a boolean, or a programming error
 * (500, logged by the route's log) — never a guess, since a skipped limit lets a flood through.
 * An HttpException it throws is the answer as it is.
 */
export async function resolveSkip(shouldSkip: (ctx: ExecutionContext) => boolean | Promise<boolean>, ctx: ExecutionContext): Promise<boolean> {
  let skip: unknown;
  try {
    skip = await shouldSkip(ctx);
  } catch (error) {
    if (error instanceof HttpException) throw error;
    throw new UserFunctionError(`skipIf threw ${error instanceof Error ? `${error.name}: ${error.message}` : describeValue(error)}`, { cause: error });
  }
  if (typeof skip !== 'boolean') throw new UserFunctionError(`skipIf resolved to ${describeValue(skip)}, not a boolean`);
  return skip;
}
