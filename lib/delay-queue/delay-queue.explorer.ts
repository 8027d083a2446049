import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { assertName, resolveConsumeOptions } from './delay-queue.input.js';
import { DelayQueueService } from './delay-queue.service.js';
import type { DelayedHandler } from './delay-queue.types.js';
import { ON_DELAYED, type OnDelayedEntry } from './on-delayed.decorator.js';
import { problemsError } from '../validation.js';

/**
 * Finds every `@OnDelayed` method of every provider once the application is up and starts a
 * consumer for it; DelayQueueService stops them all at shutdown. Bad options fail start-up with
 * `Provider.method` in the message.
 */
@Injectable()
export class DelayQueueExplorer implements OnApplicationBootstrap {
  constructor(
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
    @Inject(DelayQueueService) private readonly queues: DelayQueueService,
  ) {}

  onApplicationBootstrap(): void {
    const found: { entry: OnDelayedEntry; at: string; handler: DelayedHandler }[] = [];
    const problems: Error[] = [];
    for (const wrapper of this.discovery.getProviders()) {
      const instance = wrapper.instance as Record<string, unknown> | undefined;
      if (!wrapper.isDependencyTreeStatic()) {
        problems.push(...perRequestHandlers(wrapper.metatype));
        continue;
      }
      if (!instance || typeof instance !== 'object') continue;
      const prototype = Object.getPrototypeOf(instance) as object;
      for (const method of this.scanner.getAllMethodNames(prototype)) {
        const fn = instance[method] as DelayedHandler;
        const entry = Reflect.getMetadata(ON_DELAYED, fn) as OnDelayedEntry | undefined;
        if (entry === undefined) continue;
        const at = `${instance.constructor.name}.${method}`;
        try {
          assertName(entry.queue, '@OnDelayed(queue)');
          resolveConsumeOptions(entry.options, '@OnDelayed options');
          found.push({ entry, at, handler: fn.bind(instance) });
        } catch (error) {
          // the error's own class kept: a number out of range stays a RangeError
          const Kind = error instanceof RangeError ? RangeError : TypeError;
          problems.push(new Kind(`${at}: ${(error as Error).message}`));
        }
      }
    }
    if (problems.length > 0) throw problemsError('Invalid @OnDelayed options', problems);
    for (const { entry, handler } of found) this.queues.consume(entry.queue, handler, entry.options);
  }
}

/**
 * A provider built per request (request-scoped, or depending on one) has no instance a consumer
 * could call: its `@OnDelayed` methods fail start-up rather than never running.
 */
function perRequestHandlers(metatype: unknown): TypeError[] {
  if (typeof metatype !== 'function') return [];
  const problems: TypeError[] = [];
  const seen = new Set<string>();
  // its own methods and inherited ones, as discovery scans a singleton's
  for (let proto = (metatype as { prototype?: object }).prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object) {
    for (const method of Object.getOwnPropertyNames(proto)) {
      const fn = (proto as Record<string, unknown>)[method];
      if (method === 'constructor' || seen.has(method) || typeof fn !== 'function') continue;
      seen.add(method);
      if (Reflect.getMetadata(ON_DELAYED, fn) === undefined) continue;
      problems.push(
        new TypeError(`${metatype.name}.${method}: @OnDelayed needs a provider that is built once (a singleton); this one is request-scoped or depends on one`),
      );
    }
  }
  return problems;
}
