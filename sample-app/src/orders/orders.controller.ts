import { Body, ConflictException, Controller, Get, Headers, HttpCode, HttpStatus, Inject, NotFoundException, Param, Post } from '@nestjs/common';
import { MaxPending, PendingSlot, RateLimit } from '../../../lib/index.js';
import { parseOrderRequest, parseUserId, userIdOf } from './order-request.js';
import { OrdersService, type Order, type UnpaidOrder } from './orders.service.js';
import { MAX_UNPAID_ORDERS, unpaidOrders } from './unpaid-orders.js';

/**
 * A user (the x-user-id header) holds at most 3 unpaid orders; an order lapses unpaid after 30 min.
 * Orders belong to users, so the app's default (100 per minute per IP) is replaced by 100 per
 * minute per user: a request without a user is a 400 that counts nowhere.
 */
@Controller('orders')
@RateLimit({ limit: 100, windowMs: 60_000, key: userIdOf })
export class OrdersController {
  constructor(@Inject(OrdersService) private readonly orders: OrdersService) {}

  /** The 4th unpaid order is a 429 until one is paid or lapses. */
  @Post()
  @MaxPending(MAX_UNPAID_ORDERS, unpaidOrders)
  async create(@PendingSlot() id: string, @Headers('x-user-id') userId: string, @Body() body: unknown): Promise<Order> {
    // a bad body is a 400 thrown after the slot was reserved: the library releases the slot
    const order = await this.orders.create(id, parseUserId(userId), parseOrderRequest(body));
    if (order === null) throw new ConflictException('the order lapsed before it was stored; place it again');
    return order;
  }

  @Get()
  unpaid(@Headers('x-user-id') userId: string): Promise<UnpaidOrder[]> {
    return this.orders.unpaid(parseUserId(userId));
  }

  @Get('cancelled')
  cancelled(@Headers('x-user-id') userId: string): Order[] {
    return this.orders.cancelledOf(parseUserId(userId));
  }

  @Post(':id/pay')
  @HttpCode(HttpStatus.OK)
  async pay(@Headers('x-user-id') userId: string, @Param('id') id: string): Promise<{ id: string; paid: true }> {
    if (!(await this.orders.pay(parseUserId(userId), id))) throw new NotFoundException(`no unpaid order ${id}`);
    return { id, paid: true };
  }
}
