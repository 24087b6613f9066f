/** Charts as plain SVG drawn from a benchmark's own samples (no browser, no dependency): lines or grouped bars. */

export interface Series {
  name: string;
  /** [x, y] in data units, in x order. */
  points: readonly (readonly [number, number])[];
  /** Hold each value until the next point (counts that change in steps), instead of a straight line. */
  step?: boolean;
}

type Axes = { title: string; xLabel: string; yLabel: string };

/** Distinguishable in colour-blind vision (Okabe–Ito). */
const COLOURS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#000000'];
const MARGIN = { top: 36, right: 16, bottom: 78, left: 64 };
const [WIDTH, HEIGHT] = [720, 360];
const [PLOT_W, PLOT_H] = [WIDTH - MARGIN.left - MARGIN.right, HEIGHT - MARGIN.top - MARGIN.bottom];
const BOTTOM = MARGIN.top + PLOT_H;

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

export function lineChart(spec: Axes & { series: readonly Series[]; references?: readonly { y: number; label: string }[] }): string {
  const xs = spec.series.flatMap((s) => s.points.map((p) => p[0]));
  const xTicks = niceTicks(Math.min(0, ...xs), Math.max(1, ...xs));
  const [x0, x1] = [xTicks[0]!, xTicks[xTicks.length - 1]!];
  const sx = (x: number) => round(MARGIN.left + ((x - x0) / (x1 - x0 || 1)) * PLOT_W);
  const ys = [...spec.series.flatMap((s) => s.points.map((p) => p[1])), ...(spec.references ?? []).map((r) => r.y)];
  const { out, sy } = frame(spec, ys, spec.series.map((s) => s.name));
  for (const t of xTicks) out.push(`<text x="${sx(t)}" y="${BOTTOM + 16}" text-anchor="middle">${fmt(t)}</text>`);
  for (const r of spec.references ?? []) {
    out.push(`<line class="reference" data-y="${r.y}" x1="${MARGIN.left}" x2="${MARGIN.left + PLOT_W}" y1="${sy(r.y)}" y2="${sy(r.y)}" stroke="#c00" stroke-dasharray="6 4"/>`);
    out.push(`<text x="${MARGIN.left + PLOT_W - 4}" y="${sy(r.y) - 4}" text-anchor="end" fill="#c00">${esc(r.label)}</text>`);
  }
  spec.series.forEach((s, i) => {
    // A step holds the previous value until the next x.
    const pts = s.points.map(([x, y], j) => (s.step && j > 0 ? `${sx(x)},${sy(s.points[j - 1]![1])} ` : '') + `${sx(x)},${sy(y)}`);
    out.push(`<polyline class="series" data-name="${esc(s.name)}" fill="none" stroke="${colour(i)}" stroke-width="1.5" points="${pts.join(' ')}"/>`);
  });
  return out.join('\n') + '\n</svg>\n';
}

/** Grouped bars, one per series in every group (e.g. the bridge beside raw signals at p50, p90, p99), each with its value above it. */
export function barChart(spec: Axes & { series: readonly string[]; groups: readonly { label: string; values: readonly number[] }[] }): string {
  const { out, sy } = frame(spec, spec.groups.flatMap((g) => g.values), spec.series);
  const groupW = PLOT_W / Math.max(1, spec.groups.length);
  const barW = (groupW * 0.8) / Math.max(1, spec.series.length);
  spec.groups.forEach((g, gi) => {
    const gx = MARGIN.left + gi * groupW;
    out.push(`<text x="${round(gx + groupW / 2)}" y="${BOTTOM + 16}" text-anchor="middle">${esc(g.label)}</text>`);
    g.values.forEach((v, i) => {
      const x = round(gx + groupW * 0.1 + i * barW);
      out.push(`<rect class="bar" data-series="${esc(spec.series[i] ?? '')}" data-group="${esc(g.label)}" data-value="${v}" x="${x}" y="${sy(v)}" width="${round(barW - 2)}" height="${round(sy(0) - sy(v))}" fill="${colour(i)}"/>`);
      out.push(`<text x="${round(x + barW / 2)}" y="${sy(v) - 3}" text-anchor="middle" font-size="10">${fmt(Number(v.toPrecision(3)))}</text>`);
    });
  });
  return out.join('\n') + '\n</svg>\n';
}

/** What every chart has: title, y axis and grid, both axes, the legend three a row (fewer for long names; a third row grows it). */
function frame(spec: Axes, ys: readonly number[], names: readonly string[]): { out: string[]; sy: (y: number) => number } {
  // About 7 px per character at 12 px, plus the colour sample.
  const columns = Math.max(1, Math.min(3, Math.floor(PLOT_W / (32 + 7 * Math.max(0, ...names.map((n) => n.length))))));
  const height = HEIGHT + Math.max(0, Math.ceil(names.length / columns) - 2) * 16;
  const yTicks = niceTicks(Math.min(0, ...ys), Math.max(1, ...ys) * 1.05);
  const [y0, y1] = [yTicks[0]!, yTicks[yTicks.length - 1]!];
  const sy = (y: number) => round(BOTTOM - ((y - y0) / (y1 - y0 || 1)) * PLOT_H);
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    `<text x="${WIDTH / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${esc(spec.title)}</text>`,
    ...yTicks.flatMap((t) => [`<line x1="${MARGIN.left}" x2="${MARGIN.left + PLOT_W}" y1="${sy(t)}" y2="${sy(t)}" stroke="#eee"/>`, `<text x="${MARGIN.left - 6}" y="${sy(t) + 4}" text-anchor="end">${fmt(t)}</text>`]),
    `<line x1="${MARGIN.left}" x2="${MARGIN.left}" y1="${MARGIN.top}" y2="${BOTTOM}" stroke="#333"/>`,
    `<line x1="${MARGIN.left}" x2="${MARGIN.left + PLOT_W}" y1="${BOTTOM}" y2="${BOTTOM}" stroke="#333"/>`,
    `<text x="${MARGIN.left + PLOT_W / 2}" y="${BOTTOM + 34}" text-anchor="middle">${esc(spec.xLabel)}</text>`,
    `<text transform="translate(16 ${MARGIN.top + PLOT_H / 2}) rotate(-90)" text-anchor="middle">${esc(spec.yLabel)}</text>`,
  ];
  names.forEach((name, i) => {
    const [lx, ly] = [MARGIN.left + (i % columns) * (PLOT_W / columns), BOTTOM + 56 + Math.floor(i / columns) * 16];
    out.push(`<line x1="${lx}" x2="${lx + 18}" y1="${ly - 4}" y2="${ly - 4}" stroke="${colour(i)}" stroke-width="3"/>`, `<text x="${lx + 24}" y="${ly}">${esc(name)}</text>`);
  });
  return { out, sy };
}

const colour = (i: number) => COLOURS[i % COLOURS.length]!;
const round = (v: number) => Math.round(v * 10) / 10;
const fmt = (v: number) => (Math.abs(v) >= 10_000 ? `${v / 1000}k` : String(v));
const esc = (text: string) => text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
