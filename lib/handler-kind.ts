// Nest's own metadata keys, spelt out as in route-identity.ts: reading them needs none of the
// optional transport packages (@nestjs/microservices, @nestjs/websockets, @nestjs/graphql).
const PATH = 'path';
const METHOD = 'method';
const PATTERN = 'microservices:pattern';
const MESSAGE_MAPPING = 'websockets:message_mapping';
const MESSAGE = 'message';
const RESOLVER_TYPE = 'graphql:resolver_type';
const RESOLVER_NAME = 'graphql:resolver_name';
const RESOLVER_PROPERTY = 'graphql:resolve_property';

/** The execution-context type a handler is called in (ExecutionContext.getType()). */
export type HandlerKind = 'http' | 'graphql' | 'ws' | 'rpc';

/**
 * What calls `handler`: an HTTP route, a GraphQL resolver method, a WebSocket message handler
 * or a microservice message/event handler; undefined for a method nothing calls as a handler,
 * where the guards' decorators cannot take effect.
 */
export function handlerKind(handler: Function): HandlerKind | undefined {
  if (Reflect.getMetadata(PATTERN, handler) !== undefined) return 'rpc';
  if (Reflect.getMetadata(MESSAGE_MAPPING, handler) === true) return 'ws';
  if (Reflect.getMetadata(RESOLVER_TYPE, handler) !== undefined || Reflect.getMetadata(RESOLVER_PROPERTY, handler) === true) return 'graphql';
  if (Reflect.getMetadata(PATH, handler) !== undefined && Reflect.getMetadata(METHOD, handler) !== undefined) return 'http';
  return undefined;
}

/** A GraphQL @ResolveField method: Nest runs guards there only when the GraphQL module's
 * `fieldResolverEnhancers` lists 'guards'. */
export function isFieldResolver(handler: Function): boolean {
  return Reflect.getMetadata(RESOLVER_PROPERTY, handler) === true;
}

/** What the transport calls the handler by, for the scope of its unnamed counters: the
 * microservice pattern, the WebSocket message or the GraphQL field. */
export function handlerAddress(handler: Function, kind: HandlerKind): string {
  const patterns: unknown = kind === 'rpc' ? Reflect.getMetadata(PATTERN, handler) : undefined;
  const value: unknown =
    kind === 'rpc'
      ? Array.isArray(patterns) && patterns.length === 1 // Nest keeps a list (Nest 11+)
        ? patterns[0]
        : patterns
      : kind === 'ws'
        ? Reflect.getMetadata(MESSAGE, handler)
        : kind === 'graphql'
          ? `${String(Reflect.getMetadata(RESOLVER_TYPE, handler) ?? 'field')}.${String(Reflect.getMetadata(RESOLVER_NAME, handler) ?? handler.name)}`
          : undefined;
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
