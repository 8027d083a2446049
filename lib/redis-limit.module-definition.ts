import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { RedisLimitModuleExtras, RedisLimitModuleOptions } from './redis-limit.options.js';
import { describeValue } from './validation.js';

/** Nest's builder output for RedisLimitModule; `REDIS_LIMIT_OPTIONS` injects the raw options. */
export const {
  ConfigurableModuleClass,
  MODULE_OPTIONS_TOKEN: REDIS_LIMIT_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<RedisLimitModuleOptions>({ moduleName: 'RedisLimit' })
  .setClassMethodName('forRoot')
  // isGlobal is an extra: Nest reads it from the forRoot / forRootAsync call itself
  .setExtras<RedisLimitModuleExtras>({ isGlobal: true }, (definition, extras) => ({ ...definition, global: isGlobal(extras.isGlobal) }))
  .build();

/** `isGlobal`, checked when forRoot / forRootAsync is called: Nest would take an explicit
 * undefined for false, and 'no' for true. */
function isGlobal(value: unknown): boolean {
  if (value === undefined) return true;
  if (typeof value !== 'boolean') throw new TypeError(`RedisLimitModule: isGlobal must be a boolean, got ${describeValue(value)}`);
  return value;
}

/** forRoot's and forRootAsync's argument: an object. Nest's builder would read a string's
 * characters as options (a URL given for the options connected to localhost) and fail on null
 * with a message that names nothing. */
export function assertModuleOptions(options: unknown): void {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`RedisLimitModule: options must be an object, got ${describeValue(options)}`);
  }
}

/**
 * What forRootAsync's factory returns: the module options (a factory typed
 * `(...): RedisLimitModuleOptions` fits), never `isGlobal`. Nest decides whether the module is
 * global when forRootAsync is called, before any factory runs, so `isGlobal` goes in that call.
 */
export type RedisLimitFactoryOptions = RedisLimitModuleOptions & { isGlobal?: never };

/**
 * forRootAsync's argument: `imports`, `inject` and one of `useFactory`, `useClass` or
 * `useExisting`; `isGlobal` (default true) beside them, never in what the factory returns.
 */
export type RedisLimitModuleAsyncOptions = Omit<typeof ASYNC_OPTIONS_TYPE, 'useFactory'> & {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- Nest's own useFactory type: `inject` hands it providers of any type
  useFactory?: (...args: any[]) => RedisLimitFactoryOptions | Promise<RedisLimitFactoryOptions>;
};

/** The options provider of a forRootAsync factory that returned `isGlobal` anyway (a cast, or
 * useClass): refused at start-up rather than silently ignored. */
export function assertNoLateIsGlobal(raw: unknown): void {
  if (typeof raw === 'object' && raw !== null && 'isGlobal' in raw) {
    throw new TypeError('RedisLimitModule: isGlobal belongs in forRootAsync({ isGlobal, useFactory }), not in what useFactory returns');
  }
}
