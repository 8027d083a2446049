import { HttpException, HttpStatus } from '@nestjs/common';

/**
 * A refused request: HTTP 429 with the body `{ statusCode: 429, message, retryAfterMs }`. Every
 * refusal the library answers with is one, so an exception filter can catch them all.
 *
 * It carries no stack trace: a refusal is an answer, not a fault, and capturing the stack was
 * the dearest part of refusing a flood from the refusal cache (about 5 µs of some 15).
 */
export class RateLimitException extends HttpException {
  /** ms until the request could be granted. */
  readonly retryAfterMs: number;

  constructor(retryAfterMs: number, message = 'Too Many Requests') {
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super({ statusCode: HttpStatus.TOO_MANY_REQUESTS, message, retryAfterMs }, HttpStatus.TOO_MANY_REQUESTS);
    } finally {
      Error.stackTraceLimit = stackTraceLimit;
    }
    this.retryAfterMs = retryAfterMs;
  }
}
