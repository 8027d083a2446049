import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DelayQueueService, ExpiringHashService, type ExpiredField } from '../../lib/index.js';
import { eventually } from '../harness/expiring-hash.js';
import { withLimiterApp } from '../harness/limiter-app.js';
import { transpileLib } from '../harness/transpiled-lib.js';

const WRITER = join(process.cwd(), 'test/integration/workers/expiring-hash-writer.mjs');
const WRITERS = 3;

/**
 * Expiry notifications survive a writer's death: writer processes
 * (test/integration/workers/expiring-hash-writer.mjs) are SIGKILLed at random points of a burst of
 * setIfBelow calls with `notify`; this process sweeps and consumes. Every write that succeeded (its
 * call resolved, or its notification is armed in Redis after the kill) is notified exactly once
 * when it lapses, and nothing else is.
 */
describe('expiry notifications when the writing process dies', () => {
  const ctx = withLimiterApp({ expiringHash: { sweepIntervalMs: 50 } });
  let libDir: string;
  const children: ChildProcess[] = [];

  beforeAll(() => {
    libDir = transpileLib('expiring-hash-kill');
  });
  afterAll(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  /** Starts a writer; resolves what it reported once it was killed `killAfterMs` into its burst. */
  function killedWriter(owners: string, killAfterMs: number, queue: string) {
    const config = { libDir, redis: ctx.redis.connection, keyPrefix: ctx.app.prefix, queue, owners: 5, writes: 100_000, ttlMs: 400, ownerPrefix: owners };
    const child = spawn(process.execPath, [WRITER, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
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
