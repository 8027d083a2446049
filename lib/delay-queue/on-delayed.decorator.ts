import { SetMetadata } from '@nestjs/common';
import type { ConsumeOptions } from './delay-queue.types.js';

export const ON_DELAYED = Symbol('nest-redis-limit:on-delayed');

export interface OnDelayedEntry {
  queue: string;
  options: ConsumeOptions | undefined;
}

/**
 * Consumes `queue` with this provider method (bound to its instance) from application start-up
 * until shutdown, as `DelayQueueService.consume(queue, method, options)` would: the method's
 * result acknowledges the message, a throw is a failed attempt. Any provider (a singleton: a
 * request-scoped one is skipped); several methods may consume one queue.
 * @param queue - the queue's name: a non-empty well-formed string of at most 1,024 bytes
 * @param options - see ConsumeOptions; every option has a default
 * @throws nothing here: a bad `queue` or option fails `app.init()` with one error listing every
 * bad method, each line `Provider.method: @OnDelayed(queue) …` / `@OnDelayed options.<name> …`;
 * a RangeError when every problem is a number out of range, else a TypeError.
 * @example
 * ```ts
 * @Injectable()
 * export class InvoiceReminders {
 *   @OnDelayed('invoices', { concurrency: 5, maxAttempts: 5, backoffMs: 10_000 })
 *   async remind(message: DelayedMessage<{ invoiceId: string }>): Promise<void> {
 *     console.log(`invoice ${message.payload.invoiceId} is due (attempt ${message.attempt})`);
 *   }
 * }
 * ```
 */
export const OnDelayed = (queue: string, options?: ConsumeOptions): MethodDecorator => SetMetadata<symbol, OnDelayedEntry>(ON_DELAYED, { queue, options });
