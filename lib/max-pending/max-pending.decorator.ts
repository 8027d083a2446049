import { applyDecorators, UseGuards, UseInterceptors } from '@nestjs/common';
import { appendMetadata } from '../rate-limit/rate-limit.metadata.js';
import { MaxPendingGuard } from './max-pending.guard.js';
import { MaxPendingInterceptor } from './max-pending.interceptor.js';
import { MAX_PENDING, type MaxPendingEntry, type MaxPendingOptions } from './max-pending.metadata.js';

/**
 * Caps an owner's live items, e.g. 3 unpaid orders per user: the guard reserves a slot (an
 * ExpiringHash field in `${name}:${owner}` living `ttlMs`) only while fewer than `max` are live,
 * else answers 429 (`retryAfterMs`: until the oldest slot expires). The handler reads the slot id
 * with `@PendingSlot()`; if it throws, the slot is released. Paying is
 * `expiringHash.delete(`${name}:${owner}`, slotId)`. On a controller it covers every handler; a
 * handler's own `@MaxPending` replaces it. HTTP and GraphQL only.
 * @param max - live slots an owner may hold: a positive integer
 * @param options - see MaxPendingOptions (`ttlMs` and `name` required)
 * @throws nothing here: bad options fail `app.init()` with a TypeError / RangeError naming
 * `Controller.handler: @MaxPending(max)` / `@MaxPending.<option>` (also: declared twice on a
 * route, or on a WebSocket or microservice handler).
 * @example
 * ```ts
 * @Post('orders')
 * @MaxPending(3, { name: 'unpaid-orders', ttlMs: 1_800_000, owner: (ctx) => ctx.switchToHttp().getRequest().user.id })
 * create(@PendingSlot() orderId: string) {
 *   return { orderId };
 * }
 * ```
 */
export function MaxPending(max: number, options: MaxPendingOptions): ClassDecorator & MethodDecorator {
  return applyDecorators(appendMetadata<MaxPendingEntry>(MAX_PENDING, { max, options }), UseGuards(MaxPendingGuard), UseInterceptors(MaxPendingInterceptor));
}
