import { aclRules } from '../../lib/redis/acl.js';
import { assertName, resolveConsumeOptions, resolveWhen } from '../../lib/delay-queue/delay-queue.input.js';
import { RetryLater } from '../../lib/delay-queue/handler-outcomes.js';
import { assertSlotOptions } from '../../lib/rate-limit/slot-options.js';
import { assertHashKey } from '../../lib/expiring-hash/expiring-hash.input.js';
import { RedisLimitEvents } from '../../lib/observability/redis-limit-events.js';
import { assertOverride } from '../../lib/rate-limit/overrides-policy.js';
import { assertAcquireOptions, assertLimitInput, assertStackInput, rateLimitSpec } from '../../lib/rate-limit/policy.js';
import { RedisKeys } from '../../lib/redis/keys.js';
import { RedisLimitModule } from '../../lib/redis-limit.module.js';
import { resolveOptions } from '../../lib/redis-limit.options.js';

// The "Bad input" rows (docs/bad-input.md) that need no server: module options (checked when RedisConnection
// is built, i.e. at compile()/app.init(); forRoot's own argument and isGlobal by forRoot itself),
// aclRules, RedisLimitEvents, and the checks the services share. Each bad value is a TypeError
// (wrong type) or a RangeError (a number out of range) naming the argument.

type ErrorClass = typeof TypeError | typeof RangeError;
type Row = [label: string, call: () => unknown, type: ErrorClass, message: RegExp];

function thrown(call: () => unknown): Error {
  try {
    call();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw, but the call returned');
}

const LONE = 'a\uDC00b';
// on() and prometheus() need no discovery
const events = new RedisLimitEvents({} as never);

describe('bad input, no server needed', () => {
  const rows: Row[] = [
    // RedisLimitModule options
    ['options null', () => resolveOptions(null as never), TypeError, /^RedisLimitModule: options must be an object, got null$/],
    ['redis a number', () => resolveOptions({ redis: 7001 as never }), TypeError, /^RedisLimitModule: redis must be a URL/],
    ['redis true', () => resolveOptions({ redis: true as never }), TypeError, /^RedisLimitModule: redis must be a URL/],
    ['redis null', () => resolveOptions({ redis: null as never }), TypeError, /^RedisLimitModule: redis must be a URL/],
    ['redis an array', () => resolveOptions({ redis: ['redis://a'] as never }), TypeError, /^RedisLimitModule: redis must be a URL/],
    ['redis ""', () => resolveOptions({ redis: '' }), TypeError, /^RedisLimitModule: redis must be a non-empty URL/],
    [
      'redis.cluster without nodes',
      () => resolveOptions({ redis: { cluster: {} } as never }),
      TypeError,
      /^RedisLimitModule: redis\.cluster\.nodes must be a non-empty array/,
    ],
    ['redis.cluster null', () => resolveOptions({ redis: { cluster: null } as never }), TypeError, /^RedisLimitModule: redis\.cluster\.nodes/],
    [
      'keyPrefix a number',
      () => resolveOptions({ keyPrefix: 42 as never }),
      TypeError,
      /^RedisLimitModule: keyPrefix must be a string without '\{' or '\}', got 42/,
    ],
    ['keyPrefix with }', () => resolveOptions({ keyPrefix: 'app}' }), TypeError, /^RedisLimitModule: keyPrefix/],
    ['keyPrefix with a lone surrogate', () => resolveOptions({ keyPrefix: LONE }), TypeError, /^RedisLimitModule: keyPrefix must be well-formed Unicode/],
    ['failMode null', () => resolveOptions({ failMode: null as never }), TypeError, /^RedisLimitModule: failMode must be 'closed' or 'open', got null/],
    [
      'commandTimeoutMs a string',
      () => resolveOptions({ commandTimeoutMs: '500' as never }),
      TypeError,
      /^RedisLimitModule: commandTimeoutMs must be a positive integer/,
    ],
    ['commandTimeoutMs 0', () => resolveOptions({ commandTimeoutMs: 0 }), RangeError, /^RedisLimitModule: commandTimeoutMs/],
    ['commandTimeoutMs NaN', () => resolveOptions({ commandTimeoutMs: NaN }), RangeError, /^RedisLimitModule: commandTimeoutMs/],
    [
      'commandTimeoutMs 2^31',
      () => resolveOptions({ commandTimeoutMs: 2 ** 31 }),
      RangeError,
      /^RedisLimitModule: commandTimeoutMs .*up to 2147483647, got 2147483648/,
    ],
    ['headers true', () => resolveOptions({ headers: true as never }), TypeError, /^RedisLimitModule: headers must be 'legacy', 'draft', 'both' or false/],
    ['headers "none"', () => resolveOptions({ headers: 'none' as never }), TypeError, /^RedisLimitModule: headers/],
    ['telemetry "yes"', () => resolveOptions({ telemetry: 'yes' as never }), TypeError, /^RedisLimitModule: telemetry must be a boolean, got "yes"/],
    ['telemetry 1', () => resolveOptions({ telemetry: 1 as never }), TypeError, /^RedisLimitModule: telemetry must be a boolean/],
    [
      'tracker a string',
      () => resolveOptions({ tracker: 'x-user-id' as never }),
      TypeError,
      /^RedisLimitModule: tracker must be a function \(ctx\) => string, got "x-user-id"$/,
    ],
    ['localDivisor 0', () => resolveOptions({ localDivisor: 0 }), RangeError, /^RedisLimitModule: localDivisor must be a positive integer, got 0$/],
    ['localDivisor 1.5', () => resolveOptions({ localDivisor: 1.5 }), RangeError, /^RedisLimitModule: localDivisor/],
    [
      'localDivisor a string',
      () => resolveOptions({ localDivisor: '2' as never }),
      TypeError,
      /^RedisLimitModule: localDivisor must be a positive integer, got "2"$/,
    ],
    ['shadow "yes"', () => resolveOptions({ shadow: 'yes' as never }), TypeError, /^RedisLimitModule: shadow must be a boolean, got "yes"$/],
    ['shadow null', () => resolveOptions({ shadow: null as never }), TypeError, /^RedisLimitModule: shadow must be a boolean, got null$/],
    [
      'refusalCache "yes"',
      () => resolveOptions({ refusalCache: 'yes' as never }),
      TypeError,
      /^RedisLimitModule: refusalCache must be a boolean or \{ maxEntries\? \}, got "yes"$/,
    ],
    ['refusalCache null', () => resolveOptions({ refusalCache: null as never }), TypeError, /^RedisLimitModule: refusalCache must be a boolean/],
    [
      'refusalCache: an unknown option',
      () => resolveOptions({ refusalCache: { size: 5 } as never }),
      TypeError,
      /^RedisLimitModule: refusalCache\.size is not an option \(maxEntries\)$/,
    ],
    [
      'refusalCache.maxEntries 0',
      () => resolveOptions({ refusalCache: { maxEntries: 0 } }),
      RangeError,
      /^RedisLimitModule: refusalCache\.maxEntries must be a positive integer, got 0$/,
    ],
    [
      'refusalCache.maxEntries a string',
      () => resolveOptions({ refusalCache: { maxEntries: '5' as never } }),
      TypeError,
      /^RedisLimitModule: refusalCache\.maxEntries/,
    ],
    // forRoot's argument and isGlobal: Nest reads them in forRoot / forRootAsync, so they are checked there
    [
      'forRoot: a URL instead of options',
      () => RedisLimitModule.forRoot('redis://cache.internal:7001' as never),
      TypeError,
      /^RedisLimitModule: options must be an object, got "redis:\/\/cache.internal:7001"$/,
    ],
    ['forRoot: options null', () => RedisLimitModule.forRoot(null as never), TypeError, /^RedisLimitModule: options must be an object, got null$/],
    ['forRootAsync: options null', () => RedisLimitModule.forRootAsync(null as never), TypeError, /^RedisLimitModule: options must be an object/],
    [
      'forRoot: isGlobal "yes"',
      () => RedisLimitModule.forRoot({ isGlobal: 'yes' as never }),
      TypeError,
      /^RedisLimitModule: isGlobal must be a boolean, got "yes"$/,
    ],
    [
      'forRootAsync: isGlobal 0',
      () => RedisLimitModule.forRootAsync({ isGlobal: 0 as never, useFactory: () => ({}) }),
      TypeError,
      /^RedisLimitModule: isGlobal must be a boolean, got 0$/,
    ],
    ['expiringHash null', () => resolveOptions({ expiringHash: null as never }), TypeError, /^RedisLimitModule: expiringHash must be an object/],
    [
      'expiringHash.mode unknown',
      () => resolveOptions({ expiringHash: { mode: 'lazy' as never } }),
      TypeError,
      /^RedisLimitModule: expiringHash\.mode must be 'auto', 'native' or 'index'/,
    ],
    [
      'sweepIntervalMs -1',
      () => resolveOptions({ expiringHash: { sweepIntervalMs: -1 } }),
      RangeError,
      /^RedisLimitModule: expiringHash\.sweepIntervalMs must be an integer >= 0/,
    ],
    [
      'sweepIntervalMs 2^31',
      () => resolveOptions({ expiringHash: { sweepIntervalMs: 2 ** 31 } }),
      RangeError,
      /^RedisLimitModule: expiringHash\.sweepIntervalMs/,
    ],
    [
      'sweepIntervalMs a string',
      () => resolveOptions({ expiringHash: { sweepIntervalMs: '1000' as never } }),
      TypeError,
      /^RedisLimitModule: expiringHash\.sweepIntervalMs/,
    ],
    [
      'sweepShards 0',
      () => resolveOptions({ expiringHash: { sweepShards: 0 } }),
      RangeError,
      /^RedisLimitModule: expiringHash\.sweepShards must be an integer from 1 to 16384/,
    ],
    ['sweepShards 16385', () => resolveOptions({ expiringHash: { sweepShards: 16_385 } }), RangeError, /^RedisLimitModule: expiringHash\.sweepShards/],
    ['sweepShards a string', () => resolveOptions({ expiringHash: { sweepShards: '16' as never } }), TypeError, /^RedisLimitModule: expiringHash\.sweepShards/],
    ['RedisKeys: a prefix with a lone surrogate', () => new RedisKeys(LONE), TypeError, /^keyPrefix must be well-formed Unicode/],
    // aclRules
    ['aclRules: options null', () => aclRules(null as never), TypeError, /^aclRules options must be an object/],
    ['aclRules: options a string', () => aclRules('rl:' as never), TypeError, /^aclRules options must be an object/],
    ['aclRules: keyPrefix a number', () => aclRules({ keyPrefix: 5 as never }), TypeError, /^keyPrefix must be a string without '\{' or '\}', got 5/],
    ['aclRules: keyPrefix with {', () => aclRules({ keyPrefix: 'app{' }), TypeError, /^keyPrefix must be a string without '\{' or '\}', got "app\{"/],
    ['aclRules: keyPrefix with a lone surrogate', () => aclRules({ keyPrefix: LONE }), TypeError, /^keyPrefix must be well-formed Unicode/],
    ['aclRules: fieldExpiry a string', () => aclRules({ fieldExpiry: 'yes' as never }), TypeError, /^fieldExpiry must be a boolean, got "yes"/],
    // shared checks
    [
      'policy.algorithm "hasOwnProperty"',
      () => rateLimitSpec({ limit: 1, windowMs: 1, algorithm: 'hasOwnProperty' as never }),
      TypeError,
      /^policy\.algorithm must be one of/,
    ],
    ['policy.algorithm "__proto__"', () => rateLimitSpec({ limit: 1, windowMs: 1, algorithm: '__proto__' as never }), TypeError, /^policy\.algorithm/],
    ['runAt a Date-like string', () => resolveWhen({ runAt: '2030-01-01' as never }, 'opts'), TypeError, /^opts\.runAt/],
    ['runAt -1', () => resolveWhen({ runAt: -1 }, 'opts'), RangeError, /^opts\.runAt/],
    ['delayMs null', () => resolveWhen({ delayMs: null as never }, 'opts'), TypeError, /^opts\.delayMs must be a whole number of ms >= 0, got null/],
    ['queue name with a lone surrogate', () => assertName(LONE, 'queue'), TypeError, /^queue must be well-formed Unicode/],
    ['queue name of 1,025 bytes', () => assertName('é'.repeat(512) + 'x', 'queue'), RangeError, /^queue must be at most 1024 bytes, got 1025/],
    [
      'consume: an unknown option',
      () => resolveConsumeOptions({ concurency: 2 }),
      TypeError,
      /^opts\.concurency is not an option \(concurrency, visibilityTimeoutMs, maxAttempts, backoffMs, maxBackoffMs, rateLimit, concurrencyPerKey, globalConcurrency, backoff, jitter, timeoutMs\)/,
    ],
    ['consume: maxBackoffMs -1', () => resolveConsumeOptions({ maxBackoffMs: -1 }), RangeError, /^opts\.maxBackoffMs must be an integer >= 0, got -1/],
    ['consume: maxBackoffMs Infinity', () => resolveConsumeOptions({ maxBackoffMs: Infinity }), RangeError, /^opts\.maxBackoffMs must be an integer >= 0/],
    [
      'consume: maxBackoffMs a string',
      () => resolveConsumeOptions({ maxBackoffMs: '1000' }),
      TypeError,
      /^opts\.maxBackoffMs must be an integer >= 0, got "1000"/,
    ],
    [
      'consume: backoff not a function',
      () => resolveConsumeOptions({ backoff: 1000 as never }),
      TypeError,
      /^opts\.backoff must be a function \(attempt, error\) => ms, got 1000/,
    ],
    [
      'consume: backoff with backoffMs',
      () => resolveConsumeOptions({ backoff: () => 1, backoffMs: 500 }),
      TypeError,
      /^opts: give backoff or backoffMs, not both/,
    ],
    [
      'consume: timeoutMs 0',
      () => resolveConsumeOptions({ timeoutMs: 0 }),
      RangeError,
      /^opts\.timeoutMs must be a positive integer \(ms\) up to 2147483647, got 0/,
    ],
    ['consume: timeoutMs 2^31', () => resolveConsumeOptions({ timeoutMs: 2 ** 31 }), RangeError, /^opts\.timeoutMs must be a positive integer/],
    ['consume: timeoutMs "5s"', () => resolveConsumeOptions({ timeoutMs: '5s' as never }), TypeError, /^opts\.timeoutMs must be a positive integer/],
    [
      'consume: rateLimit.adaptive "yes"',
      () => resolveConsumeOptions({ rateLimit: { limit: 1, windowMs: 1000, adaptive: 'yes' } as never }),
      TypeError,
      /^opts\.rateLimit\.adaptive must be a boolean, got "yes"$/,
    ],
    [
      'consume: concurrencyPerKey 2',
      () => resolveConsumeOptions({ concurrencyPerKey: 2 as never }),
      TypeError,
      /^opts\.concurrencyPerKey must be an object \{ limit, key \}, got 2$/,
    ],
    [
      'consume: concurrencyPerKey with an unknown option',
      () => resolveConsumeOptions({ concurrencyPerKey: { limit: 1, key: () => 'k', leaseMs: 5 } as never }),
      TypeError,
      /^opts\.concurrencyPerKey\.leaseMs is not an option \(limit, key\)$/,
    ],
    [
      'consume: concurrencyPerKey.limit 0',
      () => resolveConsumeOptions({ concurrencyPerKey: { limit: 0, key: () => 'k' } }),
      RangeError,
      /^opts\.concurrencyPerKey\.limit must be an integer >= 1, got 0$/,
    ],
    [
      'consume: concurrencyPerKey.limit "2"',
      () => resolveConsumeOptions({ concurrencyPerKey: { limit: '2', key: () => 'k' } as never }),
      TypeError,
      /^opts\.concurrencyPerKey\.limit must be an integer >= 1, got "2"$/,
    ],
    [
      'consume: concurrencyPerKey.key missing',
      () => resolveConsumeOptions({ concurrencyPerKey: { limit: 2 } as never }),
      TypeError,
      /^opts\.concurrencyPerKey\.key must be a function \(message\) => string, got undefined$/,
    ],
    ['consume: jitter "yes"', () => resolveConsumeOptions({ jitter: 'yes' as never }), TypeError, /^opts\.jitter must be a boolean, got "yes"/],
    ['RetryLater: delayMs -1', () => new RetryLater(-1), RangeError, /^RetryLater: delayMs must be a whole number of ms >= 0, got -1/],
    ['RetryLater: delayMs 1.5', () => new RetryLater(1.5), RangeError, /^RetryLater: delayMs must be a whole number of ms >= 0, got 1\.5/],
    ['RetryLater: delayMs "30"', () => new RetryLater('30' as never), TypeError, /^RetryLater: delayMs must be a whole number of ms >= 0, got "30"/],
    ['RetryLater: opts null', () => new RetryLater(1, null as never), TypeError, /^RetryLater: opts must be an object, got null/],
    ['RetryLater: opts.pauseKey 1', () => new RetryLater(1, { pauseKey: 1 as never }), TypeError, /^RetryLater: opts\.pauseKey must be a boolean, got 1/],
    ['acquireSlot: opts null', () => assertSlotOptions(null, 'opts'), TypeError, /^opts must be an object \{ limit, name\?, leaseMs\? \}, got null/],
    [
      'acquireSlot: an unknown option',
      () => assertSlotOptions({ limit: 1, max: 2 }, 'opts'),
      TypeError,
      /^opts\.max is not an option \(limit, name, leaseMs\)/,
    ],
    ['acquireSlot: limit 0', () => assertSlotOptions({ limit: 0 }, 'opts'), RangeError, /^opts\.limit must be a positive integer, got 0/],
    ['acquireSlot: name ""', () => assertSlotOptions({ limit: 1, name: '' }, 'opts'), TypeError, /^opts\.name must be a non-empty string/],
    ['acquireSlot: name with a lone surrogate', () => assertSlotOptions({ limit: 1, name: LONE }, 'opts'), TypeError, /^opts\.name must be well-formed/],
    ['acquireSlot: leaseMs 1.5', () => assertSlotOptions({ limit: 1, leaseMs: 1.5 }, 'opts'), RangeError, /^opts\.leaseMs must be a positive integer \(ms\)/],
    ['delayQueue null', () => resolveOptions({ delayQueue: null as never }), TypeError, /^RedisLimitModule: delayQueue must be an object, got null/],
    [
      'delayQueue.maxDead -1',
      () => resolveOptions({ delayQueue: { maxDead: -1 } }),
      RangeError,
      /^RedisLimitModule: delayQueue\.maxDead must be an integer >= 0, got -1/,
    ],
    [
      'delayQueue.deadRetentionMs 0',
      () => resolveOptions({ delayQueue: { deadRetentionMs: 0 } }),
      RangeError,
      /^RedisLimitModule: delayQueue\.deadRetentionMs must be an integer >= 1, got 0/,
    ],
    [
      'delayQueue.deadRetentionMs a string',
      () => resolveOptions({ delayQueue: { deadRetentionMs: '1' as never } }),
      TypeError,
      /^RedisLimitModule: delayQueue\.deadRetentionMs/,
    ],
    [
      'delayQueue: an unknown option',
      () => resolveOptions({ delayQueue: { maxdead: 5 } as never }),
      TypeError,
      /^RedisLimitModule: delayQueue\.maxdead is not an option \(deadRetentionMs, maxDead\)/,
    ],
    ['consume: maxAttempts null', () => resolveConsumeOptions({ maxAttempts: null }), TypeError, /^opts\.maxAttempts must be an integer >= 1, got null/],
    ['consume: concurrency 0', () => resolveConsumeOptions({ concurrency: 0 }), RangeError, /^opts\.concurrency must be an integer >= 1, got 0/],
    ['consume: options a number', () => resolveConsumeOptions(3), TypeError, /^opts must be an object, got 3/],
    // the checks the services run first (test/integration/bad-input.spec.ts has them through the services)
    ['assertHashKey: a lone surrogate', () => assertHashKey(LONE), TypeError, /^key must be well-formed Unicode/],
    ['assertHashKey: empty', () => assertHashKey(''), TypeError, /^key must be a non-empty string/],
    ['assertStackInput: limits not an array', () => assertStackInput('k', {}), TypeError, /^limits must be an array/],
    ['assertStackInput: a limit null', () => assertStackInput([null], {}), TypeError, /^limits\[0\] must be an object, got null/],
    [
      'assertStackInput: policy and funnel',
      () => assertStackInput([{ key: 'k', policy: {}, funnel: {} }], {}),
      TypeError,
      /^limits\[0\] takes a policy or a funnel, not both/,
    ],
    ['assertStackInput: options null', () => assertStackInput([], null), TypeError, /^options must be an object, got null/],
    ['assertStackInput: options.peek "yes"', () => assertStackInput([], { peek: 'yes' }), TypeError, /^options\.peek must be a boolean/],
    ['assertStackInput: options.now NaN', () => assertStackInput([], { now: NaN }), RangeError, /^options\.now must be a whole number of ms/],
    ['assertStackInput: options.now a string', () => assertStackInput([], { now: '0' }), TypeError, /^options\.now/],
    ['assertAcquireOptions: null', () => assertAcquireOptions(null), TypeError, /^opts must be an object \{ permits\?, timeoutMs\? \}, got null/],
    ['assertAcquireOptions: timeoutMs -1', () => assertAcquireOptions({ timeoutMs: -1 }), RangeError, /^opts\.timeoutMs must be a finite number >= 0/],
    [
      'assertAcquireOptions: an unknown option',
      () => assertAcquireOptions({ timeout: 5 }),
      TypeError,
      /^opts\.timeout is not an option \(permits, timeoutMs\)$/,
    ],
    [
      'assertStackInput: an unknown option',
      () => assertStackInput([], { peak: true }),
      TypeError,
      /^options\.peak is not an option \(peek, now, route, shadows, shadowRefused\)$/,
    ],
    ['assertStackInput: options.route a number', () => assertStackInput([], { route: 5 }), TypeError, /^options\.route must be a non-empty string, got 5$/],
    ['assertStackInput: options.route ""', () => assertStackInput([], { route: '' }), TypeError, /^options\.route must be a non-empty string, got ""$/],
    ['assertLimitInput: an unknown option', () => assertLimitInput({}, { nowMs: 0 }), TypeError, /^options\.nowMs is not an option \(now\)$/],
    // setOverride's own checks (the ones against declared names: test/integration/bad-input.spec.ts)
    ['assertOverride: name empty', () => assertOverride('', { limit: 1 }), TypeError, /^name must be a non-empty string, got ""$/],
    ['assertOverride: name with a lone surrogate', () => assertOverride(LONE, { limit: 1 }), TypeError, /^name must be well-formed Unicode/],
    [
      'assertOverride: policy undefined',
      () => assertOverride('api', undefined),
      TypeError,
      /^policy must be an object \{ limit, windowMs\?, key\?, ttlMs\? \} or null, got undefined$/,
    ],
    [
      'assertOverride: an unknown option',
      () => assertOverride('api', { limit: 1, window: 5 }),
      TypeError,
      /^policy\.window is not an option \(limit, windowMs, key, ttlMs\)$/,
    ],
    ['assertOverride: limit 0', () => assertOverride('api', { limit: 0 }), RangeError, /^policy\.limit must be a positive integer, got 0$/],
    [
      'assertOverride: windowMs a string',
      () => assertOverride('api', { limit: 1, windowMs: '5' }),
      TypeError,
      /^policy\.windowMs must be a positive integer, got "5"$/,
    ],
    ['assertOverride: key ""', () => assertOverride('api', { limit: 1, key: '' }), TypeError, /^policy\.key must be a non-empty string, got ""$/],
    ['assertOverride: key a number', () => assertOverride('api', { limit: 1, key: 7 }), TypeError, /^policy\.key must be a non-empty string, got 7$/],
    ['assertOverride: key with a lone surrogate', () => assertOverride('api', { limit: 1, key: LONE }), TypeError, /^policy\.key must be well-formed Unicode/],
    ['assertOverride: ttlMs 0', () => assertOverride('api', { limit: 1, ttlMs: 0 }), RangeError, /^policy\.ttlMs must be a positive integer, got 0$/],
    ['assertOverride: ttlMs 1.5', () => assertOverride('api', { limit: 1, ttlMs: 1.5 }), RangeError, /^policy\.ttlMs must be a positive integer, got 1\.5$/],
    [
      'assertOverride: opts beside a policy',
      () => assertOverride('api', { limit: 1 }, { key: 'a' }),
      TypeError,
      /^opts is only for removing a per-key override \(policy null\); give policy\.key instead/,
    ],
    ['assertOverride: opts null', () => assertOverride('api', null, null), TypeError, /^opts must be an object \{ key \} or undefined, got null$/],
    ['assertOverride: opts.ttlMs', () => assertOverride('api', null, { ttlMs: 5 }), TypeError, /^opts\.ttlMs is not an option \(key\)$/],
    ['assertOverride: opts.key ""', () => assertOverride('api', null, { key: '' }), TypeError, /^opts\.key must be a non-empty string, got ""$/],
    // RedisLimitEvents
    ['on: listener null', () => events.on(null as never), TypeError, /^listener must be a function \(event\) => void, got null$/],
    ['prometheus: prefix null', () => events.prometheus(null as never), TypeError, /^prefix must be a Prometheus metric name .*, got null$/],
    ['prometheus: prefix true', () => events.prometheus(true as never), TypeError, /^prefix must be a Prometheus metric name .*, got true$/],
    ['prometheus: prefix "1x"', () => events.prometheus('1x'), TypeError, /^prefix must be a Prometheus metric name .*, got "1x"$/],
    ['prometheus: prefix ""', () => events.prometheus(''), TypeError, /^prefix must be a Prometheus metric name/],
  ];

  it.each(rows)('%s', (_label, call, type, message) => {
    const error = thrown(call);
    expect(error).toBeInstanceOf(type);
    expect(error.message).toMatch(message);
  });

  it('good values pass, and an option given as undefined takes its default', () => {
    expect(resolveOptions({ redis: 'redis://127.0.0.1:1', keyPrefix: '', commandTimeoutMs: 2 ** 31 - 1 })).toMatchObject({ keyPrefix: '' });
    expect(resolveOptions({ redis: { cluster: { nodes: [{ host: '127.0.0.1', port: 1 }] } } }).redis).toBeDefined();
    // a client has a cluster() command method: it is not taken for a cluster config
    const client = { defineCommand: () => undefined, status: 'wait', cluster: () => undefined };
    expect(resolveOptions({ redis: client as never }).redis).toBe(client);
    expect(resolveConsumeOptions({ concurrency: undefined, backoffMs: 0 })).toEqual({
      concurrency: 10,
      visibilityTimeoutMs: 30_000,
      maxAttempts: 3,
      backoffMs: 0,
      maxBackoffMs: 3_600_000,
      jitter: false,
    });
    const backoff = () => 5;
    expect(resolveConsumeOptions({ backoff, jitter: true })).toMatchObject({ backoff, jitter: true, backoffMs: 1000 });
    expect(new RetryLater(0)).toMatchObject({ delayMs: 0, pauseKey: false, name: 'RetryLater' });
    expect(resolveOptions({ delayQueue: { maxDead: 0, deadRetentionMs: undefined } }).delayQueue).toEqual({ maxDead: 0, deadRetentionMs: 604_800_000 });
    expect(aclRules({ keyPrefix: 'a*b?', fieldExpiry: true })).toContain('~a\\*b\\?*');
    expect(() => assertName('🚦'.repeat(256), 'queue')).not.toThrow();
    expect(() => assertHashKey('a{b}:\uD83D\uDEA6')).not.toThrow();
    expect(() => assertStackInput([{ key: 'k', policy: {} }], { peek: true, now: 0 })).not.toThrow();
    expect(() => assertAcquireOptions({ permits: 2, timeoutMs: 0 })).not.toThrow();
    expect(() => assertStackInput([], { route: 'Quotes.list', peek: undefined })).not.toThrow();
    expect(resolveOptions({ failMode: 'local', localDivisor: 3, shadow: true, refusalCache: { maxEntries: undefined } })).toMatchObject({
      failMode: 'local',
      localDivisor: 3,
      shadow: true,
      refusalCache: { maxEntries: 10_000 },
    });
    expect(resolveOptions({ refusalCache: false }).refusalCache).toBe(false);
    // isGlobal: undefined is the default, as every option's
    expect(RedisLimitModule.forRoot({ isGlobal: undefined }).global).toBe(true);
    expect(RedisLimitModule.forRoot(undefined as never).global).toBe(true);
    expect(events.prometheus('app:limits')).toContain('# TYPE app:limits_decisions_total counter');
  });
});
