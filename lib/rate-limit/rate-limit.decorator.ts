import { applyDecorators, SetMetadata, UseGuards } from '@nestjs/common';
import { appendMetadata, RATE_LIMITS, SKIP_RATE_LIMIT, type LimitEntry, type RateLimitOptions } from './rate-limit.metadata.js';
import { RateLimitGuard } from './rate-limit.guard.js';

/**
 * Limits a handler, or every handler of a controller. Several stack (e.g. 10 per second and
 * 1000 per hour) and are decided in one atomic call: if any refuses, none is charged.
 * Outcome-aware options: `countIf` gives a request back after its response (count failed logins
 * only), `blockMs` locks a key out after a refusal, `shadow` decides and reports without refusing.
 * Options are checked when the application starts.
 */
export function RateLimit(options: RateLimitOptions): ClassDecorator & MethodDecorator {
  return applyDecorators(appendMetadata<LimitEntry>(RATE_LIMITS, { type: 'rate', options }), UseGuards(RateLimitGuard));
}

/** Exempts a handler (or a controller's handlers that declare no limits) from @RateLimit and @Funnel. */
export function SkipRateLimit(): ClassDecorator & MethodDecorator {
  return SetMetadata(SKIP_RATE_LIMIT, true);
}
