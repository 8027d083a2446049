import { HttpStatus, ServiceUnavailableException } from '@nestjs/common';
import { RedisLimitError } from '../errors.js';
import type { RedisLimitEvents } from '../observability/redis-limit-events.js';
import type { OutageReports } from '../redis/redis-connection.js';
import type { FailMode } from './guard.options.js';

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

/**
 * What a guard does when Redis could not decide: reports the outage (once per outage) and counts
 * the request under its failMode, then throws `unavailable()` (HTTP: 503) under 'closed', or says
 * how the request goes on: 'open' (through, uncounted) or 'local' (the guard decides it in process
 * memory). Anything but a Redis failure is rethrown as it is.
 */
export function applyFailMode(
  error: unknown,
  failMode: FailMode,
  redis: Pick<OutageReports, 'reportFailure'> & { readonly events: Pick<RedisLimitEvents, 'failMode'> },
  route: string,
  unavailable: () => Error = limiterUnavailable,
): 'open' | 'local' {
  if (!(error instanceof RedisLimitError)) throw error;
  redis.reportFailure(error);
  redis.events.failMode(route, failMode, error);
  if (failMode === 'closed') throw unavailable();
  return failMode;
}

/** 503 for failMode 'closed' when Redis cannot decide. */
export function limiterUnavailable(): ServiceUnavailableException {
  return new ServiceUnavailableException({
    statusCode: HttpStatus.SERVICE_UNAVAILABLE,
    message: 'Rate limiter unavailable',
  });
}
