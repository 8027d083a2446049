import type { ExecutionContext } from '@nestjs/common';
import { peerAnswers, peerClass, type ErrorClass } from './peer-class.js';
import type { TransportAdapter } from './transport.adapter.js';

// Nest's RPC exception filter passes an error object through only for its own RpcException: the
// refusal must be the app's class (see peer-class.ts).
const rpcException = peerClass('@nestjs/microservices', () =>
  import('@nestjs/microservices').then((microservices) => microservices.RpcException as ErrorClass),
);

/**
 * Loads @nestjs/microservices' RpcException once. Called at start-up when a limited RPC handler is
 * found (RateLimitPlans), so that refusals, which are said synchronously, find it loaded.
 */
export const loadRpcException = (): Promise<void> => rpcException.load();

/**
 * @nestjs/microservices (TCP, Redis, NATS, ...): no response to put headers on; a refusal or an
 * outage is an RpcException whose error object reaches the client as it is. No default tracker:
 * a limit here names its key (checked at start-up).
 */
export const rpcAdapter: TransportAdapter = {
  getRequestResponse(ctx: ExecutionContext) {
    // a discovered handler had it loaded at start-up; one registered later loads it now, while
    // its first decision waits on Redis
    if (rpcException.get() === undefined) rpcException.load().catch(() => undefined);
    // one array per handler invocation, the same one for every guard of it
    return { req: ctx.getArgs(), res: undefined };
  },
  setHeaders() {},
  ...peerAnswers(rpcException),
};
