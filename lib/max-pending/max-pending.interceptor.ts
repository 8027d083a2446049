import { Inject, Injectable, Logger, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { catchError, defer, type Observable } from 'rxjs';
import { ExpiringHashService } from '../expiring-hash/expiring-hash.service.js';
import { heldSlot, releaseSlot } from './pending-slot.js';
import { transportOf } from '../transports/transport.adapter.js';

/**
 * Releases a request's `@MaxPending` slot when the handler throws (or its Observable errors), then
 * rethrows the handler's error. A handler that succeeds keeps its slot until it is deleted or
 * expires.
 */
@Injectable()
export class MaxPendingInterceptor implements NestInterceptor {
  private readonly logger = new Logger('MaxPendingInterceptor');

  constructor(@Inject(ExpiringHashService) private readonly expiringHash: ExpiringHashService) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const transport = transportOf(ctx);
    const slot = transport === undefined ? undefined : heldSlot(transport.getRequestResponse(ctx).req);
    if (slot === undefined) return next.handle();
    slot.reached = true;
    // defer: a handler that throws synchronously errors the Observable like an async one
    return defer(() => next.handle()).pipe(
      catchError(async (error: unknown) => {
        await releaseSlot(this.expiringHash, slot, this.logger);
        throw error;
      }),
    );
  }
}
