import { setTimeout as sleep } from 'node:timers/promises';
import type { ExpiryMode } from '../../lib/index.js';
import { currentFlavor } from './redis-server.js';

/** ExpiringHash modes this server runs: index everywhere, native where it has HPEXPIRE (Redis 8 here). */
export const EXPIRY_MODES: ExpiryMode[] = currentFlavor() === 'redis8' ? ['native', 'index'] : ['index'];

/** Polls `probe` until it holds; bounds are generous because timers and sweeps are not exact. */
export async function eventually(probe: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await sleep(25);
  }
}
