import type { ExecutionContext } from '@nestjs/common';
import { assertIpv6Subnet, DEFAULT_IPV6_SUBNET } from './guard.options.js';
import { describeValue } from '../validation.js';
import { transportTracker } from './transport.adapter.js';

/**
 * The key the guards give a request when neither the limit nor the module names one: the client
 * IP of an HTTP request or GraphQL operation (Express and Fastify honour `trust proxy`), the
 * remote address of a WebSocket client, an IPv6 address masked to its first `ipv6Subnet` bits. For
 * a module `tracker` or a `getTracker` override that builds on it. The module's `tracker` is never
 * consulted here, so a tracker may call this without calling itself.
 * @param options.ipv6Subnet - pass the module's when it sets one. @default 56, as the module's
 * @throws TypeError for a microservice context (it has no default) or a bad `options`; RangeError
 * for an `ipv6Subnet` out of 1..128; BadRequestException (400) for a request without a client
 * address, as the guards answer it.
 * @example
 * ```ts
 * RedisLimitModule.forRoot({
 *   tracker: (ctx) => ctx.switchToHttp().getRequest<{ user?: { id: string } }>().user?.id ?? defaultTracker(ctx),
 * });
 * ```
 */
export function defaultTracker(ctx: ExecutionContext, options: { ipv6Subnet?: number | false } = {}): string {
  if (typeof (ctx as Partial<ExecutionContext> | null)?.getType !== 'function') {
    throw new TypeError(`defaultTracker(ctx): ctx must be the guard's ExecutionContext, got ${describeValue(ctx)}`);
  }
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`defaultTracker(ctx, options): options must be an object { ipv6Subnet }, got ${describeValue(options)}`);
  }
  const { ipv6Subnet = DEFAULT_IPV6_SUBNET } = options;
  assertIpv6Subnet(ipv6Subnet, 'defaultTracker: options.ipv6Subnet');
  return transportTracker(ctx, ipv6Subnet);
}
