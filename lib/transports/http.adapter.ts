import type { ExecutionContext } from '@nestjs/common';
import { clientIp } from './client-ip.js';
import { limiterUnavailable, setHeaders } from './responses.js';
import { RateLimitException } from './rate-limit.exception.js';
import type { TransportAdapter } from './transport.adapter.js';

/** Express and Fastify: headers on the response (reply), 429 and 503 as HttpExceptions. */
export const httpAdapter: TransportAdapter = {
  getRequestResponse(ctx: ExecutionContext) {
    const http = ctx.switchToHttp();
    return { req: http.getRequest<object>(), res: http.getResponse<unknown>() };
  },
  setHeaders,
  tooManyRequests: (retryAfterMs) => new RateLimitException(retryAfterMs),
  unavailable: limiterUnavailable,
  defaultTracker: (ctx, ipv6Subnet) => clientIp(ctx.switchToHttp().getRequest(), ipv6Subnet),
};
