import type { ExecutionContext } from '@nestjs/common';
import { httpExceptionBody, type TransportAdapter } from './transport.adapter.js';

type RpcExceptionClass = new (error: string | object) => Error;

// The app's own RpcException: Nest's RPC exception filter tells it apart by instanceof, so it must
// be the class of the @nestjs/microservices the app runs, never one this library brings. Loaded by
// dynamic import (a require in the CommonJS build), on first need only: an app without the package
// never loads it.
let rpcException: RpcExceptionClass | undefined;
let loading: Promise<void> | undefined;

/**
 * Loads @nestjs/microservices' RpcException once. Called at start-up when a limited RPC handler is
 * found (RateLimitPlans), so that refusals, which are said synchronously, find it loaded.
 */
export function loadRpcException(): Promise<void> {
  loading ??= import('@nestjs/microservices').then(
    (microservices) => {
      rpcException = microservices.RpcException as RpcExceptionClass;
    },
    (error: unknown) => {
      loading = undefined;
      throw error;
    },
  );
  return loading;
}

function rpcError(body: object): Error {
  if (rpcException === undefined) {
    // only a handler start-up discovery did not see, refused before its own first load finished
    return new Error(`nest-redis-limit: @nestjs/microservices is not loaded yet (${JSON.stringify(body)})`);
  }
  return new rpcException(body);
}

/**
 * @nestjs/microservices (TCP, Redis, NATS, ...): no response to put headers on; a refusal or an
 * outage is an RpcException whose error object reaches the client as it is. No default tracker:
 * a limit here names its key (checked at start-up).
 */
export const rpcAdapter: TransportAdapter = {
  getRequestResponse(ctx: ExecutionContext) {
    // a discovered handler had it loaded at start-up; one registered later loads it now, while
    // its first decision waits on Redis
    if (rpcException === undefined) loadRpcException().catch(() => undefined);
    // one array per handler invocation, the same one for every guard of it
    return { req: ctx.getArgs(), res: undefined };
  },
  setHeaders() {},
  tooManyRequests: (retryAfterMs) => rpcError({ statusCode: 429, message: 'Too Many Requests', retryAfterMs }),
  unavailable: () => rpcError({ statusCode: 503, message: 'Rate limiter unavailable' }),
  httpException: (error) => rpcError(httpExceptionBody(error)),
};
