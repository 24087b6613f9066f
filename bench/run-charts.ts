/** The webhooks, scale and notify benchmarks' charts, drawn from each run's own samples (bench/charts.ts). */
import { barChart, lineChart } from './charts';
import { percentile } from './measure';

/** A series over the run: [seconds since the benchmark started, value]. */
export interface RunSeries {
  label: string;
  points: readonly (readonly [number, number])[];
}

/** p50, p90 and p99 of each sample set side by side, each named with its count: a bar chart. */
function percentileBars(title: string, sets: readonly { label: string; latencies: readonly number[] }[]): string {
  const sorted = sets.map((a) => [...a.latencies].sort((x, y) => x - y));
  const groups = [0.5, 0.9, 0.99].map((p) => ({ label: `p${Math.round(p * 100)}`, values: sorted.map((s) => (s.length ? percentile(s, p) : 0)) }));
  return barChart({ title, xLabel: "percentile of the run's samples", yLabel: 'ms', series: sets.map((a, i) => `${a.label} (${sorted[i]!.length})`), groups });
}

/** Each way of signalling (e.g. 'bridge at 200/s', 'raw signals, one at a time'), side by side. */
export function webhooksCharts(ack: readonly { label: string; latencies: readonly number[] }[]): Record<string, string> {
  return { ack: percentileBars('acknowledgement latency: the bridge beside raw signals', ack) };
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

type Cpu = Record<'cpu_pct_worker' | 'cpu_pct_temporal' | 'cpu_pct_bench_process', number>;
/** Samples of each path: [when the change was sent (epoch ms), its latency (ms)]. */
type Paths = { signal: readonly (readonly [number, number])[]; http: readonly (readonly [number, number])[] };

/**
 * Webhook → order system: at the worst-case rate each change's latency by when it was sent (a queue shows as a ramp), at the low
 * rate p50 / p90 / p99 by path; and CPU of each process with deliveries told beside followed by `watch`.
 */
export function notifyCharts(o: { latency: { worst: Paths; low: Paths }; rates: [number, number]; cpu: { title: string; told: Cpu; watched: Cpu } }): Record<string, string> {
  const paths = [['signal', 'signal (in the order workflow\'s history)'], ['http', 'HTTP (at the receiver)']] as const;
  const first = Math.min(...paths.flatMap(([k]) => o.latency.worst[k].map((x) => x[0])));
  const series = paths.map(([k, name]) => ({ name, points: [...o.latency.worst[k]].sort((a, b) => a[0] - b[0]).map(([t, ms]) => [(t - first) / 1000, ms] as const) }));
  const parts = { cpu_pct_worker: 'worker', cpu_pct_temporal: 'Temporal dev server', cpu_pct_bench_process: 'order side, or the watching process' } as const;
  return {
    'latency-worst': lineChart({ title: `provider webhook → order system at ${o.rates[0]} changes/s, by when each was sent`, xLabel: 'seconds since the first change', yLabel: 'ms', series }),
    'latency-low': percentileBars(`provider webhook → order system at ${o.rates[1]} changes/s`, paths.map(([k, label]) => ({ label, latencies: o.latency.low[k].map((x) => x[1]) }))),
    cpu: barChart({
      title: o.cpu.title,
      xLabel: 'process',
      yLabel: '% of one core',
      series: ['told (signal + HTTP endpoint)', 'followed by watch, 500 ms'],
      groups: (Object.keys(parts) as (keyof Cpu)[]).map((k) => ({ label: parts[k], values: [o.cpu.told[k], o.cpu.watched[k]] })),
    }),
  };
}
