import { applyDecorators, UseGuards } from '@nestjs/common';
import { appendMetadata, RATE_LIMITS, type FunnelOptions, type LimitEntry } from './rate-limit.metadata.js';
import { RateLimitGuard } from './rate-limit.guard.js';

/**
 * A funnel (leaky bucket) on a handler or controller: `capacity` units, refilled evenly so an
 * empty funnel is full again after `leakingDurationMs`; each request takes `quota` (default 1).
 * Stacks with @RateLimit in the same atomic decision.
 */
export function Funnel(options: FunnelOptions): ClassDecorator & MethodDecorator {
  return applyDecorators(appendMetadata<LimitEntry>(RATE_LIMITS, { type: 'funnel', options }), UseGuards(RateLimitGuard));
}
