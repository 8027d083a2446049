// A dependency-free SVG of horizontal bar panels: medians as bars, min–max as whiskers.

export interface Bar {
  label: string;
  median: number;
  min: number;
  max: number;
  ours: boolean;
}

export interface Panel {
  title: string;
  unit: string;
  bars: Bar[];
}

const WIDTH = 860;
const LABEL = 330;
const BAR_H = 18;
const GAP = 6;
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(1));

export function barChart(title: string, panels: Panel[]): string {
  const parts: string[] = [];
  let y = 40;
  parts.push(`<text x="12" y="24" font-size="16" font-weight="bold">${esc(title)}</text>`);
  for (const panel of panels) {
    y += 14;
    parts.push(`<text x="12" y="${y}" font-size="13" font-weight="bold">${esc(panel.title)} (${esc(panel.unit)})</text>`);
    y += 10;
    const top = Math.max(...panel.bars.map((b) => b.max)) * 1.08;
    const scale = (v: number) => (v / top) * (WIDTH - LABEL - 90);
    for (const bar of panel.bars) {
      const w = scale(bar.median);
      const fill = bar.ours ? '#2f6fb0' : '#9a9a9a';
      parts.push(`<text x="${LABEL - 8}" y="${y + 13}" font-size="12" text-anchor="end">${esc(bar.label)}</text>`);
      parts.push(`<rect x="${LABEL}" y="${y}" width="${w.toFixed(1)}" height="${BAR_H}" fill="${fill}"/>`);
      const [x1, x2] = [LABEL + scale(bar.min), LABEL + scale(bar.max)];
      parts.push(`<line x1="${x1.toFixed(1)}" x2="${x2.toFixed(1)}" y1="${y + BAR_H / 2}" y2="${y + BAR_H / 2}" stroke="#222" stroke-width="1.2"/>`);
      parts.push(`<text x="${(Math.max(x2, LABEL + w) + 6).toFixed(1)}" y="${y + 13}" font-size="11">${fmt(bar.median)}</text>`);
      y += BAR_H + GAP;
    }
    y += 8;
  }
  y += 10;
  parts.push(
    `<text x="12" y="${y}" font-size="11" fill="#444">Bars: median of the runs; whiskers: min–max. Blue: nest-redis-limit. Source: BENCHMARKS.md.</text>`,
  );
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${y + 14}" viewBox="0 0 ${WIDTH} ${y + 14}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}
