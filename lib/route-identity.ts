import { RequestMethod, type Type } from '@nestjs/common';
import { handlerAddress, handlerKind, type HandlerKind } from './handler-kind.js';

// Nest's own metadata keys (PATH_METADATA, METHOD_METADATA, VERSION_METADATA, HOST_METADATA and
// MODULE_PATH of @nestjs/common/constants), spelt out: that file is no public entry point, and
// the values have not changed since Nest 8.
const PATH = 'path';
const METHOD = 'method';
const VERSION = '__version__';
const HOST = 'host';
const MODULE_PATH = '__module_path__';

/** One handler of one class: `route` names it in logs and errors, `scope` keys its unnamed counters. */
export interface RouteRef {
  controller: Type;
  handler: Function;
  /** `Controller.handler`. */
  route: string;
  /** Where it is served and by whom, e.g. 'GET /v1/users UsersController.list'. */
  scope: string;
  /** What calls it (undefined: nothing does, so no guard runs there). */
  kind?: HandlerKind | undefined;
}

/**
 * The route of `handler` in `controller`. `modulePath` is the path RouterModule mounts the
 * controller's module under (known for discovered controllers only). Two same-named classes
 * differ in path, version or host wherever Nest could tell their requests apart.
 */
export function routeRef(controller: Type, handler: Function, modulePath?: string): RouteRef {
  const route = `${controller.name}.${handler.name}`;
  const kind = handlerKind(handler);
  // a resolver, gateway or message handler: what its transport calls it by
  if (kind !== undefined && kind !== 'http') return { controller, handler, route, kind, scope: `${kind} ${handlerAddress(handler, kind)} ${route}` };
  const method: unknown = Reflect.getMetadata(METHOD, handler);
  const path = [modulePath, Reflect.getMetadata(PATH, controller), Reflect.getMetadata(PATH, handler)]
    .map(pathPart)
    .filter((part) => part !== '')
    .join('/');
  const version: unknown = Reflect.getMetadata(VERSION, handler) ?? Reflect.getMetadata(VERSION, controller);
  const host: unknown = Reflect.getMetadata(HOST, controller);
  const scope = [
    typeof method === 'number' ? (RequestMethod[method] ?? String(method)) : undefined,
    `/${path}`,
    version === undefined ? undefined : `version=${listed(version)}`,
    host === undefined ? undefined : `host=${listed(host)}`,
    route,
  ];
  return { controller, handler, route, kind, scope: scope.filter((part) => part !== undefined).join(' ') };
}

/** The path RouterModule gave `module` in the application `applicationId`, if any. */
export function modulePathOf(module: unknown, applicationId: string | undefined): string | undefined {
  if (typeof module !== 'function') return undefined;
  const path: unknown =
    (applicationId === undefined ? undefined : Reflect.getMetadata(MODULE_PATH + applicationId, module)) ?? Reflect.getMetadata(MODULE_PATH, module);
  return typeof path === 'string' ? path : undefined;
}

// a path without its outer slashes; several paths (Nest takes arrays) as {a,b}
function pathPart(value: unknown): string {
  if (value === undefined || value === null) return '';
  return listed(value, (path) => path.replace(/^\/+|\/+$/g, ''));
}

function listed(value: unknown, each: (text: string) => string = (text) => text): string {
  const items = (Array.isArray(value) ? value : [value]).map((item) => each(String(item)));
  return items.length === 1 ? items[0]! : `{${items.join(',')}}`;
}
