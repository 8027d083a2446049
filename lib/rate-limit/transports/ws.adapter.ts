import type { ExecutionContext } from '@nestjs/common';
import { ipKey } from '../ip-key.js';
import type { TransportAdapter } from './transport.adapter.js';

/** WsException's constructor, typed here so that no declaration of ours names @nestjs/websockets. */
type WsExceptionClass = new (error: string | object) => Error;

let wsException: WsExceptionClass | undefined;

// Nest's WS exception filter answers a WsException with its error object and anything else with
// 'Internal server error', by instanceof: the refusal must be the app's own class. The optional
// peer is loaded here, when the library is, and only where the app has it (an app without it
// still loads the library). A refusal is said synchronously, after at least one answer from
// Redis to a message on an open socket, so the class is loaded long before it is needed. The
// CommonJS build turns this import() into a require() of the same package the app requires.
export const wsExceptionLoaded: Promise<boolean> = import('@nestjs/websockets').then(
  (module) => {
    wsException = module.WsException as WsExceptionClass;
    return true;
  },
  () => false,
);

function wsError(body: object): Error {
  if (wsException === undefined) {
    // unreachable in an app that serves gateways: there is no 'ws' context without the package
    throw new TypeError('nest-redis-limit: @nestjs/websockets could not be loaded to answer a WebSocket message');
  }
  return new wsException(body);
}

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
    // a fresh array per message, the same for every guard of that message's handling
    return { req: ctx.getArgs(), res: undefined };
  },
  setHeaders() {
    // a WebSocket message has no headers
  },
  tooManyRequests: (retryAfterMs) => wsError({ statusCode: 429, message: 'Too Many Requests', retryAfterMs }),
  unavailable: () => wsError({ statusCode: 503, message: 'Rate limiter unavailable' }),
  defaultTracker(ctx, ipv6Subnet) {
    const address = remoteAddressOf(ctx.switchToWs().getClient());
    if (address === undefined) {
      // one shared counter for every client would refuse them all together: say so instead
      throw new TypeError("nest-redis-limit: this gateway's client has no remote address (neither a ws WebSocket nor a socket.io Socket); give the limit a key or the module a tracker");
    }
    return ipKey(address, ipv6Subnet);
  },
};
