import type { ExecutionContext } from '@nestjs/common';
import type { HeadersMode } from './guard.options.js';
import { rateLimitHeaders, retryAfterSeconds, type HeaderPolicy } from './headers.js';
import type { RateLimitDecision } from '../rate-limit/policy.js';
import type { RoutePlans } from '../route-plans.js';
import { transportOf, type TransportAdapter } from './transport.adapter.js';

export interface OpenedRoute<P> {
  transport: TransportAdapter;
  req: object;
  res: unknown;
  plan: P;
}

const adapterRequestResponse = (ctx: ExecutionContext, transport: TransportAdapter) => transport.getRequestResponse(ctx);

/**
 * Where `RateLimitGuard` and `MaxPendingGuard` start: the transport of a context they know, its
 * request and response, then the handler's plan. Undefined when the guard has nothing to do: no
 * transport it knows, a request `handled` already (checked before the plan, so a guard instance
 * without a plan still marks it), or no plan for this handler.
 */
export function openRoute<P>(
  ctx: ExecutionContext,
  plans: RoutePlans<P | null>,
  handled: (req: object) => boolean,
  requestResponse: (ctx: ExecutionContext, transport: TransportAdapter) => { req: object; res: unknown } = adapterRequestResponse,
): OpenedRoute<P> | undefined {
  const transport = transportOf(ctx);
  if (transport === undefined) return undefined;
  const { req, res } = requestResponse(ctx, transport);
  if (handled(req)) return undefined;
  const plan = plans.forRoute(ctx.getClass(), ctx.getHandler());
  return plan === null ? undefined : { transport, req, res, plan };
}

/** Puts a decision's headers on the response; Retry-After goes with every refusal, whatever
 * `mode` says and whichever exception then answers. */
export function sendDecisionHeaders(
  transport: TransportAdapter,
  res: unknown,
  mode: HeadersMode,
  policies: readonly HeaderPolicy[],
  decisions: readonly RateLimitDecision[],
  refusedForMs: number | undefined,
): void {
  const headers = rateLimitHeaders(mode, policies, decisions);
  if (refusedForMs !== undefined) headers['Retry-After'] = retryAfterSeconds(refusedForMs);
  transport.setHeaders(res, headers);
}
