import { HttpException, HttpStatus } from '@nestjs/common';

/**
 * A refused request: HTTP 429 with the body `{ statusCode: 429, message, retryAfterMs }`. Every
 * HTTP refusal the library answers with is one, so an exception filter can catch them all
 * (GraphQL, WebSocket and microservice refusals are their transport's own exceptions).
 * @example
 * ```ts
 * @Catch(RateLimitException)
 * export class RateLimitFilter implements ExceptionFilter {
 *   catch(error: RateLimitException, host: ArgumentsHost) {
 *     const res = host.switchToHttp().getResponse(); // Express; Fastify: res.code(429).send(...)
 *     res.status(429).json({ error: 'slow down', retryAfterMs: error.retryAfterMs });
 *   }
 * }
 * ```
 *
 * It carries no stack trace: a refusal is an answer, not a fault, and capturing the stack was
 * the dearest part of refusing a flood from the refusal cache (about 5 µs of some 15).
 */
export class RateLimitException extends HttpException {
  /** ms until the request could be granted. */
  readonly retryAfterMs: number;

  /**
   * @param retryAfterMs - ms until the request could be granted
   * @param message - the body's message
   */
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
