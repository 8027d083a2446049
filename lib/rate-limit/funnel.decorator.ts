import { applyDecorators, UseGuards } from '@nestjs/common';
import { appendMetadata, RATE_LIMITS, type FunnelOptions, type LimitEntry } from './rate-limit.metadata.js';
import { RateLimitGuard } from './rate-limit.guard.js';

/**
 * A funnel (leaky bucket) on a handler or controller: `capacity` units, refilled evenly so an
 * empty funnel is full again after `leakingDurationMs` ms; each request takes `quota` (default 1).
 * Stacks with `@RateLimit` in the same atomic decision; a refusal is the same 429.
 * @param options - see FunnelOptions
 * @throws nothing here: bad options fail `app.init()` with a TypeError / RangeError naming
 * `Controller.handler: @Funnel(#n).<option>` (a `quota` above `capacity` too).
 * @example
 * ```ts
 * @Post('sms')
 * @Funnel({ capacity: 1, leakingDurationMs: 1_800_000, key: (ctx) => ctx.switchToHttp().getRequest().body.phone })
 * send() {}
 * ```
 */
export function Funnel(options: FunnelOptions): ClassDecorator & MethodDecorator {
  return applyDecorators(appendMetadata<LimitEntry>(RATE_LIMITS, { type: 'funnel', options }), UseGuards(RateLimitGuard));
}
