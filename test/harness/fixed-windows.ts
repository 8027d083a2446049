import { setTimeout as sleep } from 'node:timers/promises';

/** A fixed window for tests whose length does not matter: a day, so its end is rarely near. */
export const DAY_MS = 86_400_000;

/**
 * Fixed windows are aligned to multiples of windowMs since the epoch (lua/rate-limit/fixed-window.lua),
 * so a test that counts on its requests sharing one window fails when a window ends mid-test, which
 * a loaded machine makes likelier. Called before such a test: when the current window ends within
 * `marginMs`, waits for the next one. The test servers run on this machine's clock.
 */
export async function awayFromWindowEnd(windowMs: number, marginMs = Math.min(windowMs / 2, 30_000)): Promise<void> {
  const left = windowMs - (Date.now() % windowMs);
  if (left < marginMs) await sleep(left + 10);
}

/**
 * What a fixed window's counter holds, as stored: its window's count (see fixed-window.lua: the
 * window's index and its count are the first two packed doubles), or undefined when it has none.
 * Read on the test servers' clock.
 */
export async function storedCount(redis: { getBuffer(key: string): Promise<Buffer | null> }, key: string, windowMs: number): Promise<string | undefined> {
  const value = await redis.getBuffer(key);
  if (value === null || value.readDoubleBE(0) !== Math.floor(Date.now() / windowMs)) return undefined;
  return String(value.readDoubleBE(8));
}
