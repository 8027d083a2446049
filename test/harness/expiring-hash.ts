import { setTimeout as sleep } from 'node:timers/promises';
import type { ExpiryMode } from '../../lib/index.js';
import { FIELD_EXPIRY_FLAVORS } from './redis-binary.js';
import { currentFlavor, type StartOptions } from './redis-server.js';

/** ExpiringHash modes this server runs: index everywhere, native where it has HPEXPIRE (Redis 8, Valkey 9 here). */
export const EXPIRY_MODES: ExpiryMode[] = FIELD_EXPIRY_FLAVORS.includes(currentFlavor()) ? ['native', 'index'] : ['index'];

/** redis-server arguments that take HSETEX away: Redis 8 then writes as Redis 7.4 must. */
export const WITHOUT_HSETEX = ['--rename-command', 'HSETEX', '""'];

/** A mode on a server: `server` is how to start it. */
export interface ExpiryCase {
  name: string;
  mode: ExpiryMode;
  /** Native writes there set a field and its expiry with one HSETEX. */
  hsetex: boolean;
  server: StartOptions;
}

/** Each mode this server runs; native twice: writing field expiry with HSETEX, and on a server
 * without it with HSET + HPEXPIREAT. */
export const EXPIRY_CASES: ExpiryCase[] = EXPIRY_MODES.flatMap((mode): ExpiryCase[] =>
  mode === 'index'
    ? [{ name: 'index mode', mode, hsetex: false, server: {} }]
    : [
        { name: 'native mode, HSETEX', mode, hsetex: true, server: {} },
        { name: 'native mode, HSET + HPEXPIREAT', mode, hsetex: false, server: { own: true, args: WITHOUT_HSETEX } },
      ],
);

/** Polls `probe` until it holds; bounds are generous because timers and sweeps are not exact. */
export async function eventually(probe: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await sleep(25);
  }
}

/** Calls of `command` in an INFO commandstats reply: commands scripts run count too, so it shows
 * which write path a script took. */
export function commandCalls(commandstats: string, command: string): number {
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(commandstats)?.[1] ?? 0);
}
