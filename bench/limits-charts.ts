/** The limits benchmark's charts: provider calls in the trailing window against the limit, and the backlog's drain against the least possible. */
import type { RateLimit } from '../provider/limits';
import { lineChart, trailingWindowSeries, type Series } from './charts';

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
  const calls = (family: 'quotes' | 'creations', limit: RateLimit) =>
    lineChart({
      title: `${family} in the trailing ${limit.windowMs / 1000} s window`,
      xLabel: 'seconds since the first order',
      yLabel: `${family} accepted in the window`,
      series: samples.map((x) => trailingWindowSeries(x.label, s(x, x[family]), limit.windowMs / 1000)),
      references: [{ y: limit.limit, label: `provider limit: ${limit.limit} per ${limit.windowMs / 1000} s` }],
    });
  return {
    creations: calls('creations', limits.creations),
    quotes: calls('quotes', limits.quotes),
    drain: lineChart({
      title: `backlog of ${orders} orders`,
      xLabel: 'seconds since the first order',
      yLabel: 'orders not yet created',
      series: [...samples.map((x) => drainSeries(x.label, orders, s(x, x.createdAt))), drainSeries('least possible', orders, leastCreatedAtMs.map((t) => t / 1000))],
    }),
  };
}
