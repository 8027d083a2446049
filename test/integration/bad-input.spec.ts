import 'reflect-metadata';
import { Controller, Get, Injectable, Scope, type Type } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import fc from 'fast-check';
import {
  DelayQueueService,
  ExpiringHashService,
  Funnel,
  MaxPending,
  OnDelayed,
  RateLimit,
  RedisLimitModule,
  RedisScriptError,
  type RateLimitPolicy,
} from '../../lib/index.js';
import { escapeKeyPart } from '../../lib/redis/keys.js';
import { limiterModule, uniquePrefix, withLimiterApp, type LimiterApp } from '../harness/limiter-app.js';
import { RedisNode } from '../harness/redis-server.js';

// The rows of the "Bad input" tables (docs/bad-input.md) that need a server: each bad value is refused before
// Redis is asked, with a TypeError (wrong type) or a RangeError (a number out of range) whose
// message names the argument; decorator options fail app.init(), naming Controller.handler too.
// The pure checks (module options, aclRules) are in test/unit/bad-input.spec.ts.

type ErrorClass = typeof TypeError | typeof RangeError;
type Row = [label: string, call: () => unknown, type: ErrorClass, message: RegExp];

/** What `call` threw or rejected with; fails the test if it succeeded. */
async function failure(call: () => unknown): Promise<Error> {
  try {
    await call();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a failure, but the call succeeded');
}

const POLICY: RateLimitPolicy = { limit: 5, windowMs: 60_000 };
const FUNNEL = { capacity: 2, leakingDurationMs: 60_000 };
const LONE = 'lone \uD800 surrogate';

describe('bad input', () => {
  const ctx = withLimiterApp({ expiringHash: { sweepIntervalMs: 0 } });
  const limiter = () => ctx.app.limiter;
  const hash = () => ctx.app.moduleRef.get(ExpiringHashService);
  const queue = () => ctx.app.moduleRef.get(DelayQueueService);

  describe('service arguments are refused before Redis is asked', () => {
    const rows: Row[] = [
      // RateLimiterService
      ['peek: key not a string', () => limiter().peek(7 as never, POLICY), TypeError, /^key must be a non-empty string, got 7$/],
      ['acquire: empty key', () => limiter().acquire('', POLICY), TypeError, /^key must be a non-empty string/],
      ['reset: empty key', () => limiter().reset('', POLICY), TypeError, /^key must be a non-empty string/],
      ['funnel: empty key', () => limiter().funnel('', FUNNEL), TypeError, /^key must be a non-empty string/],
      ['consume: policy missing', () => limiter().consume('k', undefined as never), TypeError, /^policy must be an object/],
      ['consume: no limit', () => limiter().consume('k', { windowMs: 1000 } as never), TypeError, /^policy\.limit must be a positive integer, got undefined/],
      ['consume: windowMs a string', () => limiter().consume('k', { limit: 1, windowMs: '1000' } as never), TypeError, /^policy\.windowMs/],
      ['consume: windowMs above 2^53', () => limiter().consume('k', { limit: 1, windowMs: 2 ** 53 }), RangeError, /^policy\.windowMs/],
      [
        'consume: algorithm "toString"',
        () => limiter().consume('k', { ...POLICY, algorithm: 'toString' } as never),
        TypeError,
        /^policy\.algorithm must be one of/,
      ],
      ['consume: algorithm null', () => limiter().consume('k', { ...POLICY, algorithm: null } as never), TypeError, /^policy\.algorithm/],
      ['consume: permits a string', () => limiter().consume('k', POLICY, '2' as never), TypeError, /^permits must be a positive integer, got "2"/],
      ['consume: permits NaN', () => limiter().consume('k', POLICY, NaN), RangeError, /^permits must be a positive integer, got NaN/],
      ['consume: permits 1.5', () => limiter().consume('k', POLICY, 1.5), RangeError, /^permits must be a positive integer/],
      ['consume: permits above the limit', () => limiter().consume('k', POLICY, 6), RangeError, /^permits \(6\) exceeds the limit \(5\)/],
      ['peek: policy limit 0', () => limiter().peek('k', { limit: 0, windowMs: 1000 }), RangeError, /^policy\.limit/],
      ['reset: policy windowMs -1', () => limiter().reset('k', { limit: 1, windowMs: -1 }), RangeError, /^policy\.windowMs/],
      ['acquire: permits above the limit is no wait', () => limiter().acquire('k', POLICY, { permits: 6 }), RangeError, /^permits \(6\) exceeds/],
      ['acquire: permits 0', () => limiter().acquire('k', POLICY, { permits: 0 }), RangeError, /^permits must be a positive integer/],
      ['acquire: timeoutMs -1', () => limiter().acquire('k', POLICY, { timeoutMs: -1 }), RangeError, /^opts\.timeoutMs/],
      ['acquire: timeoutMs Infinity', () => limiter().acquire('k', POLICY, { timeoutMs: Infinity }), RangeError, /^opts\.timeoutMs/],
      ['acquire: timeoutMs a string', () => limiter().acquire('k', POLICY, { timeoutMs: '5' as never }), RangeError, /^opts\.timeoutMs/],
      ['funnel: capacity 0', () => limiter().funnel('k', { capacity: 0, leakingDurationMs: 1000 }), RangeError, /^funnel\.capacity/],
      ['funnel: capacity a string', () => limiter().funnel('k', { capacity: '1', leakingDurationMs: 1000 } as never), TypeError, /^funnel\.capacity/],
      ['funnel: leakingDurationMs NaN', () => limiter().funnel('k', { capacity: 1, leakingDurationMs: NaN }), RangeError, /^funnel\.leakingDurationMs/],
      [
        'funnel: capacity × duration above 2^53',
        () => limiter().funnel('k', { capacity: 2 ** 30, leakingDurationMs: 2 ** 30 }),
        RangeError,
        /^funnel: .*above 2\^53/,
      ],
      ['funnel: quota 0', () => limiter().funnel('k', FUNNEL, 0), RangeError, /^quota must be a positive integer/],
      ['funnel: quota above capacity', () => limiter().funnel('k', FUNNEL, 3), RangeError, /^quota \(3\) exceeds the limit \(2\)/],
      ['decide: empty scope', () => limiter().decide([{ key: 'k', scope: '', policy: POLICY }]), TypeError, /^scope must be a non-empty string/],
      ['decide: scope not a string', () => limiter().decide([{ key: 'k', scope: 5 as never, policy: POLICY }]), TypeError, /^scope must be a non-empty string/],
      ['decide: no policy or funnel', () => limiter().decide([{ key: 'k' }]), TypeError, /^policy must be an object/],
      [
        'decide: the second of a stack',
        () =>
          limiter().decide([
            { key: 'k', policy: POLICY },
            { key: 'k', funnel: FUNNEL, permits: 3 },
          ]),
        RangeError,
        /^limits\[1\]\.quota \(3\) exceeds the limit \(2\)/,
      ],
      [
        'decide: an empty key in a stack',
        () =>
          limiter().decide([
            { key: 'k', policy: POLICY },
            { key: '', policy: POLICY },
          ]),
        TypeError,
        /^limits\[1\]\.key/,
      ],
      [
        'decide: options.route a number',
        () => limiter().decide([{ key: 'k', policy: POLICY }], { route: 5 as never }),
        TypeError,
        /^options\.route must be a non-empty string, got 5$/,
      ],
      [
        'decide: an unknown option',
        () => limiter().decide([{ key: 'k', policy: POLICY }], { peak: true } as never),
        TypeError,
        /^options\.peak is not an option \(peek, now, route, shadows, shadowRefused\)$/,
      ],
      [
        'acquire: an unknown option',
        () => limiter().acquire('k', POLICY, { timeout: 5 } as never),
        TypeError,
        /^opts\.timeout is not an option \(permits, timeoutMs\)$/,
      ],
      [
        'refund: grantId null',
        () => limiter().refund('k', POLICY, null as never),
        TypeError,
        /^grantId must be the non-empty string an allowed decision returned, got null$/,
      ],
      ['refund: empty grantId', () => limiter().refund('k', POLICY, ''), TypeError, /^grantId must be the non-empty string/],
      ['refund: permits 0', () => limiter().refund('k', POLICY, 'g', 0), RangeError, /^permits must be a positive integer, got 0$/],
      ['refund: permits a string', () => limiter().refund('k', POLICY, 'g', '2' as never), TypeError, /^permits must be a positive integer, got "2"$/],
      ['refund: a bad policy', () => limiter().refund('k', { limit: 5, windowMs: 0 }, 'g'), RangeError, /^policy\.windowMs must be a positive integer, got 0$/],
      [
        'penalize: permits missing',
        () => limiter().penalize('k', POLICY, undefined as never),
        TypeError,
        /^permits must be a positive integer, got undefined$/,
      ],
      ['penalize: permits 1.5', () => limiter().penalize('k', POLICY, 1.5), RangeError, /^permits must be a positive integer, got 1\.5$/],
      [
        'penalize: a token bucket past 2^53',
        () => limiter().penalize('k', { ...POLICY, algorithm: 'token-bucket' }, 2 ** 40),
        RangeError,
        /^permits \(1099511627776\) is too large for this bucket: \(permits \+ limit\) × window must stay below 2\^53$/,
      ],
      [
        'penalizeLimit: a funnel past 2^53',
        () => limiter().penalizeLimit({ key: 'k', funnel: FUNNEL }, 2 ** 40),
        RangeError,
        /^permits \(1099511627776\) is too large for this bucket/,
      ],
      ['block: durationMs 0', () => limiter().block('k', POLICY, 0), RangeError, /^durationMs must be a positive integer, got 0$/],
      ['block: durationMs NaN', () => limiter().block('k', POLICY, NaN), RangeError, /^durationMs must be a positive integer, got NaN$/],
      ['block: durationMs a string', () => limiter().block('k', POLICY, '60000' as never), TypeError, /^durationMs must be a positive integer, got "60000"$/],
      ['refundLimit: limit null', () => limiter().refundLimit(null as never, 'g'), TypeError, /^limit must be an object, got null$/],
      [
        'blockLimit: a policy and a funnel',
        () => limiter().blockLimit({ key: 'k', policy: POLICY, funnel: FUNNEL }, 5),
        TypeError,
        /^limit takes a policy or a funnel, not both$/,
      ],
      [
        'penalizeLimit: a funnel named funnel',
        () => limiter().penalizeLimit({ key: 'k', funnel: { capacity: 0, leakingDurationMs: 1 } }, 1),
        RangeError,
        /^funnel\.capacity/,
      ],
      [
        'penalizeLimit: options null',
        () => limiter().penalizeLimit({ key: 'k', policy: POLICY }, 1, null as never),
        TypeError,
        /^options must be an object, got null$/,
      ],
      [
        'refundLimit: options.now -1',
        () => limiter().refundLimit({ key: 'k', policy: POLICY }, 'g', 1, { now: -1 }),
        RangeError,
        /^options\.now must be a whole number of ms/,
      ],
      [
        'blockLimit: an unknown option',
        () => limiter().blockLimit({ key: 'k', policy: POLICY }, 5, { nowMs: 0 } as never),
        TypeError,
        /^options\.nowMs is not an option \(now\)$/,
      ],
      // ExpiringHashService
      ['get: key not a string', () => hash().get(5 as never, 'f'), TypeError, /^key must be a non-empty string, got 5/],
      ['ttl: empty field', () => hash().ttl('k', ''), TypeError, /^field must be a non-empty string/],
      ['getAll: empty key', () => hash().getAll(''), TypeError, /^key must be a non-empty string/],
      ['entries: empty key', () => hash().entries(''), TypeError, /^key must be a non-empty string/],
      ['count: key not a string', () => hash().count(null as never), TypeError, /^key must be a non-empty string, got null/],
      ['delete: empty key', () => hash().delete('', 'f'), TypeError, /^key must be a non-empty string/],
      ['delete: a field not a string', () => hash().delete('k', 'ok', 3 as never), TypeError, /^fields\[1\] must be a non-empty string/],
      ['delete: a field with a lone surrogate', () => hash().delete('k', LONE), TypeError, /^fields\[0\] must be well-formed Unicode/],
      ['get: field with a lone surrogate', () => hash().get('k', LONE), TypeError, /^field must be well-formed Unicode/],
      ['set: field over 65,535 bytes', () => hash().set('k', 'é'.repeat(32_768), 'v'), RangeError, /^field must be at most 65535 bytes, got 65536/],
      ['set: value undefined', () => hash().set('k', 'f', undefined as never), TypeError, /^value must be a string, got undefined/],
      ['update: value not a string', () => hash().update('k', 'f', 5 as never), TypeError, /^value must be a string/],
      ['update: value with a lone surrogate', () => hash().update('k', 'f', LONE), TypeError, /^value must be well-formed Unicode/],
      ['set: ttlMs null', () => hash().set('k', 'f', 'v', null as never), TypeError, /^ttlMs must be a positive integer, got null/],
      ['set: ttlMs above 2^53', () => hash().set('k', 'f', 'v', 2 ** 53), RangeError, /^ttlMs must be a positive integer/],
      ['expire: ttlMs missing', () => hash().expire('k', 'f', undefined as never), TypeError, /^ttlMs must be a positive integer, got undefined/],
      ['expire: ttlMs 0', () => hash().expire('k', 'f', 0), RangeError, /^ttlMs/],
      ['setIfBelow: ttlMs missing', () => hash().setIfBelow('k', 'f', 'v', undefined as never, 3), TypeError, /^ttlMs must be a positive integer/],
      ['setIfBelow: max a string', () => hash().setIfBelow('k', 'f', 'v', 1000, '3' as never), TypeError, /^max must be a positive integer, got "3"/],
      ['setIfBelow: max Infinity', () => hash().setIfBelow('k', 'f', 'v', 1000, Infinity), RangeError, /^max must be a positive integer/],
      ['set: opts not an object', () => hash().set('k', 'f', 'v', 1000, 'q' as never), TypeError, /^opts must be an object, got "q"/],
      ['set: opts null', () => hash().set('k', 'f', 'v', 1000, null as never), TypeError, /^opts must be an object, got null/],
      ['set: notify not a string', () => hash().set('k', 'f', 'v', 1000, { notify: 5 as never }), TypeError, /^opts\.notify must be a non-empty string, got 5/],
      ['set: notify with a lone surrogate', () => hash().set('k', 'f', 'v', 1000, { notify: LONE }), TypeError, /^opts\.notify must be well-formed Unicode/],
      ['setIfBelow: empty notify', () => hash().setIfBelow('k', 'f', 'v', 1000, 3, { notify: '' }), TypeError, /^opts\.notify must be a non-empty string/],
      [
        'setIfBelow: notify over 1024 bytes',
        () => hash().setIfBelow('k', 'f', 'v', 1000, 3, { notify: 'q'.repeat(1025) }),
        RangeError,
        /^opts\.notify must be at most 1024 bytes/,
      ],
      // DelayQueueService
      ['enqueue: queue not a string', () => queue().enqueue(5 as never, 1), TypeError, /^queue must be a non-empty string, got 5/],
      ['enqueue: queue with a lone surrogate', () => queue().enqueue(LONE, 1), TypeError, /^queue must be well-formed Unicode/],
      ['enqueue: opts null', () => queue().enqueue('q', 1, null as never), TypeError, /^opts must be an object, got null/],
      ['enqueue: id not a string', () => queue().enqueue('q', 1, { id: 5 as never }), TypeError, /^opts\.id must be a non-empty string, got 5/],
      ['enqueue: id over 1024 bytes', () => queue().enqueue('q', 1, { id: 'i'.repeat(1025) }), RangeError, /^opts\.id must be at most 1024 bytes, got 1025/],
      ['enqueue: id with a lone surrogate', () => queue().enqueue('q', 1, { id: LONE }), TypeError, /^opts\.id must be well-formed Unicode/],
      [
        'enqueue: delayMs a string',
        () => queue().enqueue('q', 1, { delayMs: '5' as never }),
        TypeError,
        /^opts\.delayMs must be a whole number of ms >= 0, got "5"/,
      ],
      ['enqueue: delayMs 1.5', () => queue().enqueue('q', 1, { delayMs: 1.5 }), RangeError, /^opts\.delayMs/],
      ['enqueue: delayMs above 2^53', () => queue().enqueue('q', 1, { delayMs: 2 ** 53 }), RangeError, /^opts\.delayMs/],
      ['enqueue: runAt a string', () => queue().enqueue('q', 1, { runAt: '2030-01-01' as never }), TypeError, /^opts\.runAt must be a Date or a whole number/],
      ['enqueue: runAt 1.5', () => queue().enqueue('q', 1, { runAt: 1.5 }), RangeError, /^opts\.runAt/],
      ['enqueue: payload a BigInt', () => queue().enqueue('q', 10n), TypeError, /^payload must be JSON-serializable, got bigint/],
      ['enqueue: payload a Map', () => queue().enqueue('q', { m: new Map() }), TypeError, /^payload\.m must be JSON-serializable: a Map/],
      [
        'enqueue: payload with undefined inside',
        () => queue().enqueue('q', [1, undefined]),
        TypeError,
        /^payload\[1\] must be JSON-serializable, got undefined/,
      ],
      ['enqueue: payload with Infinity', () => queue().enqueue('q', { n: Infinity }), TypeError, /^payload\.n must be JSON-serializable/],
      ['cancel: empty queue', () => queue().cancel('', 'x'), TypeError, /^queue must be a non-empty string/],
      ['cancel: empty id', () => queue().cancel('q', ''), TypeError, /^id must be a non-empty string/],
      ['cancel: id with a lone surrogate', () => queue().cancel('q', LONE), TypeError, /^id must be well-formed Unicode/],
      ['reschedule: id not a string', () => queue().reschedule('q', 5 as never, { delayMs: 1 }), TypeError, /^id must be a non-empty string/],
      ['reschedule: opts missing', () => queue().reschedule('q', 'x', undefined as never), TypeError, /^opts must be an object/],
      ['reschedule: delayMs -1', () => queue().reschedule('q', 'x', { delayMs: -1 }), RangeError, /^opts\.delayMs/],
      ['reschedule: runAt an invalid Date', () => queue().reschedule('q', 'x', { runAt: new Date('nope') }), RangeError, /^opts\.runAt .*Invalid Date/],
      ['reschedule: both delayMs and runAt', () => queue().reschedule('q', 'x', { delayMs: 1, runAt: 1 }), TypeError, /^opts: give runAt or delayMs, not both/],
      ['size: queue over 1024 bytes', () => queue().size('🚦'.repeat(257)), RangeError, /^queue must be at most 1024 bytes, got 1028/],
      ['consume: empty queue', () => queue().consume('', () => 1), TypeError, /^queue must be a non-empty string/],
      ['consume: opts null', () => queue().consume('q', () => 1, null as never), TypeError, /^opts must be an object, got null/],
      ['consume: an unknown option', () => queue().consume('q', () => 1, { maxAttempt: 5 } as never), TypeError, /^opts\.maxAttempt is not an option/],
      [
        'consume: concurrency a string',
        () => queue().consume('q', () => 1, { concurrency: '2' as never }),
        TypeError,
        /^opts\.concurrency must be an integer >= 1, got "2"/,
      ],
      [
        'consume: visibilityTimeoutMs 1.5',
        () => queue().consume('q', () => 1, { visibilityTimeoutMs: 1.5 }),
        RangeError,
        /^opts\.visibilityTimeoutMs must be an integer >= 1/,
      ],
      ['consume: maxAttempts Infinity', () => queue().consume('q', () => 1, { maxAttempts: Infinity }), RangeError, /^opts\.maxAttempts/],
      ['consume: backoffMs -1', () => queue().consume('q', () => 1, { backoffMs: -1 }), RangeError, /^opts\.backoffMs must be an integer >= 0/],
      ['consume: handler not a function', () => queue().consume('q', 'remind' as never), TypeError, /^handler must be a function/],
      [
        'consume: maxBackoffMs -1',
        () => queue().consume('q', () => 1, { maxBackoffMs: -1 }),
        RangeError,
        /^opts\.maxBackoffMs must be an integer >= 0, got -1$/,
      ],
      [
        'consume: maxBackoffMs a string',
        () => queue().consume('q', () => 1, { maxBackoffMs: '1000' as never }),
        TypeError,
        /^opts\.maxBackoffMs must be an integer >= 0, got "1000"$/,
      ],
      [
        'consume: globalConcurrency 0',
        () => queue().consume('q', () => 1, { globalConcurrency: 0 }),
        RangeError,
        /^opts\.globalConcurrency must be an integer >= 1, got 0$/,
      ],
      [
        'consume: globalConcurrency a string',
        () => queue().consume('q', () => 1, { globalConcurrency: '2' as never }),
        TypeError,
        /^opts\.globalConcurrency must be an integer >= 1, got "2"$/,
      ],
      [
        'consume: rateLimit not an object',
        () => queue().consume('q', () => 1, { rateLimit: 5 as never }),
        TypeError,
        /^opts\.rateLimit must be an object \{ limit, windowMs, algorithm\? \}, got 5$/,
      ],
      [
        'consume: rateLimit.windowMs 0',
        () => queue().consume('q', () => 1, { rateLimit: { limit: 5, windowMs: 0 } }),
        RangeError,
        /^opts\.rateLimit\.windowMs must be a positive integer, got 0$/,
      ],
      [
        'consume: rateLimit.limit a string',
        () => queue().consume('q', () => 1, { rateLimit: { limit: '5' as never, windowMs: 1000 } }),
        TypeError,
        /^opts\.rateLimit\.limit must be a positive integer, got "5"$/,
      ],
      [
        'consume: rateLimit.algorithm unknown',
        () => queue().consume('q', () => 1, { rateLimit: { ...POLICY, algorithm: 'leaky' as never } }),
        TypeError,
        /^opts\.rateLimit\.algorithm must be one of/,
      ],
      [
        'consume: rateLimit a token bucket above 2^53',
        () => queue().consume('q', () => 1, { rateLimit: { limit: 2 ** 30, windowMs: 2 ** 30, algorithm: 'token-bucket' } }),
        RangeError,
        /^opts\.rateLimit: limit × window/,
      ],
      [
        'consume: rateLimit.key a string',
        () => queue().consume('q', () => 1, { rateLimit: { ...POLICY, key: 'tenant' as never } }),
        TypeError,
        /^opts\.rateLimit\.key must be a function \(message\) => string, got "tenant"$/,
      ],
      ['enqueueMany: messages not an array', () => queue().enqueueMany('q', { payload: 1 } as never), TypeError, /^messages must be an array/],
      ['enqueueMany: empty queue', () => queue().enqueueMany('', [{ payload: 1 }]), TypeError, /^queue must be a non-empty string/],
      [
        'enqueueMany: a message null',
        () => queue().enqueueMany('q', [{ payload: 1 }, null as never]),
        TypeError,
        /^messages\[1\] must be an object, got null$/,
      ],
      [
        'enqueueMany: an empty id',
        () => queue().enqueueMany('q', [{ payload: 1 }, { payload: 2, id: '' }]),
        TypeError,
        /^messages\[1\]\.id must be a non-empty string/,
      ],
      [
        'enqueueMany: an id over 1024 bytes',
        () => queue().enqueueMany('q', [{ payload: 1, id: 'i'.repeat(1025) }]),
        RangeError,
        /^messages\[0\]\.id must be at most 1024 bytes/,
      ],
      [
        'enqueueMany: a payload undefined',
        () => queue().enqueueMany('q', [{ payload: 1 }, { payload: undefined }]),
        TypeError,
        /^messages\[1\]\.payload must be JSON-serializable, got undefined$/,
      ],
      [
        'enqueueMany: delayMs -1',
        () => queue().enqueueMany('q', [{ payload: 1 }, { payload: 2, delayMs: -1 }]),
        RangeError,
        /^messages\[1\]\.delayMs must be a whole number of ms >= 0, got -1$/,
      ],
      [
        'enqueueMany: runAt a string',
        () => queue().enqueueMany('q', [{ payload: 1, runAt: 'soon' as never }]),
        TypeError,
        /^messages\[0\]\.runAt must be a Date or a whole number/,
      ],
      [
        'enqueueMany: both delayMs and runAt',
        () => queue().enqueueMany('q', [{ payload: 1, delayMs: 1, runAt: 1 }]),
        TypeError,
        /^messages\[0\]: give runAt or delayMs, not both$/,
      ],
      ['dead: opts null', () => queue().dead('q', null as never), TypeError, /^opts must be an object \{ limit\?, cursor\? \}, got null$/],
      ['dead: an unknown option', () => queue().dead('q', { limti: 5 } as never), TypeError, /^opts\.limti is not an option \(limit, cursor\)$/],
      ['dead: limit 0', () => queue().dead('q', { limit: 0 }), RangeError, /^opts\.limit must be an integer from 1 to 1000, got 0$/],
      ['dead: limit 1001', () => queue().dead('q', { limit: 1001 }), RangeError, /^opts\.limit must be an integer from 1 to 1000, got 1001$/],
      ['dead: limit a string', () => queue().dead('q', { limit: '5' as never }), TypeError, /^opts\.limit must be an integer from 1 to 1000, got "5"$/],
      [
        'dead: a cursor not from dead()',
        () => queue().dead('q', { cursor: 'bogus' }),
        TypeError,
        /^opts\.cursor must be a cursor returned by dead\(\), got "bogus"$/,
      ],
      [
        'dead: a cursor not a string',
        () => queue().dead('q', { cursor: 5 as never }),
        TypeError,
        /^opts\.cursor must be a cursor returned by dead\(\), got 5$/,
      ],
      ['dead: empty queue', () => queue().dead(''), TypeError, /^queue must be a non-empty string/],
      [
        'retryDead: ids not an array',
        () => queue().retryDead('q', 'id' as never),
        TypeError,
        /^ids must be an array of message ids, or omitted for all, got "id"$/,
      ],
      ['retryDead: ids null', () => queue().retryDead('q', null as never), TypeError, /^ids must be an array of message ids/],
      [
        'retryDead: more than 1000 ids',
        () =>
          queue().retryDead(
            'q',
            Array.from({ length: 1001 }, (_, i) => `${i}`),
          ),
        RangeError,
        /^ids must hold at most 1000 ids per call, got 1001$/,
      ],
      ['retryDead: an empty id', () => queue().retryDead('q', ['a', '']), TypeError, /^ids\[1\] must be a non-empty string/],
      ['purgeDead: an id with a lone surrogate', () => queue().purgeDead('q', [LONE]), TypeError, /^ids\[0\] must be well-formed Unicode/],
      ['purgeDead: an id over 1024 bytes', () => queue().purgeDead('q', ['i'.repeat(1025)]), RangeError, /^ids\[0\] must be at most 1024 bytes, got 1025$/],
      ['purgeDead: empty queue', () => queue().purgeDead('', ['a']), TypeError, /^queue must be a non-empty string/],
      ['prometheus: prefix "1x"', () => queue().prometheus('1x'), TypeError, /^prefix must be a Prometheus metric name .*, got "1x"$/],
      ['prometheus: prefix null', () => queue().prometheus(null as never), TypeError, /^prefix must be a Prometheus metric name .*, got null$/],
    ];

    it.each(rows)('%s', async (_label, call, type, message) => {
      const error = await failure(call);
      expect(error).toBeInstanceOf(type);
      expect(error.message).toMatch(message);
    });

    it('none of them wrote anything', async () => {
      expect(await ctx.app.keys(`${ctx.app.prefix}*`)).toEqual([]);
    });
  });

  it('takes the largest names and fields it documents, and undefined consume options as defaults', async () => {
    const field = 'é'.repeat(32_767) + 'f'; // 65,535 bytes
    await hash().set('sizes', field, 'v', 60_000);
    expect(await hash().get('sizes', field)).toBe('v');
    const name = '🚦'.repeat(256); // 1,024 bytes
    expect(await queue().enqueue(name, 1, { id: name, delayMs: 60_000 })).toBe(name);
    expect(await queue().size(name)).toEqual({ scheduled: 1, inFlight: 0, dead: 0 });
    expect(await queue().cancel(name, name)).toBe(true);
    await queue()
      .consume('sizes', () => 1, { concurrency: undefined, backoffMs: 0 })
      .stop();
  });

  it('two ids that differ only in a lone surrogate can no longer collide', async () => {
    // both used to reach Redis as 'a\uFFFD': the second enqueue was taken for the first
    await queue().enqueue('collide', 1, { id: 'a\uFFFD', delayMs: 60_000 });
    await expect(queue().enqueue('collide', 2, { id: 'a\uD800', delayMs: 60_000 })).rejects.toThrow(TypeError);
    await expect(queue().cancel('collide', 'a\uDBFF')).rejects.toThrow(/^id must be well-formed/);
    expect(await queue().size('collide')).toEqual({ scheduled: 1, inFlight: 0, dead: 0 });
  });

  describe('arbitrary user input', () => {
    // every kind of character the key builder treats specially, plus any code point at all
    const char = fc.oneof(
      fc.constantFrom('{', '}', ':', '%', '%3A', '%u', '\uD800', '\uDFFF', '\u0000', '\n', ' ', '*', '?', '[', '\\', '🚦', 'é', '\uFFFD'),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    );
    const text = fc.string({ unit: char, minLength: 1, maxLength: 10 });
    const wellFormed = (s: string) => !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/u.test(s);

    let neighbour: LimiterApp;
    beforeAll(async () => {
      neighbour = await limiterModule(ctx.redis, { expiringHash: { sweepIntervalMs: 0 } });
    });
    afterAll(() => neighbour?.close());

    /** Every key under `prefix` with a fingerprint of its contents (DUMP leaves the ttl out). */
    async function snapshot(app: LimiterApp): Promise<Map<string, string>> {
      const out = new Map<string, string>();
      for (const key of await app.keys(`${app.prefix}*`)) out.set(key, (await app.raw.dumpBuffer(key))?.toString('base64') ?? '');
      return out;
    }

    /** `call` fails with a TypeError whose message matches `message`, never with a script error. */
    async function refused(call: () => Promise<unknown>, message: RegExp): Promise<void> {
      const error = await failure(call);
      expect(error).not.toBeInstanceOf(RedisScriptError);
      expect(error).toBeInstanceOf(TypeError);
      expect(error.message).toMatch(message);
    }

    it('never makes a script fail, and each user key gets its own data under its own tag', async () => {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.uniqueArray(text, { minLength: 2, maxLength: 3 }), text, text, async (users, field, value) => {
          run += 1;
          const marker = `r${run}|`;
          const keys = users.map((user) => `${marker}${user}`);
          // the neighbour (another keyPrefix: another tenant) writes the same user keys first
          for (const key of keys) {
            await neighbour.limiter.consume(key, POLICY);
            if (wellFormed(key)) await neighbour.moduleRef.get(ExpiringHashService).set(key, 'mine', 'neighbour');
          }
          const before = await snapshot(neighbour);
          expect(before.size).toBeGreaterThanOrEqual(keys.length);

          for (const key of keys) {
            expect((await limiter().consume(key, { limit: 1, windowMs: 60_000 })).allowed).toBe(true);
            expect(
              (
                await limiter().decide([
                  { key, scope: field, funnel: FUNNEL },
                  { key, scope: value, policy: POLICY },
                ])
              ).allowed,
            ).toBe(true);
            expect((await limiter().consume(key, { limit: 1, windowMs: 60_000 })).allowed).toBe(false);

            // ExpiringHash keys with a lone surrogate are refused (see the service checks below)
            if (wellFormed(key)) {
              if (wellFormed(field) && wellFormed(value)) {
                await hash().set(key, field, value, 60_000);
                expect(await hash().getAll(key)).toEqual({ [field]: value });
              } else {
                await refused(() => hash().set(key, field, value, 60_000), /^(field|value) must be well-formed Unicode/);
                expect(await hash().getAll(key)).toEqual({});
              }
            }

            if (!wellFormed(key)) {
              await refused(() => queue().enqueue(key, { value }, { id: field, delayMs: 60_000 }), /^queue must be well-formed Unicode/);
              await refused(() => queue().size(key), /^queue must be well-formed Unicode/);
            } else if (!wellFormed(field)) {
              await refused(() => queue().enqueue(key, { value }, { id: field, delayMs: 60_000 }), /^opts\.id must be well-formed Unicode/);
              expect(await queue().size(key)).toEqual({ scheduled: 0, inFlight: 0, dead: 0 });
            } else {
              expect(await queue().enqueue(key, { value }, { id: field, delayMs: 60_000 })).toBe(field);
              expect(await queue().size(key)).toEqual({ scheduled: 1, inFlight: 0, dead: 0 });
            }
          }

          // the other tenant's keys are exactly as they were
          expect(await snapshot(neighbour)).toEqual(before);
          // ours sit under our prefix, each tagged with exactly one of this run's escaped user keys
          const tags = new Set(keys.map((key) => `{${escapeKeyPart(key)}}`));
          const ours = (await ctx.app.keys(`${ctx.app.prefix}*`)).filter((k) => k.includes(`{${marker}`));
          expect(ours.length).toBeGreaterThanOrEqual(keys.length);
          for (const key of ours) expect(tags.has(key.slice(key.indexOf('{')))).toBe(true);
        }),
        { numRuns: 15 },
      );
    });

    it('takes a 1 MB key, value and payload', async () => {
      const big = '🚦{:}%'.repeat(1 << 17); // 1 MiB of UTF-8, 2 MiB once escaped into a key
      expect((await limiter().consume(big, POLICY)).remaining).toBe(4);
      await hash().set(big, 'f', big, 60_000);
      expect(await hash().get(big, 'f')).toBe(big);
      const id = await queue().enqueue('big', { big }, { delayMs: 60_000 });
      expect(await queue().cancel('big', id)).toBe(true);
      expect(await limiter().peek(big.slice(0, -1), POLICY)).toMatchObject({ remaining: 5 });
    });
  });

  describe('setOverride: checked against the names this app declares; nothing is stored', () => {
    let named: LimiterApp;
    beforeAll(async () => {
      named = await limiterModule(ctx.redis, {
        defaultLimits: [
          { name: 'costly', limit: 5, windowMs: 60_000, cost: 3 },
          // one name twice with one algorithm: each keeps its window
          { name: 'pair', limit: 5, windowMs: 1_000 },
          { name: 'pair', limit: 50, windowMs: 60_000 },
          { name: 'bucket', limit: 10, windowMs: 2 ** 40, algorithm: 'token-bucket' },
        ],
      });
    });
    afterAll(() => named?.close());

    const rows: Row[] = [
      ['name empty', () => named.limiter.setOverride('', { limit: 1 }), TypeError, /^name must be a non-empty string, got ""$/],
      ['name not a string', () => named.limiter.setOverride(7 as never, { limit: 1 }), TypeError, /^name must be a non-empty string, got 7$/],
      ['name with a lone surrogate', () => named.limiter.setOverride(LONE, { limit: 1 }), TypeError, /^name must be well-formed Unicode/],
      [
        'policy undefined',
        () => named.limiter.setOverride('costly', undefined as never),
        TypeError,
        /^policy must be an object \{ limit, windowMs\?, key\?, ttlMs\? \} or null, got undefined$/,
      ],
      ['policy a number', () => named.limiter.setOverride('costly', 5 as never), TypeError, /^policy must be an object/],
      [
        'an unknown option',
        () => named.limiter.setOverride('costly', { limit: 5, window: 1_000 } as never),
        TypeError,
        /^policy\.window is not an option \(limit, windowMs, key, ttlMs\)$/,
      ],
      ['policy.limit 0', () => named.limiter.setOverride('costly', { limit: 0 }), RangeError, /^policy\.limit must be a positive integer, got 0$/],
      [
        'policy.limit a string',
        () => named.limiter.setOverride('costly', { limit: '5' as never }),
        TypeError,
        /^policy\.limit must be a positive integer, got "5"$/,
      ],
      ['policy.limit above 2^53', () => named.limiter.setOverride('costly', { limit: 2 ** 53 }), RangeError, /^policy\.limit/],
      [
        'policy.windowMs 1.5',
        () => named.limiter.setOverride('costly', { limit: 5, windowMs: 1.5 }),
        RangeError,
        /^policy\.windowMs must be a positive integer, got 1\.5$/,
      ],
      [
        'policy.windowMs null',
        () => named.limiter.setOverride('costly', { limit: 5, windowMs: null as never }),
        TypeError,
        /^policy\.windowMs must be a positive integer, got null$/,
      ],
      [
        'a limit below a declared cost',
        () => named.limiter.setOverride('costly', { limit: 2 }),
        RangeError,
        /^policy\.limit \(2\) is below the cost 3 of RedisLimitModule: defaultLimits\[0\]: it could never be granted$/,
      ],
      [
        'a window for a name a route holds twice',
        () => named.limiter.setOverride('pair', { limit: 5, windowMs: 5_000 }),
        RangeError,
        /^policy\.windowMs: .* has another limit named "pair"/,
      ],
      [
        'a bucket past 2^53',
        () => named.limiter.setOverride('bucket', { limit: 2 ** 13 }),
        RangeError,
        /^policy: limit × window \(8192 × 1099511627776\) .*above 2\^53/,
      ],
    ];

    it.each(rows)('%s', async (_label, call, type, message) => {
      const error = await failure(call);
      expect(error).toBeInstanceOf(type);
      expect(error.message).toMatch(message);
    });

    it('none of them stored anything; null removes a name nobody declares', async () => {
      expect(await named.limiter.overrides()).toEqual({});
      await expect(named.limiter.setOverride('retired', null)).resolves.toBeUndefined();
      await named.limiter.setOverride('pair', { limit: 7 });
      expect(await named.limiter.overrides()).toEqual({ pair: { limit: 7, windowMs: 1_000 } });
    });
  });

  describe('checked by the services before anything reaches Redis', () => {
    it('decide: limits not an array names limits', async () => {
      await expect(limiter().decide('k' as never)).rejects.toThrow(/^limits must be an array/);
    });
    it('decide: a limit with both a policy and a funnel', async () => {
      await expect(limiter().decide([{ key: 'k', policy: POLICY, funnel: FUNNEL }])).rejects.toThrow(/^limits\[0\] takes a policy or a funnel, not both/);
    });
    it('decide: options.now NaN is a RangeError, not a script error', async () => {
      await expect(limiter().decide([{ key: 'k', policy: POLICY }], { now: NaN })).rejects.toThrow(RangeError);
    });
    it('acquire: opts null names opts', async () => {
      await expect(limiter().acquire('k', POLICY, null as never)).rejects.toThrow(/^opts must be an object/);
    });
    it('funnel: a missing funnel names funnel, not policy', async () => {
      await expect(limiter().funnel('k', undefined as never)).rejects.toThrow(/^funnel must be an object/);
    });
    it('decide: permits null is a TypeError, not 1', async () => {
      await expect(limiter().decide([{ key: 'k', policy: POLICY, permits: null as never }])).rejects.toThrow(/^permits must be/);
    });
    it('a consumer: stop(timeoutMs) names timeoutMs', async () => {
      const consumer = queue().consume('stop-check', () => undefined);
      await expect(consumer.stop('soon' as never)).rejects.toThrow(TypeError);
      await expect(consumer.stop(-1)).rejects.toThrow(/^timeoutMs must be a finite number >= 0, got -1/);
      // Node fires a timer above 2^31 - 1 ms after 1 ms: stop would not wait at all
      await expect(consumer.stop(2 ** 31)).rejects.toThrow(new RangeError('timeoutMs must be at most 2147483647 (about 24.8 days), got 2147483648'));
      await consumer.stop();
    });
    it('ExpiringHash: a key with a lone surrogate is refused', async () => {
      await expect(hash().set(LONE, 'f', 'v')).rejects.toThrow(/^key must be well-formed Unicode/);
    });
    it('DelayQueue prometheus: a bad prefix is refused before Redis is asked', async () => {
      // on a server that is gone, any Redis call would fail first (RedisUnavailableError)
      const down = await RedisNode.start({ own: true });
      await down.stop();
      const moduleRef = await Test.createTestingModule({ imports: [RedisLimitModule.forRoot({ redis: down.url, commandTimeoutMs: 300 })] }).compile();
      await moduleRef.init();
      try {
        const error = await failure(() => moduleRef.get(DelayQueueService).prometheus('1x'));
        expect(error).toBeInstanceOf(TypeError);
        expect(error.message).toMatch(/^prefix must be a Prometheus metric name .*, got "1x"$/);
      } finally {
        await moduleRef.close();
      }
    });
  });

  describe('bad options fail start-up', () => {
    async function startup(setup: { providers?: Type[]; controllers?: Type[]; module?: unknown }): Promise<Error> {
      const module = setup.module ?? RedisLimitModule.forRoot({ redis: ctx.redis.connection, keyPrefix: uniquePrefix('bad') });
      try {
        const moduleRef = await Test.createTestingModule({
          imports: [module as never],
          providers: setup.providers ?? [],
          controllers: setup.controllers ?? [],
        }).compile();
        const app = moduleRef.createNestApplication({ logger: false });
        try {
          await app.init();
        } finally {
          await app.close();
        }
      } catch (error) {
        return error as Error;
      }
      throw new Error('expected start-up to fail, but it succeeded');
    }

    const forRoot = (options: object) => ({ module: RedisLimitModule.forRoot({ redis: ctx.redis.connection, keyPrefix: uniquePrefix('bad'), ...options }) });

    function rateLimited(options: unknown): Type {
      @Controller()
      class Quotes {
        @Get()
        @RateLimit(options as never)
        list() {
          return 'ok';
        }
      }
      return Quotes;
    }
    function funnelled(options: unknown): Type {
      @Controller()
      class Sms {
        @Get()
        @Funnel(options as never)
        send() {
          return 'ok';
        }
      }
      return Sms;
    }
    function capped(options: unknown): Type {
      @Controller()
      class Orders {
        @Get()
        @MaxPending(3, options as never)
        create() {
          return 'ok';
        }
      }
      return Orders;
    }
    function consumer(queueName: unknown, options?: unknown): Type {
      @Injectable()
      class Reminders {
        @OnDelayed(queueName as never, options as never)
        remind() {}
      }
      return Reminders;
    }
    const GOOD_CAP = { name: 'unpaid', ttlMs: 60_000 };
    @Controller()
    class Jobs {
      @MessagePattern('start')
      @RateLimit({ limit: 5, windowMs: 1000 })
      start() {
        return 'ok';
      }
    }
    @Injectable()
    class Reports {
      @RateLimit({ limit: 5, windowMs: 1000 })
      build() {
        return 'ok';
      }
    }
    @Controller()
    class TwiceCapped {
      @Get()
      @MaxPending(3, GOOD_CAP)
      @MaxPending(5, GOOD_CAP)
      create() {
        return 'ok';
      }
    }

    const rows: [string, () => object, ErrorClass, RegExp][] = [
      ['forRoot: redis a number', () => forRoot({ redis: 6380 }), TypeError, /^RedisLimitModule: redis must be a URL, ioredis options/],
      ['forRoot: redis an empty URL', () => forRoot({ redis: '' }), TypeError, /^RedisLimitModule: redis must be a non-empty URL/],
      ['forRoot: redis.cluster.nodes empty', () => forRoot({ redis: { cluster: { nodes: [] } } }), TypeError, /^RedisLimitModule: redis\.cluster\.nodes/],
      ['forRoot: keyPrefix with a lone surrogate', () => forRoot({ keyPrefix: LONE }), TypeError, /^RedisLimitModule: keyPrefix must be well-formed/],
      [
        'forRoot: commandTimeoutMs above the longest timer',
        () => forRoot({ commandTimeoutMs: 2 ** 31 }),
        RangeError,
        /^RedisLimitModule: commandTimeoutMs must be a positive integer/,
      ],
      [
        'forRoot: sweepIntervalMs above the longest timer',
        () => forRoot({ expiringHash: { sweepIntervalMs: 2 ** 31 } }),
        RangeError,
        /^RedisLimitModule: expiringHash\.sweepIntervalMs/,
      ],
      ['forRoot: localDivisor 0', () => forRoot({ localDivisor: 0 }), RangeError, /^RedisLimitModule: localDivisor must be a positive integer, got 0$/],
      ['forRoot: shadow "yes"', () => forRoot({ shadow: 'yes' }), TypeError, /^RedisLimitModule: shadow must be a boolean, got "yes"$/],
      [
        'forRoot: refusalCache a number',
        () => forRoot({ refusalCache: 100 }),
        TypeError,
        /^RedisLimitModule: refusalCache must be a boolean or \{ maxEntries\? \}, got 100$/,
      ],
      [
        'forRoot: refusalCache.maxEntries 0',
        () => forRoot({ refusalCache: { maxEntries: 0 } }),
        RangeError,
        /^RedisLimitModule: refusalCache\.maxEntries must be a positive integer, got 0$/,
      ],
      [
        'forRoot: failMode "local" on a route that cannot keep it',
        () => ({ ...forRoot({ failMode: 'local' }), controllers: [capped({ ...GOOD_CAP, failMode: 'local' })] }),
        TypeError,
        /Orders\.create: @MaxPending\.failMode 'local' cannot take effect/,
      ],
      [
        'forRootAsync: the factory returns isGlobal',
        () => ({
          module: RedisLimitModule.forRootAsync({
            useFactory: () => ({ redis: ctx.redis.connection, keyPrefix: uniquePrefix('bad'), isGlobal: false }) as never,
          }),
        }),
        TypeError,
        /^RedisLimitModule: isGlobal belongs in forRootAsync\(\{ isGlobal, useFactory \}\)/,
      ],
      [
        'forRootAsync: the factory resolves null',
        () => ({ module: RedisLimitModule.forRootAsync({ useFactory: () => null as never }) }),
        TypeError,
        /^RedisLimitModule: options must be an object, got null/,
      ],
      [
        'forRootAsync: the factory resolves a bad option',
        () => ({ module: RedisLimitModule.forRootAsync({ useFactory: async () => ({ redis: ctx.redis.connection, failMode: 'sometimes' as never }) }) }),
        TypeError,
        /^RedisLimitModule: failMode must be 'closed' or 'open'/,
      ],
      [
        '@RateLimit: an unknown option',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, failmode: 'open' })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.failmode is not an option/,
      ],
      [
        '@RateLimit: algorithm "constructor"',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, algorithm: 'constructor' })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.algorithm/,
      ],
      [
        '@RateLimit: limit missing',
        () => ({ controllers: [rateLimited({ windowMs: 1000 })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.limit must be a positive integer or a function \(ctx\) => number, got undefined/,
      ],
      [
        '@RateLimit: windowMs a string',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: '1000' })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.windowMs/,
      ],
      [
        '@RateLimit: token bucket above 2^53',
        () => ({ controllers: [rateLimited({ limit: 2 ** 30, windowMs: 2 ** 30, algorithm: 'token-bucket' })] }),
        RangeError,
        /Quotes\.list: @RateLimit\(#1\): limit × window/,
      ],
      [
        '@RateLimit: cost a string',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, cost: '2' })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.cost must be a positive integer, got "2"/,
      ],
      ['@RateLimit: cost 0', () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, cost: 0 })] }), RangeError, /Quotes\.list: @RateLimit\(#1\)\.cost/],
      [
        '@RateLimit: cost null',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, cost: null })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.cost/,
      ],
      [
        '@RateLimit: an empty name',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, name: '' })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.name must be a non-empty string/,
      ],
      ['@RateLimit: options a string', () => ({ controllers: [rateLimited('5/s')] }), TypeError, /Quotes\.list: @RateLimit\(#1\) takes an options object/],
      [
        '@RateLimit: key a string',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, key: 'ip' })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.key must be a function \(ctx\) => string, got "ip"$/,
      ],
      [
        '@RateLimit: name a number',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, name: 5 })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.name must be a non-empty string, got 5$/,
      ],
      [
        '@RateLimit: failMode "sometimes"',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, failMode: 'sometimes' })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.failMode must be 'closed' or 'open', got sometimes \(or 'local'/,
      ],
      [
        '@RateLimit: countIf not a function',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, countIf: true })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.countIf must be a function \(ctx, outcome\) => boolean, got true$/,
      ],
      [
        '@RateLimit: blockMs 0',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, blockMs: 0 })] }),
        RangeError,
        /Quotes\.list: @RateLimit\(#1\)\.blockMs must be a positive integer, got 0$/,
      ],
      [
        '@RateLimit: blockMs a string',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, blockMs: '60000' })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.blockMs must be a positive integer, got "60000"$/,
      ],
      [
        '@RateLimit: shadow "yes"',
        () => ({ controllers: [rateLimited({ limit: 5, windowMs: 1000, shadow: 'yes' })] }),
        TypeError,
        /Quotes\.list: @RateLimit\(#1\)\.shadow must be a boolean, got "yes"$/,
      ],
      [
        '@RateLimit: no key on a microservice handler',
        () => ({ controllers: [Jobs] }),
        TypeError,
        /Jobs\.start: @RateLimit\(#1\) has no key, and microservice handlers have no default tracker/,
      ],
      [
        '@RateLimit: on a method no transport calls',
        () => ({ providers: [Reports] }),
        TypeError,
        /Reports\.build: @RateLimit \/ @Funnel cannot take effect here: it is not an HTTP route/,
      ],
      [
        "@Funnel: countIf is @RateLimit's only",
        () => ({ controllers: [funnelled({ ...FUNNEL, countIf: () => true })] }),
        TypeError,
        /Sms\.send: @Funnel\(#1\)\.countIf is not an option/,
      ],
      ['@Funnel: options null', () => ({ controllers: [funnelled(null)] }), TypeError, /Sms\.send: @Funnel\(#1\) takes an options object/],
      [
        '@Funnel: an unknown option',
        () => ({ controllers: [funnelled({ ...FUNNEL, limit: 5 })] }),
        TypeError,
        /Sms\.send: @Funnel\(#1\)\.limit is not an option/,
      ],
      [
        '@Funnel: capacity 0',
        () => ({ controllers: [funnelled({ ...FUNNEL, capacity: 0 })] }),
        RangeError,
        /Sms\.send: @Funnel\(#1\)\.capacity must be a positive integer, got 0/,
      ],
      [
        '@Funnel: leakingDurationMs NaN',
        () => ({ controllers: [funnelled({ ...FUNNEL, leakingDurationMs: NaN })] }),
        RangeError,
        /Sms\.send: @Funnel\(#1\)\.leakingDurationMs/,
      ],
      [
        '@Funnel: quota 0',
        () => ({ controllers: [funnelled({ ...FUNNEL, quota: 0 })] }),
        RangeError,
        /Sms\.send: @Funnel\(#1\)\.quota must be a positive integer/,
      ],
      [
        '@Funnel: quota a function',
        () => ({ controllers: [funnelled({ ...FUNNEL, quota: () => 1 })] }),
        TypeError,
        /Sms\.send: @Funnel\(#1\)\.quota must be a positive integer, got function/,
      ],
      [
        '@Funnel: key not a function',
        () => ({ controllers: [funnelled({ ...FUNNEL, key: 'phone' })] }),
        TypeError,
        /Sms\.send: @Funnel\(#1\)\.key must be a function/,
      ],
      [
        '@Funnel: name not a string',
        () => ({ controllers: [funnelled({ ...FUNNEL, name: 5 })] }),
        TypeError,
        /Sms\.send: @Funnel\(#1\)\.name must be a non-empty string/,
      ],
      [
        '@Funnel: an unknown failMode',
        () => ({ controllers: [funnelled({ ...FUNNEL, failMode: 'maybe' })] }),
        TypeError,
        /Sms\.send: @Funnel\(#1\)\.failMode must be 'closed' or 'open'/,
      ],
      [
        '@MaxPending: an unknown option',
        () => ({ controllers: [capped({ ...GOOD_CAP, ttl: 5 })] }),
        TypeError,
        /Orders\.create: @MaxPending\.ttl is not an option/,
      ],
      [
        '@MaxPending: declared twice on a route',
        () => ({ controllers: [TwiceCapped] }),
        TypeError,
        /TwiceCapped\.create: @MaxPending is declared more than once/,
      ],
      [
        '@MaxPending: name with a lone surrogate',
        () => ({ controllers: [capped({ ...GOOD_CAP, name: LONE })] }),
        TypeError,
        /Orders\.create: @MaxPending\.name must be well-formed Unicode/,
      ],
      [
        '@MaxPending: notify over 1024 bytes',
        () => ({ controllers: [capped({ ...GOOD_CAP, notify: 'q'.repeat(1025) })] }),
        RangeError,
        /Orders\.create: @MaxPending\.notify must be at most 1024 bytes/,
      ],
      [
        '@MaxPending: notify with a lone surrogate',
        () => ({ controllers: [capped({ ...GOOD_CAP, notify: LONE })] }),
        TypeError,
        /Orders\.create: @MaxPending\.notify must be well-formed Unicode/,
      ],
      ['@OnDelayed: an empty queue', () => ({ providers: [consumer('')] }), TypeError, /Reminders\.remind: @OnDelayed\(queue\) must be a non-empty string/],
      [
        '@OnDelayed: queue not a string',
        () => ({ providers: [consumer(7)] }),
        TypeError,
        /Reminders\.remind: @OnDelayed\(queue\) must be a non-empty string, got 7/,
      ],
      [
        '@OnDelayed: queue over 1024 bytes',
        () => ({ providers: [consumer('q'.repeat(1025))] }),
        RangeError,
        /Reminders\.remind: @OnDelayed\(queue\) must be at most 1024 bytes/,
      ],
      ['@OnDelayed: options a string', () => ({ providers: [consumer('q', 'fast')] }), TypeError, /Reminders\.remind: @OnDelayed options must be an object/],
      [
        '@OnDelayed: options null',
        () => ({ providers: [consumer('q', null)] }),
        TypeError,
        /Reminders\.remind: @OnDelayed options must be an object, got null/,
      ],
      [
        '@OnDelayed: an unknown option',
        () => ({ providers: [consumer('q', { retries: 5 })] }),
        TypeError,
        /Reminders\.remind: @OnDelayed options\.retries is not an option/,
      ],
      [
        '@OnDelayed: concurrency a string',
        () => ({ providers: [consumer('q', { concurrency: '2' })] }),
        TypeError,
        /Reminders\.remind: @OnDelayed options\.concurrency must be an integer >= 1/,
      ],
      [
        '@OnDelayed: rateLimit windowMs 0',
        () => ({ providers: [consumer('q', { rateLimit: { limit: 5, windowMs: 0 } })] }),
        RangeError,
        /Reminders\.remind: @OnDelayed options\.rateLimit\.windowMs must be a positive integer, got 0/,
      ],
      [
        '@OnDelayed: rateLimit key a string',
        () => ({ providers: [consumer('q', { rateLimit: { limit: 5, windowMs: 1000, key: 'tenant' } })] }),
        TypeError,
        /Reminders\.remind: @OnDelayed options\.rateLimit\.key must be a function/,
      ],
      [
        '@OnDelayed: globalConcurrency 0',
        () => ({ providers: [consumer('q', { globalConcurrency: 0 })] }),
        RangeError,
        /Reminders\.remind: @OnDelayed options\.globalConcurrency must be an integer >= 1, got 0/,
      ],
      [
        '@OnDelayed: backoffMs -1',
        () => ({ providers: [consumer('q', { backoffMs: -1 })] }),
        RangeError,
        /Reminders\.remind: @OnDelayed options\.backoffMs must be an integer >= 0/,
      ],
      [
        '@OnDelayed: maxBackoffMs a string',
        () => ({ providers: [consumer('q', { maxBackoffMs: '1000' })] }),
        TypeError,
        /Reminders\.remind: @OnDelayed options\.maxBackoffMs must be an integer >= 0, got "1000"/,
      ],
      [
        '@OnDelayed: rateLimit a token bucket above 2^53',
        () => ({ providers: [consumer('q', { rateLimit: { limit: 2 ** 30, windowMs: 2 ** 30, algorithm: 'token-bucket' } })] }),
        RangeError,
        /Reminders\.remind: @OnDelayed options\.rateLimit: limit × window/,
      ],
      [
        '@OnDelayed on a request-scoped provider (a consumer has no request to build it for)',
        () => {
          @Injectable({ scope: Scope.REQUEST })
          class PerRequest {
            @OnDelayed('q')
            remind() {}
          }
          return { providers: [PerRequest] };
        },
        TypeError,
        /PerRequest\.remind: @OnDelayed needs a provider that is built once \(a singleton\); this one is request-scoped or depends on one/,
      ],
      [
        '@OnDelayed: two numbers out of range, on two providers',
        () => ({ providers: [consumer('q', { maxAttempts: 0 }), consumer('q', { rateLimit: { limit: 5, windowMs: -1 } })] }),
        RangeError,
        /^Invalid @OnDelayed options:\n(?=[^]*options\.maxAttempts must be an integer >= 1, got 0)(?=[^]*options\.rateLimit\.windowMs must be a positive integer, got -1)/,
      ],
      [
        '@OnDelayed: a number out of range beside a wrong type',
        () => ({ providers: [consumer('q', { maxAttempts: 0 }), consumer('q', { concurrency: '2' })] }),
        TypeError,
        /^Invalid @OnDelayed options:\n(?=[^]*options\.maxAttempts must be an integer >= 1, got 0)(?=[^]*options\.concurrency must be an integer >= 1, got "2")/,
      ],
    ];

    it.each(rows)('%s', async (_label, setup, type, message) => {
      const error = await startup(setup());
      expect(error).toBeInstanceOf(type);
      expect(error.message).toMatch(message);
    });
  });
});
