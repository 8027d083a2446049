import type { ExecutionContext } from '@nestjs/common';
import { ipKey } from '../rate-limit/ip-key.js';
import { peerAnswers, peerClass, type ErrorClass } from './peer-class.js';
import { httpExceptionBody, type TransportAdapter } from './transport.adapter.js';

// Nest's WS exception filter answers a WsException with its error object and anything else with
// 'Internal server error': the refusal must be the app's own WsException.
const wsException = peerClass('@nestjs/websockets', () => import('@nestjs/websockets').then((websockets) => websockets.WsException as ErrorClass));

/**
 * Loads @nestjs/websockets' WsException once. Called at start-up when a gateway handler has
 * limits (RateLimitPlans), so that refusals, which are said synchronously, find it loaded.
 */
export const loadWsException = (): Promise<void> => wsException.load();

/** What a gateway client object may carry: a `ws` WebSocket, or a socket.io Socket. */
interface WsClient {
  /** ws: the TCP socket (undocumented, but the only place ws keeps the address). */
  _socket?: { remoteAddress?: string };
  /** socket.io: the address of the handshake's request. */
  handshake?: { address?: string };
  /** socket.io: the engine.io connection. */
  conn?: { remoteAddress?: string };
}

/** The remote address of a gateway's client, ws or socket.io; undefined when it has none. */
export function remoteAddressOf(client: unknown): string | undefined {
  if (typeof client !== 'object' || client === null) return undefined;
  const { _socket, handshake, conn } = client as WsClient;
  return handshake?.address || conn?.remoteAddress || _socket?.remoteAddress || undefined;
}

/**
 * @nestjs/websockets gateways (ws and socket.io): a message has no headers to set; a refusal and
 * an outage are WsExceptions, which Nest's filter emits to the client as an 'exception' event
 * carrying `{ statusCode, message, retryAfterMs? }`.
 */
export const wsAdapter: TransportAdapter = {
  getRequestResponse(ctx: ExecutionContext) {
    // a gateway discovery saw had it loaded at start-up; another loads it now, while its first
    // decision waits on Redis
    if (wsException.get() === undefined) wsException.load().catch(() => undefined);
    // a fresh array per message, the same for every guard of that message's handling
    return { req: ctx.getArgs(), res: undefined };
  },
  setHeaders() {
    // a WebSocket message has no headers
  },
  ...peerAnswers(wsException, httpExceptionBody),
  defaultTracker(ctx, ipv6Subnet) {
    const address = remoteAddressOf(ctx.switchToWs().getClient());
    if (address === undefined) {
      // one shared counter for every client would refuse them all together: say so instead
      throw new TypeError(
        "nest-redis-limit: this gateway's client has no remote address (neither a ws WebSocket nor a socket.io Socket); give the limit a key or the module a tracker",
      );
    }
    return ipKey(address, ipv6Subnet);
  },
};
