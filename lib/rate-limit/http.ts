import { HttpException, HttpStatus, ServiceUnavailableException } from '@nestjs/common';
import { retryAfterSeconds } from './headers.js';

interface HeaderTarget {
  header?: (name: string, value: string) => unknown;
  setHeader?: (name: string, value: string) => unknown;
}

/** Sets headers on an Express response or a Fastify reply. */
export function setHeaders(response: unknown, headers: Record<string, string>): void {
  const target = response as HeaderTarget;
  for (const [name, value] of Object.entries(headers)) {
    if (typeof target.header === 'function') target.header(name, value);
    else target.setHeader?.(name, value);
  }
}

/** 429 with `Retry-After` and the body `{ statusCode, message, retryAfterMs }`. */
export function tooManyRequests(response: unknown, retryAfterMs: number, message = 'Too Many Requests'): HttpException {
  setHeaders(response, { 'Retry-After': retryAfterSeconds(retryAfterMs) });
  return new HttpException({ statusCode: HttpStatus.TOO_MANY_REQUESTS, message, retryAfterMs }, HttpStatus.TOO_MANY_REQUESTS);
}

/** 503 for failMode 'closed' when Redis cannot decide. */
export function limiterUnavailable(): ServiceUnavailableException {
  return new ServiceUnavailableException({
    statusCode: HttpStatus.SERVICE_UNAVAILABLE,
    message: 'Rate limiter unavailable',
  });
}
