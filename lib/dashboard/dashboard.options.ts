import type { ExecutionContext } from '@nestjs/common';
import { describeValue } from '../validation.js';

/** RedisLimitDashboardModule.register's options. */
export interface RedisLimitDashboardOptions {
  /** Where the page and its JSON endpoints are served: a literal URL path (letters, digits,
   * `- . _ ~ /`, no `//`); a trailing '/' is dropped, the app's global prefix applies.
   * @default '/redis-limit' */
  path?: string;
  /** Who may look: called for every request (page, files, JSON, actions); false answers 403, and
   * an HttpException it throws (e.g. 401) answers as itself. Required: no dashboard is open to all.
   * @default none: required */
  canActivate: (ctx: ExecutionContext) => boolean | Promise<boolean>;
  /** true: the page shows, and refuses (403) every action: retry, purge, overrides.
   * @default true */
  readOnly?: boolean;
}

export type ResolvedDashboardOptions = Required<RedisLimitDashboardOptions>;

export const DASHBOARD_OPTIONS = Symbol('RedisLimitDashboardOptions');

// a literal path: ':' '*' '?' '(' would make Nest read parameters or wildcards into it
const PATH = /^\/[A-Za-z0-9\-._~/]*$/;

/** The options checked at register(): a bad one fails the app before it starts. */
export function resolveDashboardOptions(options: unknown): ResolvedDashboardOptions {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`RedisLimitDashboardModule.register options must be an object { path?, canActivate, readOnly? }, got ${describeValue(options)}`);
  }
  const { path = '/redis-limit', canActivate, readOnly = true } = options as Record<string, unknown>;
  if (typeof canActivate !== 'function') {
    throw new TypeError(
      `RedisLimitDashboardModule.register: canActivate must be a function (ctx) => boolean deciding who may see the dashboard, got ${describeValue(canActivate)}`,
    );
  }
  if (typeof path !== 'string' || !PATH.test(path) || path.includes('//')) {
    throw new TypeError(
      `RedisLimitDashboardModule.register: path must be a URL path such as '/redis-limit' (letters, digits, - . _ ~ /), got ${describeValue(path)}`,
    );
  }
  if (typeof readOnly !== 'boolean') throw new TypeError(`RedisLimitDashboardModule.register: readOnly must be a boolean, got ${describeValue(readOnly)}`);
  return { path: path.length > 1 ? path.replace(/\/$/, '') : path, canActivate: canActivate as ResolvedDashboardOptions['canActivate'], readOnly };
}
