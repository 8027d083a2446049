import { BadRequestException, Body, Controller, Get, HttpCode, HttpStatus, Inject, Post, Query, UseGuards } from '@nestjs/common';
import { DelayQueueService, type DeadPage, type ExpiredField } from '../../../lib/index.js';
import { AdminKeyGuard } from './admin-key.guard.js';
import { UNPAID_ORDER_EXPIRED } from './unpaid-orders.js';

/**
 * Lapse notices the canceller could not handle (they died after its attempts): listed page by
 * page, and retried by id or all at once once the cause is fixed. Admins only (x-admin-key).
 */
@Controller('admin/dead-cancellations')
@UseGuards(AdminKeyGuard)
export class DeadCancellationsController {
  constructor(@Inject(DelayQueueService) private readonly queue: DelayQueueService) {}

  /** `?limit=1..1000&cursor=` from the previous page's `cursor`. */
  @Get()
  list(@Query('limit') limit?: string, @Query('cursor') cursor?: string): Promise<DeadPage<ExpiredField>> {
    return this.badInputIs400(() => this.queue.dead<ExpiredField>(UNPAID_ORDER_EXPIRED, { limit: limit === undefined ? undefined : Number(limit), cursor }));
  }

  /** Body `{ ids?: string[] }`: those ids, or every dead notice when omitted. */
  @Post('retry')
  @HttpCode(HttpStatus.OK)
  async retry(@Body() body: { ids?: string[] } | undefined): Promise<{ retried: number }> {
    return { retried: await this.badInputIs400(() => this.queue.retryDead(UNPAID_ORDER_EXPIRED, body?.ids)) };
  }

  /** The library names the bad argument in a TypeError / RangeError: the client's mistake. */
  private async badInputIs400<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof TypeError || error instanceof RangeError) throw new BadRequestException(error.message);
      throw error;
    }
  }
}
