import type { MaxPendingOptions } from '../../../lib/index.js';
import { userIdOf } from './order-request.js';

/** The DelayQueue queue told about every order that lapses unpaid. */
export const UNPAID_ORDER_EXPIRED = 'unpaid-orders-expired';

/** Unpaid orders one user may hold at once. */
export const MAX_UNPAID_ORDERS = 3;
/** How long an order waits for payment before it lapses and frees its slot: 30 minutes. */
export const DEFAULT_ORDER_TTL_MS = 30 * 60_000;

/**
 * The @MaxPending options of `POST /orders`. The library reads decorator options when the
 * application starts, so OrdersModule.register() can still set `ttlMs` before then.
 */
export const unpaidOrders: MaxPendingOptions = {
  name: 'unpaid-orders',
  ttlMs: DEFAULT_ORDER_TTL_MS,
  owner: userIdOf,
  notify: UNPAID_ORDER_EXPIRED,
};

/** The ExpiringHash key that holds a user's unpaid orders, one field per order. */
export const unpaidOrdersKey = (userId: string): string => `${unpaidOrders.name}:${userId}`;
