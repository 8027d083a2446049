import { applyDecorators, SetMetadata, UseGuards } from '@nestjs/common';
import { appendMetadata, RATE_LIMITS, SKIP_RATE_LIMIT, type LimitEntry, type RateLimitOptions } from './rate-limit.metadata.js';
import { RateLimitGuard } from './rate-limit.guard.js';

/**
 * Limits a handler, or every handler of a controller. Several stack (e.g. 10 per second and
 * 1000 per hour) and are decided in one atomic call: if any refuses, none is charged. A refusal
 * is a 429 `{ statusCode, message, retryAfterMs }` with Retry-After (other transports: their own
 * exception). A handler's limit replaces a class limit of the same `name` (unnamed: unnamed).
 * Outcome-aware options: `countIf` gives a request back after its response (count failed logins
 * only), `blockMs` locks a key out after a refusal, `shadow` decides and reports without refusing.
 * @param options - see RateLimitOptions: `limit` permits per `windowMs` ms, and the rest optional
 * @throws nothing here: bad options fail `app.init()` with a TypeError / RangeError naming
 * `Controller.handler: @RateLimit(#n).<option>` (also two limits of a route on one counter).
 * @example
 * ```ts
 * @Controller('quotes')
 * @RateLimit({ limit: 1000, windowMs: 3_600_000, name: 'hourly' })  // every handler
 * export class QuotesController {
 *   @Get(':symbol')
 *   @RateLimit({ limit: 5, windowMs: 10_000 })                        // and 5 per 10 s per client IP
 *   quote() {}
 *
 *   @Post('login')
 *   @RateLimit({ limit: 5, windowMs: 900_000, countIf: (_ctx, outcome) => outcome.statusCode >= 400 })
 *   login() {}
 * }
 * ```
 */
export function RateLimit(options: RateLimitOptions): ClassDecorator & MethodDecorator {
  return applyDecorators(appendMetadata<LimitEntry>(RATE_LIMITS, { type: 'rate', options }), UseGuards(RateLimitGuard));
}

/**
 * Exempts a handler (or a controller's handlers that declare no limits) from `@RateLimit`, `@Funnel`
 * and the module's defaultLimits; not from `@MaxPending`. Takes no argument.
 * @example
 * ```ts
 * @Get('health')
 * @SkipRateLimit()
 * health() {}
 * ```
 */
export function SkipRateLimit(): ClassDecorator & MethodDecorator {
  return SetMetadata(SKIP_RATE_LIMIT, true);
}
