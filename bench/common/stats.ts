// Summaries the report prints: the median of the runs, with the range they spanned.

export interface Spread {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export function spread(runs: readonly number[]): Spread {
  const sorted = [...runs].sort((a, b) => a - b);
  // an even count takes the mean of the middle two, so 4 runs do not report the 3rd best
  const mid = sorted.length / 2;
  const median = sorted.length % 2 === 1 ? sorted[Math.floor(mid)]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { median, min: sorted[0]!, max: sorted[sorted.length - 1]!, runs: [...runs] };
}

/** "1,234 (1,100–1,300)": the median and the range, `digits` after the point. */
export function cell(s: Spread, digits = 0): string {
  const f = (n: number) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return `${f(s.median)} (${f(s.min)}–${f(s.max)})`;
}

/** The ratio of two medians; with `paired` runs (measured side by side, run i with run i), the
 * range is that of the per-run ratios. */
export function ratio(ours: Spread, theirs: Spread, paired = true): Spread {
  const m = ours.median / theirs.median;
  if (!paired || ours.runs.length !== theirs.runs.length) return { median: m, min: m, max: m, runs: [m] };
  return { ...spread(ours.runs.map((o, i) => o / theirs.runs[i]!)), median: m };
}

export const formatRatio = (r: Spread) => (r.min === r.max ? `${r.median.toFixed(2)}×` : `${r.median.toFixed(2)}× (${r.min.toFixed(2)}–${r.max.toFixed(2)})`);
