import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `check` every 20 ms until it returns true; rejects with `what()` after `timeoutMs`. */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs: number, what: () => Promise<string> | string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms: ${await what()}`);
    await sleep(20);
  }
}
