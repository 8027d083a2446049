import { describe, expect, it } from '@jest/globals';
import { RedisKeys } from '../../lib/redis/keys.js';
import { explainMessage } from '../../lib/delay-queue/message-explanation.js';
import type { DelayQueueInspectReply } from '../../lib/redis/script-bindings.generated.js';

const NOW = Date.UTC(2026, 10, 29, 12, 0, 0);
const keys = new RedisKeys('app:');
const reading = (m: Partial<DelayQueueInspectReply>): DelayQueueInspectReply => ({
  now: NOW,
  state: 's',
  score: NOW,
  payload: '{}',
  attempts: 0,
  claims: 0,
  pending: 0,
  error: '',
  runAt: null,
  why: '',
  ...m,
});
const explain = (m: Partial<DelayQueueInspectReply>, heldHere = false) => explainMessage('q', 'm1', reading(m), heldHere, (key) => keys.scopeOf(key));

describe('explainMessage', () => {
  it('a scheduled message is due in N ms, or due and waiting for a consumer; a failed one says so', () => {
    expect(explain({ score: NOW + 1500 })).toBe('due in 1500 ms, at 2026-11-29T12:00:01.500Z');
    expect(explain({ score: NOW - 20 })).toBe('due since 2026-11-29T11:59:59.980Z (20 ms ago): waiting for a consumer to claim it');
    expect(explain({ score: NOW + 1000, attempts: 2, error: 'Error: boom' })).toBe(
      'due in 1000 ms, at 2026-11-29T12:00:01.000Z; a retry after 2 attempts, the last failed: Error: boom',
    );
  });

  it('names the key a message waits on, while it is still due when that wait made it due', () => {
    const due = NOW + 250;
    const counter = keys.build('dqr.fw4.60000', 'q', 'tenant:a');
    expect(explain({ score: due, why: `r ${due} ${counter}` })).toBe(`waiting for key "tenant:a"'s rate limit until 2026-11-29T12:00:00.250Z (in 250 ms)`);
    expect(explain({ score: due, why: `r ${due} ${keys.build('dqr.fw4.60000', 'q')}` })).toBe(
      `waiting for the queue's rate limit until 2026-11-29T12:00:00.250Z (in 250 ms)`,
    );
    expect(explain({ score: due, why: `p ${due} ${keys.build('dqch', 'q', 't')}` })).toBe(
      `waiting: key "t" is paused by RetryLater until 2026-11-29T12:00:00.250Z (in 250 ms)`,
    );
    expect(explain({ score: due, why: `c ${due} ${keys.build('dqc', 'q', 't')}` })).toBe(
      `waiting for a concurrency slot of key "t": due once one frees, 2026-11-29T12:00:00.250Z at the latest`,
    );
    expect(explain({ score: due, why: `l ${due}` })).toBe('paused by RetryLater until 2026-11-29T12:00:00.250Z (in 250 ms)');
    // moved since (rescheduled, a slot freed, its lease ran out): the reason is stale
    expect(explain({ score: due + 1, why: `r ${due} ${counter}` })).toBe('due in 251 ms, at 2026-11-29T12:00:00.251Z');
    expect(explain({ score: NOW - 5, why: `c ${NOW - 5} ${keys.build('dqc', 'q', 't')}` })).toMatch(/^due since /);
    // a due time between two ms (a deferral's) still matches its whole ms
    expect(explain({ score: due + 0.5, why: `l ${due}` })).toMatch(/^paused by RetryLater until /);
  });

  it('an in-flight message: who holds it, its claim and attempt, its lease; or that the lease ran out', () => {
    expect(explain({ state: 'f', score: NOW + 30_000, claims: 3, attempts: 2 }, true)).toBe(
      'leased by this process, claim 3, attempt 2, lease until 2026-11-29T12:00:30.000Z (in 30000 ms)',
    );
    expect(explain({ state: 'f', score: NOW + 30_000, claims: 1, attempts: 0, pending: 1 })).toBe(
      'leased by another process, claim 1, awaiting its admission past its rate limit and concurrency cap, lease until 2026-11-29T12:00:30.000Z (in 30000 ms)',
    );
    expect(explain({ state: 'f', score: NOW - 1, claims: 1, attempts: 1 })).toBe(
      'leased by another process, claim 1, lease ran out at 2026-11-29T11:59:59.999Z: the next claim delivers it again',
    );
  });

  it('a dead message gives its error; an unknown id says so', () => {
    expect(explain({ state: 'd', score: NOW, attempts: 1, error: 'Unrecoverable: no' })).toBe(
      'dead: Unrecoverable: no (died at 2026-11-29T12:00:00.000Z, after 1 attempt)',
    );
    expect(explain({ state: 'd', score: NOW, attempts: 5 })).toBe('dead: no error recorded (died at 2026-11-29T12:00:00.000Z, after 5 attempts)');
    expect(explain({ state: '-' })).toBe('unknown: queue "q" holds no message "m1" (never enqueued, or acknowledged, cancelled or purged)');
  });
});
