import {
  applyDecorators,
  BadRequestException,
  Body,
  Controller,
  Get,
  Header,
  HttpCode,
  Inject,
  Post,
  Query,
  Req,
  ServiceUnavailableException,
  UseGuards,
  type Type,
} from '@nestjs/common';
import { RedisLimitError } from '../errors.js';
import { DelayQueueService } from '../delay-queue/delay-queue.service.js';
import type { DeadPage, QueuedMessage, ScheduleInfo } from '../delay-queue/delay-queue.types.js';
import { SkipRateLimit } from '../rate-limit/rate-limit.decorator.js';
import { RateLimiterService } from '../rate-limit/rate-limiter.service.js';
import { DashboardGuard } from './dashboard.guard.js';
import { DashboardOverviewReader, type DashboardOverview } from './dashboard-overview.js';
import { CONTENT_SECURITY_POLICY, PAGE_FILES, PAGE_SOURCES, pageBase, pageWithBase, type PageFile } from './dashboard-files.js';
import { DecisionSeries, type DecisionSeriesPage } from './decision-series.js';

/** Never cached, never sniffed as another type: every answer is about now, and some are payloads. */
const Fresh = () => applyDecorators(Header('X-Content-Type-Options', 'nosniff'), Header('Cache-Control', 'no-store'));
/** A page file, with the policy that keeps the page to its own script and style. */
const Served = (file: PageFile) =>
  applyDecorators(Header('Content-Type', PAGE_FILES[file]), Header('Content-Security-Policy', CONTENT_SECURITY_POLICY), Fresh());

/** Dead messages per page of the dashboard's list. */
const DEAD_PAGE_SIZE = 50;

interface QueueAction {
  queue?: unknown;
  ids?: unknown;
}

/**
 * The dashboard's routes under `path`: the page and its files, JSON reads, and the actions
 * (POST). The app's own limits never apply here: an operator must not be locked out mid-incident.
 */
export function dashboardController(path: string): Type {
  @Controller(path)
  @UseGuards(DashboardGuard)
  @SkipRateLimit()
  class RedisLimitDashboardController {
    constructor(
      @Inject(DashboardOverviewReader) private readonly overview: DashboardOverviewReader,
      @Inject(DecisionSeries) private readonly series: DecisionSeries,
      @Inject(DelayQueueService) private readonly queue: DelayQueueService,
      @Inject(RateLimiterService) private readonly limiter: RateLimiterService,
    ) {}

    @Get()
    @Served('index.html')
    page(@Req() req: { originalUrl?: string; url: string }): string {
      return pageWithBase(PAGE_SOURCES['index.html'], pageBase(req.originalUrl ?? req.url));
    }

    @Get('dashboard.css')
    @Served('dashboard.css')
    css(): string {
      return PAGE_SOURCES['dashboard.css'];
    }

    @Get('dashboard.js')
    @Served('dashboard.js')
    js(): string {
      return PAGE_SOURCES['dashboard.js'];
    }

    @Get('favicon.svg')
    @Served('favicon.svg')
    favicon(): string {
      return PAGE_SOURCES['favicon.svg'];
    }

    @Get('api/overview')
    @Fresh()
    readOverview(): Promise<DashboardOverview> {
      return this.overview.read();
    }

    @Get('api/decisions')
    @Fresh()
    decisions(): Promise<DecisionSeriesPage> {
      return this.series.lastHour();
    }

    /** `?queue=&cursor=`: a page of the queue's dead messages, oldest first. */
    @Get('api/dead')
    @Fresh()
    dead(@Query('queue') queue: unknown, @Query('cursor') cursor: unknown): Promise<DeadPage> {
      return answered(() => this.queue.dead(queue as string, { limit: DEAD_PAGE_SIZE, cursor: (cursor || undefined) as string | undefined }));
    }

    /** `{ queue, ids? }`: those dead messages back to scheduled, due now; all when ids is absent. */
    @Post('api/dead/retry')
    @Fresh()
    @HttpCode(200)
    async retry(@Body() body: QueueAction = {}): Promise<{ retried: number }> {
      return { retried: await answered(() => this.queue.retryDead(body.queue as string, body.ids as string[] | undefined)) };
    }

    /** `{ queue, ids? }`: those dead messages deleted; all when ids is absent. */
    @Post('api/dead/purge')
    @Fresh()
    @HttpCode(200)
    async purge(@Body() body: QueueAction = {}): Promise<{ purged: number }> {
      return { purged: await answered(() => this.queue.purgeDead(body.queue as string, body.ids as string[] | undefined)) };
    }

    /** Every queue's recurring schedules. */
    @Get('api/schedules')
    @Fresh()
    schedules(): Promise<ScheduleInfo[]> {
      return answered(() => this.queue.schedules());
    }

    /** `{ queue, name }`: that recurring schedule removed, with its pending tick. */
    @Post('api/schedules/remove')
    @Fresh()
    @HttpCode(200)
    async unschedule(@Body() body: { queue?: unknown; name?: unknown } = {}): Promise<{ removed: boolean }> {
      return { removed: await answered(() => this.queue.unschedule(body.queue as string, body.name as string)) };
    }

    /** `?queue=&id=`: one message wherever it is (null when none), and why it is there. */
    @Get('api/message')
    @Fresh()
    async message(@Query('queue') queue: unknown, @Query('id') id: unknown): Promise<{ message: QueuedMessage | null; explain: string }> {
      const [message, explain] = await answered(() =>
        Promise.all([this.queue.get(queue as string, id as string), this.queue.explain(queue as string, id as string)]),
      );
      return { message, explain };
    }

    /** `?name=&key=`: RateLimiterService.explain, a sentence per counter of the limits named so. */
    @Get('api/explain-limit')
    @Fresh()
    async explainLimit(@Query('name') name: unknown, @Query('key') key: unknown): Promise<{ sentences: string[] }> {
      return { sentences: await answered(() => this.limiter.explain(name as string, key as string)) };
    }

    /** `{ name, policy: { limit, windowMs?, key?, ttlMs? } | null, key? }`: RateLimiterService.setOverride
     * (`key` beside a null policy: removes that key's override). */
    @Post('api/overrides')
    @Fresh()
    @HttpCode(200)
    async override(@Body() body: { name?: unknown; policy?: unknown; key?: unknown } = {}): Promise<{ name: unknown }> {
      const opts = body.key === undefined ? undefined : { key: body.key as string };
      await answered(() => this.limiter.setOverride(body.name as string, body.policy as null, opts));
      return { name: body.name };
    }
  }
  return RedisLimitDashboardController;
}

/** The library names a bad argument in a TypeError or RangeError: the caller's mistake, 400.
 * Redis down or failing is the library's RedisLimitError: 503, the page says why. */
async function answered<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof TypeError || error instanceof RangeError) throw new BadRequestException(error.message);
    if (error instanceof RedisLimitError) throw new ServiceUnavailableException(error.message);
    throw error;
  }
}
