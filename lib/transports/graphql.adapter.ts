import { IntrinsicException, type ExecutionContext } from '@nestjs/common';
import { clientIp, type HttpClientRequest } from './client-ip.js';
import { setHeaders } from './responses.js';
import type { TransportAdapter } from './transport.adapter.js';

/**
 * A refusal (or an outage under failMode 'closed') in a GraphQL resolver. graphql-js wraps what a
 * resolver throws in the app's own GraphQLError and keeps its `extensions`, so both drivers
 * answer `errors[i].extensions` with these: no import of `graphql` here, which the library must
 * load without. It is no HttpException on purpose: Apollo's driver would recode a 429 one as
 * INTERNAL_SERVER_ERROR.
 */
export class GraphQLLimitError extends IntrinsicException {
  constructor(
    message: string,
    readonly extensions: { code: 'TOO_MANY_REQUESTS' | 'SERVICE_UNAVAILABLE'; statusCode: number; retryAfterMs?: number },
  ) {
    super(message);
    this.name = 'GraphQLLimitError';
  }
}

/** The HTTP request of a GraphQL operation: Express's or Fastify's (both carry `ip`). */
interface HttpRequest extends HttpClientRequest {
  /** Express: the response of this request. */
  res?: unknown;
}

/** graphql-ws's context of a connection: `extra.request` is its HTTP upgrade request. */
interface WsConnection {
  extra?: { request?: unknown };
}

/** What the drivers put in the GraphQL context: Apollo `{ req }` (plus `res` when the app's
 * context function adds it); Mercurius `{ req, reply, app }` (`req` the Fastify request). Over
 * graphql-ws, Nest's Apollo driver makes graphql-ws's connection context the `req`, and apps
 * pass its `extra` through. */
interface GraphQLContext extends WsConnection {
  req?: unknown;
  res?: unknown;
  reply?: { request?: unknown };
}

// A resolver's arguments are [root, args, context, info]; read without @nestjs/graphql (an
// optional peer) through the ExecutionContext itself.
const contextOf = (ctx: ExecutionContext): GraphQLContext => ctx.getArgByIndex<GraphQLContext | undefined>(2) ?? {};
/** Node's, Express's or Fastify's request: an object that knows its client's socket. A `req` an
 * app built from connectionParams (`{ headers }`) is none, and must not make every client one. */
const isHttpRequest = (value: unknown): value is HttpRequest => typeof value === 'object' && value !== null && ('ip' in value || 'socket' in value);
/** The operation's HTTP request; for a subscription, its connection's upgrade request. */
const requestOf = (gql: GraphQLContext): HttpRequest | undefined =>
  [gql.req, gql.reply?.request, (gql.req as WsConnection | undefined)?.extra?.request, gql.extra?.request].find(isHttpRequest);

/**
 * Resolvers served over HTTP by @nestjs/graphql (Apollo on Express, Mercurius on Fastify).
 *
 * A decision is remembered by the resolver's `info`: graphql-js builds one per field resolution
 * and every guard of that resolution gets the same one. One HTTP request may resolve several
 * limited fields (two mutations, aliases), and each is its own handler call with its own limits,
 * as two HTTP requests would be; remembering by the HTTP request would let the first field's
 * decision wave the others through.
 */
export const graphqlAdapter: TransportAdapter = {
  getRequestResponse(ctx: ExecutionContext) {
    const gql = contextOf(ctx);
    const info: unknown = ctx.getArgByIndex(3);
    const req = typeof info === 'object' && info !== null ? info : ctx.getArgs();
    return { req, res: gql.res ?? gql.reply ?? requestOf(gql)?.res };
  },
  // a subscription over WebSocket has no HTTP response to carry them
  setHeaders: (res, headers) => {
    if (typeof res === 'object' && res !== null) setHeaders(res, headers);
  },
  tooManyRequests: (retryAfterMs) => new GraphQLLimitError('Too Many Requests', { code: 'TOO_MANY_REQUESTS', statusCode: 429, retryAfterMs }),
  unavailable: () => new GraphQLLimitError('Rate limiter unavailable', { code: 'SERVICE_UNAVAILABLE', statusCode: 503 }),
  /**
   * The client IP of the operation's HTTP request. A subscription has none: its connection's
   * upgrade request stands in. Mercurius gives it as a Fastify request (`trustProxy` applies);
   * Apollo's graphql-ws gives Node's, read where Nest's default context puts it or under the
   * `extra` an app's context passes through, and only its socket's address counts (a proxy's
   * `X-Forwarded-For` is not read). With none, the subscribe fails (a 500, logged) rather than
   * count every client under one key.
   */
  defaultTracker(ctx, ipv6Subnet) {
    const req = requestOf(contextOf(ctx));
    if (req === undefined) {
      throw new TypeError(
        "nest-redis-limit: this GraphQL operation has no HTTP request for the default tracker (over graphql-ws, pass graphql-ws's `extra` through the GraphQL context); give the limit a key, or the module a tracker",
      );
    }
    return clientIp(req, ipv6Subnet);
  },
};
