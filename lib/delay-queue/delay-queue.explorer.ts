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
      if (!instance || typeof instance !== 'object' || !wrapper.isDependencyTreeStatic()) continue;
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
