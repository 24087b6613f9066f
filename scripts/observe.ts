/**
 * The metrics endpoints of a local stack (`npm start`, `npm run cluster`), one place for their
 * ports: each worker's two (the Temporal SDK's, the worker's own), the fleet view's, the Temporal
 * server's; the bridges serve theirs on their admin listener. All on 127.0.0.1. Prometheus
 * (scripts/prometheus.ts) scrapes them all when the stack runs it.
 */
import { join } from 'node:path';
import { findPrometheus, Prometheus, PROMETHEUS_PORT, type ScrapeTargets } from './prometheus';
import type { Run } from './supervisor';

export const FLEET_METRICS_PORT = 9470;
/** `npm start -- --observe`: Jaeger's OTLP/HTTP receiver and its query API, on OpenTelemetry's and Jaeger's usual ports. */
export const JAEGER_PORTS = { otlp: 4318, query: 16686 };
/** The dev server's own /metrics (`--metrics-port`); a cluster's service processes from the next port on. */
export const DEV_SERVER_METRICS_PORT = 9480;

/** `npm run cluster`: each Temporal service process's /metrics port, by process name (9481, 9482, …). */
export function temporalMetricsPorts(processes: readonly string[]): Record<string, number> {
  return Object.fromEntries(processes.map((name, i) => [name, DEV_SERVER_METRICS_PORT + 1 + i]));
}
const WORKER_METRICS_BASE = 9464;

/** Worker `i` (from 0): the SDK's exporter on 9464 + 2i, its own metrics on the next port. */
export function workerMetricsPorts(i: number): { sdk: number; own: number } {
  return { sdk: WORKER_METRICS_BASE + 2 * i, own: WORKER_METRICS_BASE + 2 * i + 1 };
}

export function workerMetricsEnv(i: number): NodeJS.ProcessEnv {
  const { sdk, own } = workerMetricsPorts(i);
  return { WORKER_METRICS_ADDRESS: `127.0.0.1:${sdk}`, WORKER_DELIVERY_METRICS_ADDRESS: `127.0.0.1:${own}` };
}

export const fleetMetricsEnv = (): NodeJS.ProcessEnv => ({ FLEET_METRICS_ADDRESS: `127.0.0.1:${FLEET_METRICS_PORT}` });

/** The ports a stack's metrics take, for its check that they are free. */
export function metricsPortList(workers: number): { port: number; what: string }[] {
  return [
    ...Array.from({ length: workers }, (_, i) => [
      { port: workerMetricsPorts(i).sdk, what: `worker ${i + 1}'s Temporal SDK metrics` },
      { port: workerMetricsPorts(i).own, what: `worker ${i + 1}'s metrics` },
    ]).flat(),
    { port: FLEET_METRICS_PORT, what: 'the fleet view' },
  ];
}

export function stackTargets(o: { workers: number; bridgeAdminPorts: number[]; temporal: string[] }): ScrapeTargets {
  const workers = Array.from({ length: o.workers }, (_, i) => workerMetricsPorts(i));
  return {
    'worker-sdk': workers.map((w) => `127.0.0.1:${w.sdk}`),
    worker: workers.map((w) => `127.0.0.1:${w.own}`),
    fleet: [`127.0.0.1:${FLEET_METRICS_PORT}`],
    bridge: o.bridgeAdminPorts.map((p) => `127.0.0.1:${p}`),
    temporal: o.temporal,
  };
}

/** The stack's lines saying where each process's metrics are. */
export function describeMetrics(o: { workers: number; bridgeAdminPorts: number[]; temporal: string[] }): string[] {
  const t = stackTargets(o);
  const urls = (list: string[]) => list.map((a) => `http://${a}/metrics`).join(', ');
  return [
    `  metrics          workers (Temporal SDK) ${urls(t['worker-sdk'])}`,
    `                   workers (deliveries)   ${urls(t.worker)}`,
    `                   fleet view             ${urls(t.fleet)}`,
    `                   bridges                ${urls(t.bridge)}`,
    ...(t.temporal.length ? [`                   Temporal server        ${urls(t.temporal)}`] : []),
  ];
}

/** Prometheus for the stack, its data under `<dataDir>/prometheus`, supervised like the stack's other parts. */
export async function startStackPrometheus(o: {
  dataDir: string;
  targets: ScrapeTargets;
  supervise: (part: string, start: () => Promise<Run>) => Promise<Run>;
  log: (line: string) => void;
}): Promise<Prometheus> {
  const prometheus = new Prometheus({ binary: findPrometheus(), dir: join(o.dataDir, 'prometheus'), port: Number(process.env.PROMETHEUS_PORT ?? PROMETHEUS_PORT), targets: o.targets, output: (l) => o.log(`[prometheus] ${l}`) });
  await o.supervise('prometheus', () => prometheus.start());
  return prometheus;
}
