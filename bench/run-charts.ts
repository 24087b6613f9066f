/** The webhooks and scale benchmarks' charts, drawn from each run's own samples (bench/charts.ts). */
import { barChart, lineChart } from './charts';
import { percentile } from './measure';

/** A series over the run: [seconds since the benchmark started, value]. */
export interface RunSeries {
  label: string;
  points: readonly (readonly [number, number])[];
}

/** p50, p90 and p99 of each way of signalling (e.g. 'bridge at 200/s', 'raw signals, one at a time'), side by side. */
export function webhooksCharts(ack: readonly { label: string; latencies: readonly number[] }[]): Record<string, string> {
  const sorted = ack.map((a) => [...a.latencies].sort((x, y) => x - y));
  const series = ack.map((a, i) => `${a.label} (${sorted[i]!.length})`);
  const groups = [0.5, 0.9, 0.99].map((p) => ({ label: `p${Math.round(p * 100)}`, values: sorted.map((s) => (s.length ? percentile(s, p) : 0)) }));
  return { ack: barChart({ title: 'acknowledgement latency: the bridge beside raw signals', xLabel: "percentile of the run's samples", yLabel: 'ms', series, groups }) };
}

/** The scale run's worker memory and signal → status latency over the run. */
export function scaleCharts(rss: readonly RunSeries[], statusLatency: readonly RunSeries[]): Record<string, string> {
  const xLabel = 'seconds since the benchmark started';
  const series = (runs: readonly RunSeries[]) => runs.map((s) => ({ name: s.label, points: s.points }));
  return {
    rss: lineChart({ title: 'worker resident memory (VmRSS, sampled every second)', xLabel, yLabel: 'MiB', series: series(rss) }),
    'status-latency': lineChart({ title: 'signal → status query shows it, one delivery at a time', xLabel, yLabel: 'ms', series: series(statusLatency) }),
  };
}
