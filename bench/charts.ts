/**
 * Line charts as plain SVG, drawn from a benchmark's own samples (no browser, no dependency): a
 * chart is a few polylines, axes with round ticks, dashed reference lines (a provider's limit) and
 * a legend. Written next to a benchmark's JSON in bench/results/ and shown in docs/benchmarks.md.
 */

export interface Series {
  name: string;
  /** [x, y] in data units, in x order. */
  points: readonly (readonly [number, number])[];
  /** Hold each value until the next point (counts that change in steps), instead of a straight line. */
  step?: boolean;
}

export interface ReferenceLine {
  y: number;
  label: string;
}

export interface ChartSpec {
  title: string;
  xLabel: string;
  yLabel: string;
  series: readonly Series[];
  references?: readonly ReferenceLine[];
  width?: number;
  height?: number;
}

/** Distinguishable in colour-blind vision (Okabe–Ito). */
const COLOURS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#000000'];
const MARGIN = { top: 36, right: 16, bottom: 78, left: 64 };

/** Ticks at 1, 2 or 5 × 10^n covering [min, max], about `count` of them. */
export function niceTicks(min: number, max: number, count = 6): number[] {
  if (!(max > min)) return [min];
  const raw = (max - min) / Math.max(1, count - 1);
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw)!;
  const ticks: number[] = [];
  // From the last tick at or below min to the first at or above max: the axis covers every sample.
  for (let t = Math.floor(min / step + 1e-9) * step; ; t += step) {
    ticks.push(Number(t.toPrecision(12)));
    if (t >= max - step * 1e-9) return ticks;
  }
}

/** Calls in the trailing window at every call and every expiry: the count a rolling-window limit checks. */
export function trailingWindowSeries(name: string, callTimes: readonly number[], windowLength: number): Series {
  const times = [...callTimes].sort((a, b) => a - b);
  const events = [...times.map((t) => [t, +1] as const), ...times.map((t) => [t + windowLength, -1] as const)].sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const points: [number, number][] = [];
  let inWindow = 0;
  for (const [t, d] of events) {
    inWindow += d;
    if (points.length > 0 && points[points.length - 1]![0] === t) points[points.length - 1]![1] = inWindow;
    else points.push([t, inWindow]);
  }
  return { name, points, step: true };
}

export function lineChart(spec: ChartSpec): string {
  const xs = spec.series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = [...spec.series.flatMap((s) => s.points.map((p) => p[1])), ...(spec.references ?? []).map((r) => r.y)];
  const xTicks = niceTicks(Math.min(0, ...xs), Math.max(1, ...xs));
  const [x0, x1] = [xTicks[0]!, xTicks[xTicks.length - 1]!];
  const f = frame(spec, ys, spec.series.map((s) => s.name));
  const sx = (x: number) => round(MARGIN.left + ((x - x0) / (x1 - x0 || 1)) * f.plotW);
  const { out, sy } = f;
  for (const t of xTicks) out.push(`<text x="${sx(t)}" y="${MARGIN.top + f.plotH + 16}" text-anchor="middle">${fmt(t)}</text>`);
  for (const r of spec.references ?? []) {
    out.push(`<line class="reference" data-y="${r.y}" x1="${MARGIN.left}" x2="${MARGIN.left + f.plotW}" y1="${sy(r.y)}" y2="${sy(r.y)}" stroke="#c00" stroke-dasharray="6 4"/>`);
    out.push(`<text x="${MARGIN.left + f.plotW - 4}" y="${sy(r.y) - 4}" text-anchor="end" fill="#c00">${esc(r.label)}</text>`);
  }
  spec.series.forEach((s, i) => {
    const pts: string[] = [];
    s.points.forEach(([x, y], j) => {
      if (s.step && j > 0) pts.push(`${sx(x)},${sy(s.points[j - 1]![1])}`);
      pts.push(`${sx(x)},${sy(y)}`);
    });
    out.push(`<polyline class="series" data-name="${esc(s.name)}" fill="none" stroke="${colour(i)}" stroke-width="1.5" points="${pts.join(' ')}"/>`);
    legend(out, f, i, s.name);
  });
  return finish(out);
}

export interface BarChartSpec {
  title: string;
  xLabel: string;
  yLabel: string;
  /** One bar per series in every group, side by side (e.g. the bridge beside raw signals). */
  series: readonly string[];
  /** Each group's label and its value per series, in series order (e.g. p50, p90, p99). */
  groups: readonly { label: string; values: readonly number[] }[];
  width?: number;
  height?: number;
}

/** Grouped bars, each with its value written above it. */
export function barChart(spec: BarChartSpec): string {
  const f = frame(spec, spec.groups.flatMap((g) => g.values), spec.series);
  const { out, sy } = f;
  const groupW = f.plotW / Math.max(1, spec.groups.length);
  const barW = (groupW * 0.8) / Math.max(1, spec.series.length);
  spec.groups.forEach((g, gi) => {
    const gx = MARGIN.left + gi * groupW;
    out.push(`<text x="${round(gx + groupW / 2)}" y="${MARGIN.top + f.plotH + 16}" text-anchor="middle">${esc(g.label)}</text>`);
    g.values.forEach((v, i) => {
      const x = round(gx + groupW * 0.1 + i * barW);
      out.push(`<rect class="bar" data-series="${esc(spec.series[i] ?? '')}" data-group="${esc(g.label)}" data-value="${v}" x="${x}" y="${sy(v)}" width="${round(barW - 2)}" height="${round(sy(0) - sy(v))}" fill="${colour(i)}"/>`);
      out.push(`<text x="${round(x + barW / 2)}" y="${sy(v) - 3}" text-anchor="middle" font-size="10">${fmt(Number(v.toPrecision(3)))}</text>`);
    });
  });
  spec.series.forEach((name, i) => legend(out, f, i, name));
  return finish(out);
}

interface Frame {
  out: string[];
  plotW: number;
  plotH: number;
  sy: (y: number) => number;
  /** Legend entries per row: three, fewer when the names are long. */
  columns: number;
}

/**
 * The parts every chart has: background, title, the y axis with its grid, both axes and their
 * labels. The image grows below the plot when the legend needs more than two rows.
 */
function frame(spec: { title: string; xLabel: string; yLabel: string; width?: number; height?: number }, ys: readonly number[], names: readonly string[]): Frame {
  const width = spec.width ?? 720;
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = (spec.height ?? 360) - MARGIN.top - MARGIN.bottom;
  // About 7 px per character at 12 px, plus the colour sample.
  const columns = Math.max(1, Math.min(3, Math.floor(plotW / (32 + 7 * Math.max(0, ...names.map((n) => n.length))))));
  const height = (spec.height ?? 360) + Math.max(0, Math.ceil(names.length / columns) - 2) * 16;
  const yTicks = niceTicks(Math.min(0, ...ys), Math.max(1, ...ys) * 1.05);
  const [y0, y1] = [yTicks[0]!, yTicks[yTicks.length - 1]!];
  const sy = (y: number) => round(MARGIN.top + plotH - ((y - y0) / (y1 - y0 || 1)) * plotH);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${esc(spec.title)}</text>`,
  ];
  for (const t of yTicks) {
    out.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${sy(t)}" y2="${sy(t)}" stroke="#eee"/>`);
    out.push(`<text x="${MARGIN.left - 6}" y="${sy(t) + 4}" text-anchor="end">${fmt(t)}</text>`);
  }
  out.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left}" y1="${MARGIN.top}" y2="${MARGIN.top + plotH}" stroke="#333"/>`);
  out.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left + plotW}" y1="${MARGIN.top + plotH}" y2="${MARGIN.top + plotH}" stroke="#333"/>`);
  out.push(`<text x="${MARGIN.left + plotW / 2}" y="${MARGIN.top + plotH + 34}" text-anchor="middle">${esc(spec.xLabel)}</text>`);
  out.push(`<text transform="translate(16 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle">${esc(spec.yLabel)}</text>`);
  return { out, plotW, plotH, sy, columns };
}

const colour = (i: number) => COLOURS[i % COLOURS.length]!;

function legend(out: string[], f: Frame, i: number, name: string): void {
  const lx = MARGIN.left + (i % f.columns) * (f.plotW / f.columns);
  const ly = MARGIN.top + f.plotH + 56 + Math.floor(i / f.columns) * 16;
  out.push(`<line x1="${lx}" x2="${lx + 18}" y1="${ly - 4}" y2="${ly - 4}" stroke="${colour(i)}" stroke-width="3"/>`);
  out.push(`<text x="${lx + 24}" y="${ly}">${esc(name)}</text>`);
}

function finish(out: string[]): string {
  out.push('</svg>');
  return out.join('\n') + '\n';
}

function round(v: number): number {
  return Math.round(v * 10) / 10;
}

function fmt(v: number): string {
  return Math.abs(v) >= 10_000 ? `${v / 1000}k` : String(v);
}

function esc(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
