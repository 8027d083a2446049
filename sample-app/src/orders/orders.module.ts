import { Module, type DynamicModule } from '@nestjs/common';
import { DeadCancellationsController } from './dead-cancellations.controller.js';
import { NightlySummary } from './nightly-summary.js';
import { OrdersController } from './orders.controller.js';
import { OrdersService } from './orders.service.js';
import { DEFAULT_ORDER_TTL_MS, unpaidOrders } from './unpaid-orders.js';

export interface OrdersOptions {
  /** How long an order waits for payment, in ms. Default 30 minutes. */
  ttlMs?: number;
}

@Module({ controllers: [OrdersController, DeadCancellationsController], providers: [OrdersService, NightlySummary] })
export class OrdersModule {
  /** Applies to the application built next: @MaxPending options are read when it starts, so
   * apps with different ttls must be started one after another. */
  static register({ ttlMs = DEFAULT_ORDER_TTL_MS }: OrdersOptions = {}): DynamicModule {
    unpaidOrders.ttlMs = ttlMs;
    return { module: OrdersModule };
  }
}
