/**
 * The webhooks and scale benchmarks' charts, drawn from each run's own samples (bench/charts.ts):
 * the bridge's acknowledgement latency percentiles beside raw signals, and the scale run's worker
 * memory and signal → status latency over the run.
 */
import { barChart, lineChart } from './charts';
import { percentile } from './measure';

/** Latencies (ms) of one way of signalling, e.g. 'bridge at 200/s' or 'raw signals, one at a time'. */
export interface LatencySamples {
  label: string;
  latencies: readonly number[];
}

const PERCENTILES = [0.5, 0.9, 0.99] as const;

export function webhooksCharts(ack: readonly LatencySamples[]): Record<string, string> {
  const sorted = ack.map((a) => [...a.latencies].sort((x, y) => x - y));
  return {
    ack: barChart({
      title: 'acknowledgement latency: the bridge beside raw signals',
      xLabel: 'percentile of the run\'s samples',
      yLabel: 'ms',
      series: ack.map((a, i) => `${a.label} (${sorted[i]!.length})`),
      groups: PERCENTILES.map((p) => ({ label: `p${Math.round(p * 100)}`, values: sorted.map((s) => (s.length ? percentile(s, p) : 0)) })),
    }),
  };
}

/** A series over the run: [seconds since the benchmark started, value]. */
export interface RunSeries {
  label: string;
  points: readonly (readonly [number, number])[];
}

export function scaleCharts(rss: readonly RunSeries[], statusLatency: readonly RunSeries[]): Record<string, string> {
  const xLabel = 'seconds since the benchmark started';
  return {
    rss: lineChart({ title: 'worker resident memory (VmRSS, sampled every second)', xLabel, yLabel: 'MiB', series: rss.map((s) => ({ name: s.label, points: s.points })) }),
    'status-latency': lineChart({
      title: 'signal → status query shows it, one delivery at a time',
      xLabel,
      yLabel: 'ms',
      series: statusLatency.map((s) => ({ name: s.label, points: s.points })),
    }),
  };
}
