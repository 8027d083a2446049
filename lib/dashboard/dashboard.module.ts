import { Module, type DynamicModule } from '@nestjs/common';
import { dashboardController } from './dashboard.controller.js';
import { DashboardGuard } from './dashboard.guard.js';
import { DASHBOARD_OPTIONS, resolveDashboardOptions, type RedisLimitDashboardOptions } from './dashboard.options.js';
import { DashboardOverviewReader } from './dashboard-overview.js';
import { DecisionSeries } from './decision-series.js';

/**
 * A page in the app itself: queues and dead messages, decisions per route over the last hour,
 * named limits and their overrides, Redis health. Needs RedisLimitModule (global by default).
 * Every request passes `canActivate`; actions need `readOnly: false`. See docs/dashboard.md.
 */
@Module({})
export class RedisLimitDashboardModule {
  /**
   * The dashboard at `options.path`, behind `options.canActivate`. The app's own limits never
   * apply to its routes.
   * @param options - `canActivate` (required), `path` (default '/redis-limit'), `readOnly`
   * (default true)
   * @returns the module to put in `imports`, beside RedisLimitModule
   * @throws TypeError naming the option, from this call (before the app starts): options not an
   * object, `canActivate` not a function, `path` not a literal URL path (letters, digits,
   * `- . _ ~ /`, no `//`), `readOnly` not a boolean.
   * @example
   * ```ts
   * @Module({
   *   imports: [
   *     RedisLimitModule.forRoot({ redis: process.env.REDIS_URL }),
   *     RedisLimitDashboardModule.register({
   *       canActivate: (ctx) => ctx.switchToHttp().getRequest().headers['x-admin-key'] === process.env.ADMIN_KEY,
   *       readOnly: false,
   *     }),
   *   ],
   * })
   * export class AppModule {}
   * ```
   */
  static register(options: RedisLimitDashboardOptions): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    return {
      module: RedisLimitDashboardModule,
      controllers: [dashboardController(resolved.path)],
      providers: [{ provide: DASHBOARD_OPTIONS, useValue: resolved }, DashboardGuard, DashboardOverviewReader, DecisionSeries],
    };
  }
}
