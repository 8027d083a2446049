import { Controller, Get } from '@nestjs/common';
import { SkipRateLimit } from '../../lib/index.js';

/** The app's own routes: an index with no decorator (the module's defaultLimits reach it) and a health check. */
@Controller()
export class AppController {
  /** No decorator: the app-wide default, 100 per minute per client IP, applies. */
  @Get()
  index(): { endpoints: string[] } {
    return { endpoints: ['/quotes/:symbol', '/sms', '/orders', '/login', '/completions', '/graphql', 'ws://<host>/ws', '/health'] };
  }

  /** Load balancers poll this: never limited, whatever the defaults say. */
  @Get('health')
  @SkipRateLimit()
  health(): { status: 'ok' } {
    return { status: 'ok' };
  }
}
