import { Inject, Injectable } from '@nestjs/common';
import { ExpiringHashService } from '../../../lib/index.js';
import type { OrderRequest } from './order-request.js';
import { unpaidOrdersKey } from './unpaid-orders.js';

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
  constructor(@Inject(ExpiringHashService) private readonly expiringHash: ExpiringHashService) {}

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
