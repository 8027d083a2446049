import { BadRequestException, type ExecutionContext } from '@nestjs/common';
import { ipKey } from './ip-key.js';
import { peerAnswers, peerClass, type ErrorClass } from './peer-class.js';
import type { TransportAdapter } from './transport.adapter.js';

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

const isWsClient = (client: unknown): client is WsClient =>
  typeof client === 'object' && client !== null && ('_socket' in client || 'handshake' in client || 'conn' in client);

/** The remote address of a gateway's client, ws or socket.io; undefined when it has none. */
export function remoteAddressOf(client: unknown): string | undefined {
  if (!isWsClient(client)) return undefined;
  const { _socket, handshake, conn } = client;
  return handshake?.address || conn?.remoteAddress || _socket?.remoteAddress || undefined;
}

/** What Nest's WS exception filter emits for `error`: a WsException's error object, its message
 * as `{ status: 'error', message }`, and for anything else the same with 'Internal server error'. */
function exceptionData(error: unknown): unknown {
  const WsException = wsException.get();
  const data = WsException !== undefined && error instanceof WsException ? (error as Error & { getError(): unknown }).getError() : 'Internal server error';
  return typeof data === 'object' && data !== null ? data : { status: 'error', message: data };
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
  ...peerAnswers(wsException),
  /**
   * socket.io: a message sent with an acknowledgement gets the refusal there too, as the data of
   * the 'exception' event Nest's filter emits, else the client's callback would never be called.
   * Nest passes a handler `[client, data, ack?, pattern?]`; a `ws` message has no callback.
   */
  acknowledge(ctx, error) {
    const ack = ctx
      .getArgs()
      .slice(2)
      .find((arg): arg is (reply: unknown) => void => typeof arg === 'function');
    ack?.(exceptionData(error));
  },
  defaultTracker(ctx, ipv6Subnet) {
    const client = ctx.switchToWs().getClient<unknown>();
    // one shared counter for every client would refuse them all together: say so instead
    if (!isWsClient(client)) {
      throw new TypeError(
        "nest-redis-limit: this gateway's client is neither a ws WebSocket nor a socket.io Socket, so it has no remote address; give the limit a key or the module a tracker",
      );
    }
    const address = remoteAddressOf(client);
    // a client whose connection has gone (or came over a Unix socket): refused as HTTP's are
    if (address === undefined) throw new BadRequestException('No client address to rate-limit this message by');
    return ipKey(address, ipv6Subnet);
  },
};
