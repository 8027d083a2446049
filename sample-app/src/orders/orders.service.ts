import { Inject, Injectable, Logger } from '@nestjs/common';
import { ExpiringHashService, OnDelayed, type DelayedMessage, type ExpiredField } from '../../../lib/index.js';
import type { OrderRequest } from './order-request.js';
import { UNPAID_ORDER_EXPIRED, unpaidOrdersKey } from './unpaid-orders.js';

export interface Order extends OrderRequest {
  /** The @MaxPending slot id: the order is that slot's value. */
  id: string;
  userId: string;
  /** ISO 8601. */
  createdAt: string;
}

export interface UnpaidOrder extends Order {
  /** ms until the order lapses unpaid. */
  ttlMs: number;
}

/** Unpaid orders live in their user's @MaxPending slots: paying deletes one, lapsing expires it. */
@Injectable()
export class OrdersService {
  private readonly logger = new Logger('Orders');
  /** Orders that lapsed unpaid, by user (a real app would mark them in its database). */
  private readonly cancelled = new Map<string, Order[]>();

  constructor(@Inject(ExpiringHashService) private readonly expiringHash: ExpiringHashService) {}

  /**
   * An order's slot expired unpaid: the library tells us once, through the DelayQueue. A notice
   * this cannot handle (a malformed value) fails twice, 250 ms apart, and then waits among the
   * dead for an admin (DeadCancellationsController): retrying longer would not mend it.
   */
  @OnDelayed(UNPAID_ORDER_EXPIRED, { maxAttempts: 2, backoffMs: 250 })
  cancel({ payload }: DelayedMessage<ExpiredField>): void {
    if (payload.value === '') return; // the slot lapsed before its order was stored
    const order = JSON.parse(payload.value) as Order;
    this.logger.log(`order ${order.id} of user ${order.userId} cancelled: not paid in time`);
    this.cancelled.set(order.userId, [...(this.cancelled.get(order.userId) ?? []), order]);
  }

  /** Orders that lapsed unpaid, every user's. */
  cancelledCount(): number {
    return [...this.cancelled.values()].reduce((sum, orders) => sum + orders.length, 0);
  }

  /** A user's orders that lapsed unpaid. */
  cancelledOf(userId: string): Order[] {
    return this.cancelled.get(userId) ?? [];
  }

  /** Stores the order in its reserved slot, keeping the slot's ttl; null when the slot is gone. */
  async create(id: string, userId: string, request: OrderRequest): Promise<Order | null> {
    const order: Order = { id, userId, ...request, createdAt: new Date().toISOString() };
    return (await this.expiringHash.update(unpaidOrdersKey(userId), id, JSON.stringify(order))) ? order : null;
  }

  /** Pays an unpaid order; false when there is none with this id (unknown, paid or lapsed). */
  async pay(userId: string, id: string): Promise<boolean> {
    return (await this.expiringHash.delete(unpaidOrdersKey(userId), id)) === 1;
  }

  /** A user's unpaid orders, oldest first. */
  async unpaid(userId: string): Promise<UnpaidOrder[]> {
    const entries = await this.expiringHash.entries(unpaidOrdersKey(userId));
    return (
      entries
        // an empty value is a slot whose request is still being handled: no order yet
        .filter((entry) => entry.value !== '')
        .map((entry) => ({ ...(JSON.parse(entry.value) as Order), ttlMs: entry.ttlMs }))
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
    );
  }
}
