import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueService, ExpiringHashService, type ExpiredField } from '../../lib/index.js';
import { eventually } from '../harness/expiring-hash.js';
import { limiterModule, withLimiterApp } from '../harness/limiter-app.js';
import { transpileLib } from '../harness/transpiled-lib.js';

const WRITER = join(process.cwd(), 'test/integration/workers/expiring-hash-writer.mjs');
const SWEEPER = join(process.cwd(), 'test/integration/workers/expiring-hash-sweeper.mjs');
const WRITERS = 3;

/** Worker processes of one describe block: the library transpiled for them once, and every one
 * still alive SIGKILLed at the end. `start` spawns `script` with its JSON config. */
function workers(label: string) {
  let libDir = '';
  const children: ChildProcess[] = [];
  beforeAll(() => {
    libDir = transpileLib(label);
  });
  afterAll(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return {
    start(script: string, config: Record<string, unknown>) {
      const child = spawn(process.execPath, [script, JSON.stringify({ libDir, ...config })], { stdio: ['ignore', 'pipe', 'inherit'] });
      children.push(child);
      return child;
    },
  };
}

/**
 * Expiry notifications survive a writer's death: writer processes
 * (test/integration/workers/expiring-hash-writer.mjs) are SIGKILLed at random points of a burst of
 * setIfBelow calls with `notify`; this process sweeps and consumes. Every write that succeeded (its
 * call resolved, or its notification is armed in Redis after the kill) is notified exactly once
 * when it lapses, and nothing else is.
 */
describe('expiry notifications when the writing process dies', () => {
  const ctx = withLimiterApp({ expiringHash: { sweepIntervalMs: 50 } });
  const processes = workers('expiring-hash-kill');

  /** Starts a writer; resolves what it reported once it was killed `killAfterMs` into its burst. */
  function killedWriter(owners: string, killAfterMs: number, queue: string) {
    const config = { redis: ctx.redis.connection, keyPrefix: ctx.app.prefix, queue, owners: 5, writes: 100_000, ttlMs: 400, ownerPrefix: owners };
    const child = processes.start(WRITER, config);
    const tried = new Set<string>();
    const succeeded = new Set<string>();
    let buffer = '';
    let killAt: NodeJS.Timeout | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) {
        const { event, owner, field } = JSON.parse(line) as { event: string; owner: string; field: string };
        if (event === 'try') {
          tried.add(`${owner}/${field}`);
          killAt ??= setTimeout(() => child.kill('SIGKILL'), killAfterMs);
        }
        if (event === 'ok') succeeded.add(`${owner}/${field}`);
      }
    });
    // 'close', not 'exit': what the writer printed before the kill may still be in the pipe
    return new Promise<{ tried: Set<string>; succeeded: Set<string>; signal: string | null }>((resolve) =>
      child.once('close', (_code, signal) => resolve({ tried, succeeded, signal })),
    );
  }

  it('notifies every lapsed write exactly once, whichever point of a write the kill hit', async () => {
    const queue = 'killed-writers-expired';
    const delivered = new Map<string, number>();
    const consumer = ctx.app.moduleRef.get(DelayQueueService).consume<ExpiredField>(queue, ({ payload }) => {
      const id = `${payload.key}/${payload.field}`;
      delivered.set(id, (delivered.get(id) ?? 0) + 1);
    });
    // the sweeper of a process starts with its first ExpiringHashService call
    await ctx.app.moduleRef.get(ExpiringHashService).count('anyone');
    try {
      const runs = await Promise.all(Array.from({ length: WRITERS }, (_, i) => killedWriter(`w${i}-`, 150 + Math.floor(Math.random() * 300), queue)));
      expect(runs.map((run) => run.signal)).toEqual(Array(WRITERS).fill('SIGKILL'));
      await sleep(100); // a command the kill cut off may still reach the server
      // writes that landed without their caller hearing so: their notifications are armed
      const landed = new Set<string>();
      for (const armedKey of await ctx.redis.keys(`${ctx.app.prefix}ehn:*`)) {
        const owner = /\{(.*)\}$/.exec(armedKey)![1]!;
        for (const name of await ctx.app.raw.hkeys(armedKey)) if (!name.startsWith('h:')) landed.add(`${owner}/${name.slice(name.indexOf(':') + 1)}`);
      }
      const tried = new Set(runs.flatMap((run) => [...run.tried]));
      const expected = new Set([...runs.flatMap((run) => [...run.succeeded]), ...landed]);
      console.log(`${tried.size} writes started, ${runs.reduce((n, run) => n + run.succeeded.size, 0)} resolved, ${landed.size} armed after the kills`);
      expect(expected.size).toBeGreaterThan(0);
      // a notification that never comes is listed by the last expect
      await eventually(async () => [...expected].every((id) => delivered.has(id)), 10_000).catch(() => undefined);
      await sleep(300); // a duplicate would come with the next sweeps
      const twice = [...delivered].filter(([, n]) => n > 1);
      const unknown = [...delivered.keys()].filter((id) => !tried.has(id));
      expect({ twice, unknown }).toEqual({ twice: [], unknown: [] });
      expect([...expected].filter((id) => !delivered.has(id))).toEqual([]);
    } finally {
      await consumer.stop();
    }
  });
});

/**
 * The other side: the process delivering notifications dies between a handover and its enqueue, or
 * between the enqueue and the disarm. Sweeping processes
 * (test/integration/workers/expiring-hash-sweeper.mjs) are SIGKILLed at random points of the
 * second in which the notifications come due; then a module of this process sweeps.
 */
describe('expiry notifications when the sweeping process dies', () => {
  // writes and consumes only: sweeping is the children's job, then the takeover's
  const ctx = withLimiterApp({ expiringHash: { sweepIntervalMs: 0 } });
  const processes = workers('expiring-hash-kill-sweepers');

  /** Starts a process that only sweeps; resolves it once its sweeper runs. */
  async function sweeper(): Promise<ChildProcess> {
    const child = processes.start(SWEEPER, { redis: ctx.redis.connection, keyPrefix: ctx.app.prefix, sweepIntervalMs: 20 });
    await new Promise<void>((resolve, reject) => {
      child.stdout.once('data', () => resolve());
      child.once('exit', (code) => reject(new Error(`the sweeper process exited (${code}) before it was ready`)));
    });
    return child;
  }

  async function kill(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const closed = new Promise((resolve) => child.once('close', resolve));
    child.kill('SIGKILL');
    await closed;
  }

  it('notifies every lapsed field exactly once when sweeping processes are killed mid-delivery', async () => {
    const queue = 'killed-sweepers-expired';
    const fields = 1500;
    const delivered = new Map<string, number>();
    // a sweeper is killed once this many notifications were handled: its deliveries under way,
    // enqueued (one was just handled) and likely not yet disarmed
    let killAt: { count: number; child: ChildProcess } | undefined;
    const consumer = ctx.app.moduleRef.get(DelayQueueService).consume<ExpiredField>(queue, ({ payload }) => {
      const id = `${payload.key}/${payload.field}`;
      delivered.set(id, (delivered.get(id) ?? 0) + 1);
      if (killAt && delivered.size >= killAt.count) {
        killAt.child.kill('SIGKILL');
        killAt = undefined;
      }
    });
    const hash = ctx.app.moduleRef.get(ExpiringHashService);
    let takeover: Awaited<ReturnType<typeof limiterModule>> | undefined;
    try {
      const first = await sweeper();
      // all due at once, 100 per hash: one sweep hands a hash's 100 over, enqueues them, then disarms
      const dueAt = Date.now() + 1500;
      const written: string[] = [];
      for (let start = 0; start < fields; start += 100) {
        await Promise.all(
          Array.from({ length: 100 }, async (_, j) => {
            const n = start + j;
            const owner = `sweep-owner-${n % 15}`;
            await hash.set(owner, `slot-${n}`, `v${n}`, Math.max(1, dueAt - Date.now()), { notify: queue });
            written.push(`${owner}/slot-${n}`);
          }),
        );
      }
      killAt = { count: 1, child: first };
      await Promise.race([new Promise((resolve) => first.once('close', resolve)), sleep(5000)]);
      await kill(first);
      const second = await sweeper();
      killAt = { count: delivered.size + 1 + Math.floor(Math.random() * 300), child: second };
      await Promise.race([new Promise((resolve) => second.once('close', resolve)), sleep(3000)]);
      await kill(second);
      console.log(`${delivered.size} of ${fields} delivered before the takeover`);
      takeover = await limiterModule(ctx.redis, { keyPrefix: ctx.app.prefix, expiringHash: { sweepIntervalMs: 50 } });
      await takeover.moduleRef.get(ExpiringHashService).count('anyone'); // starts its sweeper
      await eventually(async () => written.every((id) => delivered.has(id)), 20_000).catch(() => undefined);
      await sleep(4000); // past the handover lease: a second handover would have come by now
      expect(written.filter((id) => !delivered.has(id))).toEqual([]);
      expect([...delivered].filter(([, n]) => n > 1)).toEqual([]);
      expect(delivered.size).toBe(fields);
    } finally {
      await consumer.stop();
      await takeover?.close();
    }
  });
});
