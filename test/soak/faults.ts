// The faults the soak injects, on a server it started itself (never one it did not).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import type { RedisNode } from '../harness/redis-server.js';
import { SOAK } from './config.js';

export const FAULTS = ['pause', 'script-flush', 'client-kill', 'restart', 'kill-consumer'] as const;
export type Fault = (typeof FAULTS)[number];

/** A Redis that answers nothing for 4× the command timeout: every call in flight times out. */
export const PAUSE_MS = SOAK.commandTimeoutMs * 4;
/** How long a restart keeps the server down: calls are refused at once, not timed out. */
export const DOWN_MS = 500;

export interface FaultTarget {
  redis: RedisNode;
  /** The controller's own client (CLIENT KILL skips the connection that sends it). */
  admin: Redis;
  /** SIGKILLs one consumer process and starts a replacement; resolves with the killed one's name. */
  killConsumer(): Promise<string>;
}

/** Injects `fault`; resolves when the server is back to normal. Returns what was done, for the log. */
export async function inject(fault: Fault, target: FaultTarget): Promise<string> {
  switch (fault) {
    case 'pause':
      target.redis.signal('SIGSTOP');
      await sleep(PAUSE_MS);
      target.redis.signal('SIGCONT');
      return `SIGSTOP redis-server for ${PAUSE_MS} ms`;
    case 'script-flush':
      await target.admin.script('FLUSH');
      return 'SCRIPT FLUSH';
    case 'client-kill':
      return `CLIENT KILL TYPE normal: ${String(await target.admin.call('CLIENT', 'KILL', 'TYPE', 'normal'))} connections`;
    case 'restart':
      // a shutdown signal (SIGINT): Redis writes its AOF out before it exits, so nothing acknowledged is lost
      await target.redis.stop();
      await sleep(DOWN_MS);
      await target.redis.resume();
      return `restart (appendonly yes), down ${DOWN_MS} ms`;
    case 'kill-consumer':
      return `SIGKILL consumer ${await target.killConsumer()}`;
  }
}
