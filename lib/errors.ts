/** Every error the library raises on purpose carries a stable `code`. */
export type RedisLimitErrorCode = 'REDIS_UNAVAILABLE' | 'REDIS_TIMEOUT' | 'SCRIPT_ERROR';

/**
 * Base class: a Redis call made by the library failed. Service methods reject with these (never
 * with a refusal: that is a result); guards map them to `failMode`. Tell them apart by class or
 * by `code`.
 * @example
 * ```ts
 * try {
 *   await limiter.consume(key, policy);
 * } catch (error) {
 *   if (error instanceof RedisLimitError) logger.warn(`rate limiter down (${error.code})`);
 *   else throw error; // a TypeError / RangeError: a bug in the caller
 * }
 * ```
 */
export class RedisLimitError extends Error {
  constructor(
    message: string,
    readonly code: RedisLimitErrorCode,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Redis did not answer within `commandTimeoutMs` (`timeoutMs`); code 'REDIS_TIMEOUT'. The call
 * may still have been carried out. */
export class RedisTimeoutError extends RedisLimitError {
  constructor(
    readonly timeoutMs: number,
    command: string,
  ) {
    super(`Redis did not answer ${command} within ${timeoutMs} ms`, 'REDIS_TIMEOUT');
  }
}

/** The connection is down or refused the command (no offline queueing: we fail fast), or the
 * server cannot serve now (LOADING, READONLY, CLUSTERDOWN, OOM...); code 'REDIS_UNAVAILABLE'. */
export class RedisUnavailableError extends RedisLimitError {
  constructor(command: string, cause: unknown) {
    super(`Redis is unavailable for ${command}: ${describe(cause)}`, 'REDIS_UNAVAILABLE', { cause });
  }
}

/** A script or command answered with an error reply (a bug, a key of the wrong type, an argument
 * over Redis' proto-max-bulk-len); code 'SCRIPT_ERROR'. */
export class RedisScriptError extends RedisLimitError {
  constructor(command: string, cause: unknown) {
    super(`Script ${command} failed: ${describe(cause)}`, 'SCRIPT_ERROR', { cause });
  }
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
