import { applyDecorators, UseGuards, UseInterceptors } from '@nestjs/common';
import { appendMetadata } from '../rate-limit/rate-limit.metadata.js';
import { MaxPendingGuard } from './max-pending.guard.js';
import { MaxPendingInterceptor } from './max-pending.interceptor.js';
import { MAX_PENDING, type MaxPendingEntry, type MaxPendingOptions } from './max-pending.metadata.js';

/**
 * Caps an owner's live items, e.g. 3 unpaid orders per user: the guard reserves a slot (an
 * ExpiringHash field in `${name}:${owner}` living `ttlMs`) only while fewer than `max` are live,
 * else answers 429. The handler reads the slot id with @PendingSlot(); if it throws, the slot is
 * released. On a controller it covers every handler; a handler's own @MaxPending replaces it.
 * Options are checked when the application starts.
 */
export function MaxPending(max: number, options: MaxPendingOptions): ClassDecorator & MethodDecorator {
  return applyDecorators(
    appendMetadata<MaxPendingEntry>(MAX_PENDING, { max, options }),
    UseGuards(MaxPendingGuard),
    UseInterceptors(MaxPendingInterceptor),
  );
}
