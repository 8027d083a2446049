import { createParamDecorator, InternalServerErrorException, Logger, type ExecutionContext } from '@nestjs/common';
import { heldSlot } from './pending-slot.js';
import { transportOf } from '../transports/transport.adapter.js';

const logger = new Logger('PendingSlot');

/**
 * The id of the slot `@MaxPending` reserved for this request (a UUID), e.g. to use as an order's
 * id: deleting that field of `${name}:${owner}` frees the slot. On a route without `@MaxPending`
 * the request gets a 500 (logged with `Controller.handler`).
 * @example
 * ```ts
 * @Post('orders')
 * @MaxPending(3, { name: 'unpaid-orders', ttlMs: 1_800_000 })
 * create(@PendingSlot() orderId: string) {
 *   return { orderId };
 * }
 * ```
 */
export const PendingSlot = createParamDecorator((_data: unknown, ctx: ExecutionContext): string => {
  const transport = transportOf(ctx);
  const slot = transport === undefined ? undefined : heldSlot(transport.getRequestResponse(ctx).req);
  if (slot === undefined) {
    // a programming error: the route has no @MaxPending
    logger.error(`${ctx.getClass().name}.${ctx.getHandler().name}: @PendingSlot() needs @MaxPending on the route`);
    throw new InternalServerErrorException();
  }
  return slot.slotId;
});
