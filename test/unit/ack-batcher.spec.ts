import { jest } from '@jest/globals';
import { AckBatcher } from '../../lib/delay-queue/ack-batcher.js';
import type { Lease } from '../../lib/delay-queue/lease-renewer.js';

const RETRY_MS = 500;

/** An AckBatcher over a recorded ack.lua: each call's arguments, settled by the test. */
function setUp() {
  const calls: { args: (string | number)[]; resolve: () => void; reject: (error: Error) => void }[] = [];
  const held = new Map<string, Lease>();
  const warnings: string[] = [];
  const given: string[] = [];
  const batcher = new AckBatcher({
    send: (leases) =>
      new Promise<void>((resolve, reject) => {
        calls.push({ args: leases.flatMap(({ id, token }) => [id, token]), resolve, reject });
      }),
    leases: { get: (id) => held.get(id), release: (lease) => (held.get(lease.id) === lease ? void held.delete(lease.id) : undefined) },
    logger: { warn: (message) => void warnings.push(message) },
    retryMs: RETRY_MS,
    unacknowledged: (leases) => void given.push(...leases.map((lease) => lease.id)),
  });
  const hold = (id: string, token: number, leasedUntil = Date.now() + 30_000): Lease => {
    const lease = { id, token, attempt: token, leasedUntil };
    held.set(id, lease);
    return lease;
  };
  return { batcher, calls, held, warnings, given, hold };
}

/** Lets the promise callbacks of a settled call run. */
const settle = () => jest.advanceTimersByTimeAsync(0);

describe('AckBatcher', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  it('sends the acks of one turn of the event loop in one call, then releases their leases', async () => {
    const { batcher, calls, held, hold } = setUp();
    batcher.ack(hold('a', 1));
    batcher.ack(hold('b', 3));
    expect(calls).toHaveLength(0);
    await settle();
    expect(calls.map((c) => c.args)).toEqual([['a', 1, 'b', 3]]);
    expect(batcher.pending).toBe(0);
    calls[0]!.resolve();
    await settle();
    expect([...held.keys()]).toEqual([]);
  });

  it('acks a message again, as its new claim, when this consumer claimed it again meanwhile', async () => {
    const { batcher, calls, held, hold } = setUp();
    const lease = hold('a', 1);
    batcher.ack(lease);
    await settle();
    lease.token = 2; // our own claim took it back before the ack ran: Redis refused token 1
    calls[0]!.resolve();
    await settle();
    expect(calls.map((c) => c.args)).toEqual([
      ['a', 1],
      ['a', 2],
    ]);
    expect(held.get('a')).toBe(lease);
    calls[1]!.resolve();
    await settle();
    expect(held.has('a')).toBe(false);
  });

  it('retries a failed call while the leases last, in order, then gives the rest up', async () => {
    const { batcher, calls, held, warnings, given, hold } = setUp();
    const long = hold('long', 1, Date.now() + 10_000);
    batcher.ack(hold('short', 1, Date.now() + RETRY_MS)); // runs out before a retry could land
    batcher.ack(long);
    await settle();
    calls[0]!.reject(new Error('connection lost'));
    await settle();
    expect(held.has('short')).toBe(false);
    expect(warnings).toEqual(['could not acknowledge 1 message(s) before their lease ran out (connection lost); they will be delivered again']);
    // each given up is named, for the redis-limit.queue.unacknowledged event
    expect(given).toEqual(['short']);
    batcher.ack(hold('later', 1)); // waits for the retry: no call of its own
    await jest.advanceTimersByTimeAsync(RETRY_MS - 1);
    expect(calls).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(1);
    expect(calls.map((c) => c.args)).toEqual([
      ['short', 1, 'long', 1],
      ['long', 1, 'later', 1],
    ]);
    expect(held.get('long')).toBe(long);
  });

  it('flush waits for the call under way and sends what came meanwhile', async () => {
    const { batcher, calls, hold } = setUp();
    batcher.ack(hold('a', 1));
    await settle();
    batcher.ack(hold('b', 1));
    const flushed = batcher.flush();
    calls[0]!.resolve();
    await settle();
    expect(calls.map((c) => c.args)).toEqual([
      ['a', 1],
      ['b', 1],
    ]);
    calls[1]!.resolve();
    await flushed;
    expect(batcher.pending).toBe(0);
  });

  it('stop retries no more and says how many stay unacknowledged', async () => {
    const { batcher, calls, warnings, given, hold } = setUp();
    batcher.ack(hold('a', 1));
    await settle();
    calls[0]!.reject(new Error('timed out'));
    await settle();
    batcher.stop();
    await jest.advanceTimersByTimeAsync(RETRY_MS * 4);
    expect(calls).toHaveLength(1);
    expect(warnings).toEqual(['stopped with 1 message(s) unacknowledged; they will be delivered again']);
    expect(given).toEqual(['a']);
  });
});
