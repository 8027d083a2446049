/** An exception class constructed with its error object (WsException, RpcException). */
export type ErrorClass = new (error: string | object) => Error;

/**
 * A class of an optional peer package, loaded once on first need. A transport's refusal must be
 * the app's own exception class (Nest's filters tell it apart by instanceof), so it comes from
 * the package the app runs, never from one this library brings; an app without the package never
 * loads it. `load` is a dynamic import (a require() in the CommonJS build) written in the
 * adapter's own module, so bundlers and the CommonJS build see a literal specifier.
 */
export function peerClass(load: () => Promise<ErrorClass>) {
  let loaded: ErrorClass | undefined;
  let loading: Promise<void> | undefined;
  return {
    /** The class, once loaded. */
    get: (): ErrorClass | undefined => loaded,
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
