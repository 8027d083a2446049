// Wall-clock ms with sub-ms precision, for the delay-queue bench's processes. Date.now() floors
// to whole ms; performance.timeOrigin can be off by a millisecond or more when the process was
// descheduled while it started (seen on a loaded machine), which would skew every lateness. So
// each process calibrates performance.now() against instants at which Date.now() ticks over.

/** One tick of Date.now(): the wall-clock ms it reached and the performance.now() interval in
 * which it happened (after the last call that still saw the old value began, before the first
 * call that saw the new one returned). */
function edge(): { base: number; width: number } {
  const old = Date.now();
  let startedBefore = performance.now();
  for (;;) {
    const started = performance.now();
    const wall = Date.now();
    const ended = performance.now();
    if (wall !== old) {
      // the tick to `wall` (exactly wall.000 ms) happened in (startedBefore, ended)
      return { base: wall - (startedBefore + ended) / 2, width: ended - startedBefore };
    }
    startedBefore = started;
  }
}

function calibrate(): number {
  let best = edge();
  // the narrowest of several ticks: one where the process was not descheduled mid-look
  for (let i = 0; i < 20 && (i < 5 || best.width > 0.05); i++) {
    const e = edge();
    if (e.width < best.width) best = e;
  }
  return best.base;
}

const base = calibrate();

/** Wall-clock ms (same clock as Date.now() and, on this machine, Redis TIME), sub-ms. */
export const now = (): number => base + performance.now();
