/**
 * How long a message waits after failing `attempt` (1 on first delivery): `backoffMs` doubled per
 * attempt before it, never more than `maxBackoffMs`. The doublings are capped first, so a large
 * attempt is no Infinity (nor, with backoffMs 0, a NaN).
 */
export function retryDelayMs(attempt: number, { backoffMs, maxBackoffMs }: { backoffMs: number; maxBackoffMs: number }): number {
  // 2^64 exceeds any safe integer: past that many doublings the cap decides anyway
  return Math.min(maxBackoffMs, backoffMs * 2 ** Math.min(Math.max(attempt - 1, 0), 64));
}

export interface BackoffOptions {
  backoffMs: number;
  maxBackoffMs: number;
  backoff: ((attempt: number, error: unknown) => number) | undefined;
  jitter: boolean;
}

/**
 * The wait (whole ms) before the next attempt once `attempt` failed with `error`: the user's
 * `backoff` (rounded up, capped by maxBackoffMs), else the doubling; with `jitter`, drawn
 * uniformly from [wait / 2, wait]. A `backoff` that throws or answers anything but a finite
 * number >= 0 is told to `report`, and the doubling stands in.
 */
export function failureDelayMs(
  attempt: number,
  error: unknown,
  options: BackoffOptions,
  report: (problem: string) => void,
  random: () => number = Math.random,
): number {
  let wait = retryDelayMs(attempt, options);
  if (options.backoff !== undefined) {
    try {
      const chosen: unknown = options.backoff(attempt, error);
      if (typeof chosen === 'number' && Number.isFinite(chosen) && chosen >= 0) wait = Math.min(options.maxBackoffMs, Math.ceil(chosen));
      else report(`backoff returned ${typeof chosen === 'number' ? String(chosen) : typeof chosen}, not a finite number >= 0`);
    } catch (thrown) {
      report(`backoff threw ${thrown instanceof Error ? `${thrown.name}: ${thrown.message}` : String(thrown)}`);
    }
  }
  if (!options.jitter) return wait;
  const least = Math.ceil(wait / 2);
  return least + Math.floor(random() * (wait - least + 1));
}
