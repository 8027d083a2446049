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
  static register(options: RedisLimitDashboardOptions): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    return {
      module: RedisLimitDashboardModule,
      controllers: [dashboardController(resolved.path)],
      providers: [{ provide: DASHBOARD_OPTIONS, useValue: resolved }, DashboardGuard, DashboardOverviewReader, DecisionSeries],
    };
  }
}
