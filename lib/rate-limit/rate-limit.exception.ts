import { HttpException, HttpStatus } from '@nestjs/common';

/**
 * A refused request: HTTP 429 with the body `{ statusCode: 429, message, retryAfterMs }`. Every
 * refusal the library answers with is one, so an exception filter can catch them all.
 */
export class RateLimitException extends HttpException {
  constructor(
    /** ms until the request could be granted. */
    readonly retryAfterMs: number,
    message = 'Too Many Requests',
  ) {
    super({ statusCode: HttpStatus.TOO_MANY_REQUESTS, message, retryAfterMs }, HttpStatus.TOO_MANY_REQUESTS);
  }
}
