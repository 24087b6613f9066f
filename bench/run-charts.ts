/** The limits, webhooks, scale and notify benchmarks' charts, drawn from each run's own samples (bench/charts.ts). */
import type { RateLimit } from '../provider/limits';
import { barChart, lineChart, trailingWindowSeries, type Series } from './charts';
import { percentile } from './measure';

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

/** The scale run's worker memory and signal → status latency over the run: [seconds since the benchmark started, value]. */
export function scaleCharts(rss: readonly Series[], statusLatency: readonly Series[]): Record<string, string> {
  const xLabel = 'seconds since the benchmark started';
  return {
    rss: lineChart({ title: 'worker resident memory (VmRSS, sampled every second)', xLabel, yLabel: 'MiB', series: rss }),
    'status-latency': lineChart({ title: 'signal → status query shows it, one delivery at a time', xLabel, yLabel: 'ms', series: statusLatency }),
  };
}

type Cpu = Record<'cpu_pct_worker' | 'cpu_pct_temporal' | 'cpu_pct_bench_process', number>;
/** Samples of each path: [when the change was sent (epoch ms), its latency (ms)]. */
type Paths = { signal: readonly (readonly [number, number])[]; http: readonly (readonly [number, number])[] };

/** Webhook → order system: at the worst-case rate by when each change was sent (a queue shows as a ramp), at the low p50 / p90 / p99;
 * CPU of each process, deliveries told beside followed by `watch`. */
export function notifyCharts(o: { latency: { worst: Paths; low: Paths }; rates: [number, number]; cpu: { title: string; told: Cpu; watched: Cpu } }): Record<string, string> {
  const paths = [['signal', 'signal (in the order workflow\'s history)'], ['http', 'HTTP (at the receiver)']] as const;
  const first = Math.min(...paths.flatMap(([k]) => o.latency.worst[k].map((x) => x[0])));
  const series = paths.map(([k, name]) => ({ name, points: [...o.latency.worst[k]].sort((a, b) => a[0] - b[0]).map(([t, ms]) => [(t - first) / 1000, ms] as const) }));
  const parts = { cpu_pct_worker: 'worker', cpu_pct_temporal: 'Temporal dev server', cpu_pct_bench_process: 'order side, or the watching process' } as const;
  const cpuGroups = (Object.keys(parts) as (keyof Cpu)[]).map((k) => ({ label: parts[k], values: [o.cpu.told[k], o.cpu.watched[k]] }));
  return {
    'latency-worst': lineChart({ title: `provider webhook → order system at ${o.rates[0]} changes/s, by when each was sent`, xLabel: 'seconds since the first change', yLabel: 'ms', series }),
    'latency-low': percentileBars(`provider webhook → order system at ${o.rates[1]} changes/s`, paths.map(([k, label]) => ({ label, latencies: o.latency.low[k].map((x) => x[1]) }))),
    cpu: barChart({ title: o.cpu.title, xLabel: 'process', yLabel: '% of one core', series: ['told (signal + HTTP endpoint)', 'followed by watch, 500 ms'], groups: cpuGroups }),
  };
}

/** The limits benchmark's samples of one approach: provider calls in the trailing window against the limit, and the backlog's drain. */
export interface BacklogSamples {
  /** 'pacing gate', 'task-queue limit', 'naive client'. */
  label: string;
  /** When the first order was started (ms). */
  t0: number;
  /** Accepted quote and creation calls at the provider (ms), from its request log. */
  quotes: number[];
  creations: number[];
  /** When each order's delivery was created (ms). */
  createdAt: number[];
}

/** Orders still waiting to be created, from `total` down to 0. */
export function drainSeries(name: string, total: number, createdAtS: readonly number[]): Series {
  const points: [number, number][] = [[0, total]];
  [...createdAtS].sort((a, b) => a - b).forEach((t, i) => points.push([t, total - i - 1]));
  return { name, points, step: true };
}

export function limitsCharts(samples: readonly BacklogSamples[], limits: { quotes: RateLimit; creations: RateLimit }, orders: number, leastCreatedAtMs: readonly number[]): Record<string, string> {
  const s = (x: BacklogSamples, ts: readonly number[]) => ts.map((t) => (t - x.t0) / 1000);
  const xLabel = 'seconds since the first order';
  const calls = (family: 'quotes' | 'creations', { limit, windowMs }: RateLimit) => {
    const references = [{ y: limit, label: `provider limit: ${limit} per ${windowMs / 1000} s` }];
    const series = samples.map((x) => trailingWindowSeries(x.label, s(x, x[family]), windowMs / 1000));
    return lineChart({ title: `${family} in the trailing ${windowMs / 1000} s window`, xLabel, yLabel: `${family} accepted in the window`, series, references });
  };
  const drain = [...samples.map((x) => drainSeries(x.label, orders, s(x, x.createdAt))), drainSeries('least possible', orders, leastCreatedAtMs.map((t) => t / 1000))];
  return { creations: calls('creations', limits.creations), quotes: calls('quotes', limits.quotes), drain: lineChart({ title: `backlog of ${orders} orders`, xLabel, yLabel: 'orders not yet created', series: drain }) };
}
