import { Inject, Injectable } from '@nestjs/common';
import { ApplicationConfig, ModulesContainer } from '@nestjs/core';
import { handlerKind } from '../handler-kind.js';
import { RedisConnection } from '../redis/redis-connection.js';
import { DecisionEngine } from './decision-engine.js';
import { GatewayDefaultLimitsGuard } from './default-limits.guard.js';
import { OutcomeInterceptor } from './outcome.interceptor.js';
import { RateLimitPlans } from './rate-limit.plans.js';

// @nestjs/common/constants' GUARDS_METADATA and INTERCEPTORS_METADATA (unchanged since Nest 5)
const GUARDS = '__guards__';
const INTERCEPTORS = '__interceptors__';
/** Marks the instances attached here, so that an app built later replaces those of an earlier one. */
const ATTACHED = Symbol('nest-redis-limit gateway enhancer');

/**
 * Nest 11 wires WebSocket gateways without the app's global guards and interceptors (Nest 12
 * gives them both), so neither the module's APP_GUARD (defaultLimits) and APP_INTERCEPTOR (countIf
 * outcomes) nor an app's own global RateLimitGuard would see a gateway message there. This
 * attaches a guard and an interceptor to every gateway class of the app, as `@UseGuards` /
 * `@UseInterceptors` would: the guard before the class's own, where Nest 12 runs the global ones
 * (it decides as the app's global RateLimitGuard would, see GatewayDefaultLimitsGuard), the
 * interceptor after them. It runs when the module's providers are created, before `app.init()`
 * connects the gateways. On Nest 12 the global ones run first and decide; these then find the
 * message decided (a request is decided once) and its outcome judged.
 *
 * A gateway class shared by two apps in one process (tests) serves the app built last.
 */
@Injectable()
export class GatewayEnhancers {
  constructor(
    @Inject(ModulesContainer) modules: ModulesContainer,
    @Inject(DecisionEngine) engine: DecisionEngine,
    @Inject(RateLimitPlans) plans: RateLimitPlans,
    @Inject(RedisConnection) redis: RedisConnection,
    @Inject(ApplicationConfig) config: ApplicationConfig,
  ) {
    const gateways = [...modules.values()].flatMap((module) => [...module.providers.values()].map((wrapper) => wrapper.metatype)).filter(isGateway);
    if (gateways.length === 0) return;
    const guard = tagged(new GatewayDefaultLimitsGuard(engine, plans, redis, config));
    const interceptor = tagged(new OutcomeInterceptor());
    for (const gateway of new Set(gateways)) {
      attach(gateway, GUARDS, guard, 'first');
      attach(gateway, INTERCEPTORS, interceptor, 'last');
    }
  }
}

/** A class with a `@SubscribeMessage` handler, its own or inherited. */
function isGateway(metatype: unknown): metatype is Function {
  if (typeof metatype !== 'function' || metatype.prototype === undefined) return false;
  for (let proto = metatype.prototype as object | null; proto !== null && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const value: unknown = name === 'constructor' ? undefined : Object.getOwnPropertyDescriptor(proto, name)?.value;
      if (typeof value === 'function' && handlerKind(value) === 'ws') return true;
    }
  }
  return false;
}

function tagged<T extends object>(instance: T): T {
  Object.defineProperty(instance, ATTACHED, { value: true });
  return instance;
}

function attach(gateway: Function, metadataKey: string, instance: object, place: 'first' | 'last'): void {
  // what Nest reads, a base class's included; written as the class's own
  const current = (Reflect.getMetadata(metadataKey, gateway) as unknown[] | undefined) ?? [];
  const kept = current.filter(
    (enhancer) => !(typeof enhancer === 'object' && enhancer !== null && ATTACHED in enhancer && enhancer.constructor === instance.constructor),
  );
  Reflect.defineMetadata(metadataKey, place === 'first' ? [instance, ...kept] : [...kept, instance], gateway);
}
