/** Every error the library raises on purpose carries a stable `code`. */
export type RedisLimitErrorCode = 'REDIS_UNAVAILABLE' | 'REDIS_TIMEOUT' | 'SCRIPT_ERROR';

/** Base class: a Redis call made by the library failed. Guards map these to `failMode`. */
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

/** Redis did not answer within `commandTimeoutMs`. */
export class RedisTimeoutError extends RedisLimitError {
  constructor(readonly timeoutMs: number, command: string) {
    super(`Redis did not answer ${command} within ${timeoutMs} ms`, 'REDIS_TIMEOUT');
  }
}

/** The connection is down or refused the command (no offline queueing: we fail fast). */
export class RedisUnavailableError extends RedisLimitError {
  constructor(command: string, cause: unknown) {
    super(`Redis is unavailable for ${command}: ${describe(cause)}`, 'REDIS_UNAVAILABLE', { cause });
  }
}

/** A script answered with an error reply (a bug, or a key of the wrong type). */
export class RedisScriptError extends RedisLimitError {
  constructor(command: string, cause: unknown) {
    super(`Script ${command} failed: ${describe(cause)}`, 'SCRIPT_ERROR', { cause });
  }
}

function describe(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}
