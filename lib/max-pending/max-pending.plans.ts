import { Injectable } from '@nestjs/common';
import { assertName } from '../delay-queue/delay-queue.input.js';
import { assertTtl } from '../expiring-hash/expiring-hash.input.js';
import { assertFailMode, type FailMode, type KeyResolver } from '../transports/guard.options.js';
import type { RouteRef } from '../route-identity.js';
import { RoutePlans } from '../route-plans.js';
import { MAX_PENDING, type MaxPendingEntry } from './max-pending.metadata.js';
import { assertKnownOptions, assertPositiveInteger, assertWellFormed, describeValue } from '../validation.js';

/** A handler's cap, checked once at start-up. */
export interface MaxPendingPlan {
  route: string;
  max: number;
  ttlMs: number;
  name: string;
  owner: KeyResolver | undefined;
  failMode: Exclude<FailMode, 'local'>;
  notify: string | undefined;
}

/**
 * Reads `@MaxPending` of every controller when the application starts (a handler's replaces its
 * controller's), checks every option and keeps the result per (class, handler). A bad option makes
 * `app.init()` fail with `Controller.handler` in the message.
 */
@Injectable()
export class MaxPendingPlans extends RoutePlans<MaxPendingPlan | null> {
  protected readonly what = '@MaxPending';
  protected readonly decorators = '@MaxPending';

  protected declaredOn(target: Function): boolean {
    return ((Reflect.getMetadata(MAX_PENDING, target) as unknown[] | undefined) ?? []).length > 0;
  }

  protected compile(route: RouteRef): MaxPendingPlan | null {
    return compile(route, this.redis.options.failMode);
  }
}

function compile({ controller, handler, route, kind }: RouteRef, moduleFailMode: FailMode): MaxPendingPlan | null {
  const own = (Reflect.getMetadata(MAX_PENDING, handler) as MaxPendingEntry[] | undefined) ?? [];
  const entries = own.length > 0 ? own : ((Reflect.getMetadata(MAX_PENDING, controller) as MaxPendingEntry[] | undefined) ?? []);
  if (entries.length === 0) return null;
  try {
    // a slot is held while a response is pending; a WebSocket message has no response to end it
    if (kind === 'ws') throw new TypeError('@MaxPending cannot take effect here: a WebSocket message handler has no response that ends its slot');
    // a microservice message: nothing here watches its reply end, and an event has no caller
    if (kind === 'rpc') throw new TypeError('@MaxPending cannot take effect here: a microservice handler has no response that ends its slot');
    // two caps would reserve two slots per request, and only one id reaches @PendingSlot
    if (entries.length > 1) throw new TypeError('@MaxPending is declared more than once; a route takes one cap');
    return { route, ...check(entries[0]!, moduleFailMode) };
  } catch (error) {
    throw new (error instanceof RangeError ? RangeError : TypeError)(`${route}: ${(error as Error).message}`);
  }
}

/** The options `@MaxPending` takes: anything else (a misspelt `ttl`) is refused. */
const OPTION_NAMES = ['ttlMs', 'name', 'owner', 'failMode', 'notify'];

function check({ max, options }: MaxPendingEntry, moduleFailMode: FailMode): Omit<MaxPendingPlan, 'route'> {
  assertPositiveInteger(max, '@MaxPending(max)');
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`@MaxPending(max, options) takes an options object { ttlMs, name }, got ${describeValue(options)}`);
  }
  assertKnownOptions(options, OPTION_NAMES, '@MaxPending');
  // a module-wide 'local' means 'closed' here: a cap on live slots cannot be kept per process
  const { ttlMs, name, owner, failMode = moduleFailMode === 'local' ? 'closed' : moduleFailMode, notify } = options;
  assertTtl(ttlMs, '@MaxPending.ttlMs');
  if (typeof name !== 'string' || name.length === 0) {
    throw new TypeError(`@MaxPending.name must be a non-empty string, got ${describeValue(name)}`);
  }
  // the hash is `${name}:${owner}`: a ':' in a name would let two caps' owners collide
  if (name.includes(':')) throw new TypeError(`@MaxPending.name must not contain ':', got ${describeValue(name)}`);
  // the name is part of an ExpiringHash key, which the sweep registry lists unescaped
  assertWellFormed(name, '@MaxPending.name');
  if (owner !== undefined && typeof owner !== 'function') {
    throw new TypeError(`@MaxPending.owner must be a function (ctx) => string, got ${describeValue(owner)}`);
  }
  if (failMode === 'local') {
    throw new TypeError(
      "@MaxPending.failMode 'local' cannot take effect: a cap on live slots holds across every app instance, and one process's memory cannot keep it; use 'closed' or 'open'",
    );
  }
  assertFailMode(failMode, '@MaxPending.failMode', false);
  if (notify !== undefined) {
    if (typeof notify !== 'string' || notify.length === 0) {
      throw new TypeError(`@MaxPending.notify must be a non-empty string (a DelayQueue queue name), got ${describeValue(notify)}`);
    }
    // checked as every request's setIfBelow would check it: here, not as a 500 per request
    assertName(notify, '@MaxPending.notify');
  }
  return { max, ttlMs, name, owner, failMode, notify };
}
