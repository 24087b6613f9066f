/** The webhooks, scale and notify benchmarks' charts, drawn from each run's own samples (bench/charts.ts). */
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

type Cpu = Record<'cpu_pct_worker' | 'cpu_pct_temporal' | 'cpu_pct_bench_process', number>;
type Paths = { signal: readonly number[]; http: readonly number[] };

/** Webhook → order system p50 and p99 by path, at the worst-case rate and a low one; CPU of each process with deliveries told beside followed by `watch`. */
export function notifyCharts(o: { latency: { worst: Paths; low: Paths }; rates: [number, number]; cpu: { title: string; told: Cpu; watched: Cpu } }): Record<string, string> {
  const runs = ([['worst', o.rates[0]], ['low', o.rates[1]]] as const).flatMap(([k, rate]) => [{ label: `signal at ${rate}/s`, ms: o.latency[k].signal }, { label: `HTTP at ${rate}/s`, ms: o.latency[k].http }]);
  const sorted = runs.map((r) => [...r.ms].sort((x, y) => x - y));
  const groups = [0.5, 0.99].map((p) => ({ label: `p${Math.round(p * 100)}`, values: sorted.map((s) => (s.length ? percentile(s, p) : 0)) }));
  const parts = { cpu_pct_worker: 'worker', cpu_pct_temporal: 'Temporal dev server', cpu_pct_bench_process: 'order side, or the watching process' } as const;
  return {
    latency: barChart({ title: 'provider webhook → order system (signal: in its history; HTTP: at the receiver)', xLabel: "percentile of the run's samples", yLabel: 'ms', series: runs.map((r, i) => `${r.label} (${sorted[i]!.length})`), groups }),
    cpu: barChart({
      title: o.cpu.title,
      xLabel: 'process',
      yLabel: '% of one core',
      series: ['told (signal + HTTP endpoint)', 'followed by watch, 500 ms'],
      groups: (Object.keys(parts) as (keyof Cpu)[]).map((k) => ({ label: parts[k], values: [o.cpu.told[k], o.cpu.watched[k]] })),
    }),
  };
}
