import type { HttpException } from '@nestjs/common';

/** An exception class constructed with its error object (WsException, RpcException). */
export type ErrorClass = new (error: string | object) => Error;

/**
 * A class of an optional peer package, loaded once on first need. A transport's refusal must be
 * the app's own exception class (Nest's filters tell it apart by instanceof), so it comes from
 * the package the app runs, never from one this library brings; an app without the package never
 * loads it. `load` is a dynamic import (a require() in the CommonJS build) written in the
 * adapter's own module, so bundlers and the CommonJS build see a literal specifier.
 */
export function peerClass(packageName: string, load: () => Promise<ErrorClass>) {
  let loaded: ErrorClass | undefined;
  let loading: Promise<void> | undefined;
  return {
    /** The class, once loaded. */
    get: (): ErrorClass | undefined => loaded,
    /** An instance carrying `body`; a plain Error naming the package while it is not loaded yet
     * (only for a handler start-up discovery did not see, refused before its first load ended). */
    create(body: object): Error {
      if (loaded === undefined) return new Error(`nest-redis-limit: ${packageName} is not loaded yet (${JSON.stringify(body)})`);
      return new loaded(body);
    },
    /** Loads it (once; a failed load is tried again next time). */
    load(): Promise<void> {
      loading ??= load().then(
        (errorClass) => {
          loaded = errorClass;
        },
        (error: unknown) => {
          loading = undefined;
          throw error;
        },
      );
      return loading;
    },
  };
}

/** How a transport whose answers are a peer class's instances refuses, fails and passes an
 * HttpException on: its error object is `{ statusCode, message, ... }`, as Nest's filters send it. */
export function peerAnswers(peer: { create(body: object): Error }) {
  return {
    tooManyRequests: (retryAfterMs: number) => peer.create({ statusCode: 429, message: 'Too Many Requests', retryAfterMs }),
    unavailable: () => peer.create({ statusCode: 503, message: 'Rate limiter unavailable' }),
    httpException: (error: HttpException) => peer.create(httpExceptionBody(error)),
  };
}

/** An HttpException's answer as a body: its response object, or `{ statusCode, message }`. */
export function httpExceptionBody(error: HttpException): object {
  const response = error.getResponse();
  return typeof response === 'object' && response !== null ? response : { statusCode: error.getStatus(), message: response };
}
