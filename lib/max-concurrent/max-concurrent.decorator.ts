import { applyDecorators, UseInterceptors } from '@nestjs/common';
import { appendMetadata } from '../rate-limit/rate-limit.metadata.js';
import { MaxConcurrentInterceptor } from './max-concurrent.interceptor.js';
import { MAX_CONCURRENT, type MaxConcurrentEntry, type MaxConcurrentOptions } from './max-concurrent.metadata.js';

/**
 * At most `limit` requests per key in flight at once, across every app instance, on every
 * transport (HTTP, GraphQL, WebSocket, microservices). The slot is taken after the guards (so
 * after the rate limits pass: a refused request takes none) and freed when the request ends,
 * whatever its outcome: a GraphQL field, WebSocket message or microservice message when its
 * handler ends; an HTTP request when its handler has ended and its response is done (finished, or
 * its connection closed), whichever is last. It is renewed
 * while the handler runs; an instance that dies gives its slots back `leaseMs` after. A request
 * over the limit is refused as a rate limit refuses (HTTP: 429 with Retry-After and
 * `retryAfterMs`, the time until the soonest slot's lease would end). On a controller it covers
 * every handler; a handler's own replaces it.
 * @param limit - requests per key in flight at once: a positive integer
 * @param options - see MaxConcurrentOptions
 * @throws nothing here: bad options fail `app.init()` naming `Controller.handler: @MaxConcurrent…`
 * (also: declared twice on a route; a microservice handler without a `key` where the module has
 * no tracker; a `@ResolveField` unless GraphQLModule's fieldResolverEnhancers includes
 * 'interceptors').
 * @example
 * ```ts
 * @Post('exports')
 * @RateLimit({ limit: 10, windowMs: 3_600_000, key: tenantOf })
 * @MaxConcurrent(2, { key: tenantOf, name: 'exports' }) // two exports per tenant at a time
 * startExport(@Body() body: ExportRequest) { ... }
 * ```
 */
export function MaxConcurrent(limit: number, options?: MaxConcurrentOptions): ClassDecorator & MethodDecorator {
  return applyDecorators(appendMetadata<MaxConcurrentEntry>(MAX_CONCURRENT, { limit, options }), UseInterceptors(MaxConcurrentInterceptor));
}
