/**
 * How long a message waits after failing `attempt` (1 on first delivery): `backoffMs` doubled per
 * attempt before it, never more than `maxBackoffMs`. The doublings are capped first, so a large
 * attempt is no Infinity (nor, with backoffMs 0, a NaN).
 */
export function retryDelayMs(attempt: number, { backoffMs, maxBackoffMs }: { backoffMs: number; maxBackoffMs: number }): number {
  // 2^64 exceeds any safe integer: past that many doublings the cap decides anyway
  return Math.min(maxBackoffMs, backoffMs * 2 ** Math.min(Math.max(attempt - 1, 0), 64));
}
