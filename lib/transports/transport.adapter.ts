import { HttpException, type ExecutionContext } from '@nestjs/common';
import type { KeyResolver } from './guard.options.js';
import { graphqlAdapter } from './graphql.adapter.js';
import { httpAdapter } from './http.adapter.js';
import { rpcAdapter } from './rpc.adapter.js';
import { wsAdapter } from './ws.adapter.js';

/**
 * What the guard needs to know about one kind of execution context, so that deciding stays apart
 * from speaking: where the request and response are, and how headers, a refusal and an outage
 * are said there.
 */
export interface TransportAdapter {
  /** `req` is what a decision is remembered by (once per request); `res` takes the headers. */
  getRequestResponse(ctx: ExecutionContext): { req: object; res: unknown };
  /** Puts the decision's headers on the response. */
  setHeaders(res: unknown, headers: Record<string, string>): void;
  /** The error a refused request gets. */
  tooManyRequests(retryAfterMs: number): Error;
  /** The error a request gets when Redis cannot decide under failMode 'closed'. */
  unavailable(): Error;
  /** How an HttpException a user function threw (a `key` refusing with 400) is said here, where
   * the transport's own filter would answer it as an internal error; absent: as it is. */
  httpException?(error: HttpException): Error;
  /** Answers, on a channel of the transport's own, a message the guard refused with `error`
   * (socket.io: the acknowledgement callback the client is waiting on); absent where the
   * refusal itself reaches the caller. */
  acknowledge?(ctx: ExecutionContext, error: unknown): void;
  /** The key of limits without a `key` when the module has no `tracker`; absent where the
   * transport has none (a limit there must name its key: checked at start-up). */
  defaultTracker?(ctx: ExecutionContext, ipv6Subnet: number | false): string;
}

// Context types without an adapter pass through unguarded.
const ADAPTERS: Readonly<Record<string, TransportAdapter | undefined>> = { http: httpAdapter, graphql: graphqlAdapter, rpc: rpcAdapter, ws: wsAdapter };

/** The adapter of `ctx`'s context type, or undefined when the guards do not act on it. */
export function transportOf(ctx: ExecutionContext): TransportAdapter | undefined {
  return ADAPTERS[ctx.getType()];
}

/** The adapter of `ctx`'s context type; a TypeError for one the guards do not act on. */
export function requireTransport(ctx: ExecutionContext): TransportAdapter {
  const transport = transportOf(ctx);
  if (transport === undefined) throw new TypeError(`nest-redis-limit: no transport adapter for '${ctx.getType()}' contexts`);
  return transport;
}

/** The key of a limit (or @MaxPending owner) without its own: the module's `tracker`, else the
 * transport's default. */
export function defaultKey(ctx: ExecutionContext, options: { tracker: KeyResolver | undefined; ipv6Subnet: number | false }): string | Promise<string> {
  return options.tracker !== undefined ? options.tracker(ctx) : transportTracker(ctx, options.ipv6Subnet);
}

/** The transport's default key of `ctx` (HTTP: the client IP), whatever the module's `tracker`. */
export function transportTracker(ctx: ExecutionContext, ipv6Subnet: number | false): string {
  const transport = requireTransport(ctx);
  if (transport.defaultTracker === undefined) {
    throw new TypeError(`nest-redis-limit: '${ctx.getType()}' handlers have no default tracker; give the limit a key or the module a tracker`);
  }
  return transport.defaultTracker(ctx, ipv6Subnet);
}

/** A user function's failure as the guard throws it: an HttpException in the transport's words. */
export function userFailure(transport: TransportAdapter, error: unknown): unknown {
  return error instanceof HttpException && transport.httpException !== undefined ? transport.httpException(error) : error;
}
