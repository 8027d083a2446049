import { SetMetadata } from '@nestjs/common';
import type { ConsumeOptions } from './delay-queue.types.js';

export const ON_DELAYED = Symbol('nest-redis-limit:on-delayed');

export interface OnDelayedEntry {
  queue: string;
  options: ConsumeOptions | undefined;
}

/**
 * Consumes `queue` with this provider method (bound to its instance) from application start-up
 * until shutdown. Options as `DelayQueueService.consume`; checked at start-up.
 */
export const OnDelayed = (queue: string, options?: ConsumeOptions): MethodDecorator =>
  SetMetadata<symbol, OnDelayedEntry>(ON_DELAYED, { queue, options });
