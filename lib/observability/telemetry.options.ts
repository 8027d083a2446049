import { describeValue } from '../validation.js';

/** The telemetry part of RedisLimitModuleOptions. */
export interface TelemetryModuleOptions {
  /**
   * OpenTelemetry spans and metrics (docs/observability.md) through `@opentelemetry/api`, an
   * optional peer the app installs: spans for rate-limit decisions, DelayQueue enqueues and
   * handling, and metrics mirroring the Prometheus ones. What the app's SDK records and exports
   * is the app's: without an SDK the API records nothing. `false` turns it off where the API is
   * installed.
   * @default true when @opentelemetry/api is installed
   * @throws TypeError `telemetry` when not a boolean; at start-up, when `true` and
   * @opentelemetry/api cannot be loaded.
   */
  telemetry?: boolean;
}

/** The telemetry option, checked: undefined is "when installed". */
export interface TelemetrySettings {
  telemetry: boolean | undefined;
}

/** Injects TelemetrySettings: the module hands Telemetry its option. */
export const TELEMETRY_OPTIONS = Symbol('RedisLimitTelemetryOptions');

export function resolveTelemetryOptions(options: TelemetryModuleOptions): TelemetrySettings {
  const { telemetry } = options;
  if (telemetry !== undefined && typeof telemetry !== 'boolean') {
    throw new TypeError(`RedisLimitModule: telemetry must be a boolean, got ${describeValue(telemetry)}`);
  }
  return { telemetry };
}
