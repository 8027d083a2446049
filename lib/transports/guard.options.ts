import type { ExecutionContext } from '@nestjs/common';
import { describeValue, numberError } from '../validation.js';

/**
 * What a guard does when Redis cannot decide: 'closed' answers 503 (the same exception type with
 * statusCode 503 outside HTTP), 'open' lets the request through uncounted, 'local' decides the
 * same limits in this process's memory (each `limit` divided by the module's `localDivisor`) until
 * Redis answers again. A stack mixing modes takes the strictest: closed, then local, then open.
 * `@MaxPending` takes 'closed' or 'open' only: a cap on live slots cannot be kept per process, so
 * a module-wide 'local' means 'closed' there.
 */
export type FailMode = 'closed' | 'open' | 'local';
/** Which rate-limit headers guarded responses carry: 'legacy' X-RateLimit-Limit / -Remaining /
 * -Reset (seconds, rounded up), 'draft' RateLimit-Policy and RateLimit (IETF httpapi draft),
 * 'both', or false for none (Retry-After is sent with every 429 regardless). */
export type HeadersMode = 'legacy' | 'draft' | 'both' | false;

/** Resolves the key a limit counts against, e.g. a user id or an API key header. */
export type KeyResolver = (ctx: ExecutionContext) => string | Promise<string>;

/** What every guard (`@RateLimit`, `@Funnel`, `@MaxPending`) shares: RedisLimitModuleOptions' part. */
export interface GuardModuleOptions {
  /** What guards do when Redis fails or times out: 'closed' answers 503, 'open' lets the request
   * through, 'local' enforces the same limits in process memory (see FailMode). A warning is
   * logged once per outage.
   * @default 'closed'
   * @throws TypeError when not 'closed', 'open' or 'local'. */
  failMode?: FailMode;
  /** Rate-limit headers on guarded responses: 'legacy' (X-RateLimit-Limit, -Remaining, -Reset),
   * 'draft' (RateLimit-Policy, RateLimit), 'both', or false. Retry-After is sent with every 429.
   * @default 'legacy'
   * @throws TypeError when anything else. */
  headers?: HeadersMode;
  /** The default key of guards (limits without a `key`, `@MaxPending` without an `owner`).
   * @default each transport's: the client IP (HTTP, GraphQL), the socket's address (WebSocket);
   * microservice handlers have none and need a `key`
   * @throws TypeError when not a function. */
  tracker?: KeyResolver;
  /** The default tracker counts an IPv6 client by its first `ipv6Subnet` bits (one client owns a
   * whole prefix); false counts each address. IPv4-mapped IPv6 counts as the IPv4 address.
   * @default 56
   * @throws TypeError / RangeError when not an integer from 1 to 128 or false. */
  ipv6Subnet?: number | false;
}

/** The guards' options, checked, with their defaults. */
export interface GuardSettings {
  failMode: FailMode;
  headers: HeadersMode;
  /** The app's own tracker; undefined: each transport's default (see TransportAdapter). */
  tracker: KeyResolver | undefined;
  ipv6Subnet: number | false;
}

/** express-rate-limit's default since v8: a /56 is what ISPs commonly hand one household. */
export const DEFAULT_IPV6_SUBNET = 56;

export function resolveGuardOptions(options: GuardModuleOptions): GuardSettings {
  const { failMode = 'closed', headers = 'legacy', ipv6Subnet = DEFAULT_IPV6_SUBNET, tracker } = options;
  assertIpv6Subnet(ipv6Subnet);
  assertFailMode(failMode, 'RedisLimitModule: failMode');
  if (!['legacy', 'draft', 'both', false].includes(headers)) {
    throw new TypeError(`RedisLimitModule: headers must be 'legacy', 'draft', 'both' or false, got ${String(headers)}`);
  }
  if (tracker !== undefined && typeof tracker !== 'function') {
    throw new TypeError(`RedisLimitModule: tracker must be a function (ctx) => string, got ${describeValue(tracker)}`);
  }
  return { failMode, headers, tracker, ipv6Subnet };
}

export function assertIpv6Subnet(value: unknown, what = 'RedisLimitModule: ipv6Subnet'): asserts value is number | false {
  if (value === false || (typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 128)) return;
  throw new (numberError(value))(`${what} must be an integer from 1 to 128 or false, got ${describeValue(value)}`);
}

/** A failMode, or with `local: false` one of 'closed' and 'open' only (`@MaxPending`). */
export function assertFailMode(value: unknown, argument: string, local = true): asserts value is FailMode {
  if (value === 'closed' || value === 'open' || (local && value === 'local')) return;
  const also = local ? " (or 'local': the same limits kept in this process while Redis is down)" : '';
  throw new TypeError(`${argument} must be 'closed' or 'open', got ${String(value)}${also}`);
}
