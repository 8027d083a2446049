import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DelayQueueService, OnDelayed, type DelayedMessage } from '../../../lib/index.js';
import { OrdersService } from './orders.service.js';

export const NIGHTLY = { queue: 'order-reports', name: 'unpaid-summary' } as const;

/**
 * Every night at 02:30, New York time, one instance logs how many orders lapsed unpaid. Every
 * instance schedules it at start: the same spec again changes nothing, and each night's tick is
 * one message whatever the number of instances.
 */
@Injectable()
export class NightlySummary implements OnApplicationBootstrap {
  private readonly logger = new Logger('NightlySummary');

  constructor(
    @Inject(DelayQueueService) private readonly queue: DelayQueueService,
    @Inject(OrdersService) private readonly orders: OrdersService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    try {
      const { nextRunAt } = await this.queue.schedule(NIGHTLY.queue, NIGHTLY.name, { cron: '30 2 * * *', tz: 'America/New_York' });
      this.logger.log(`next summary at ${new Date(nextRunAt).toISOString()}`);
    } catch (error) {
      // Redis down at start: the app serves anyway (the other instances have it scheduled)
      this.logger.error(`the nightly summary could not be scheduled: ${(error as Error).message}`);
    }
  }

  @OnDelayed(NIGHTLY.queue)
  summarize({ id }: DelayedMessage): void {
    this.logger.log(`${id}: ${this.orders.cancelledCount()} orders lapsed unpaid so far`);
  }
}
