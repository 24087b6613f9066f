/**
 * `npm run bench -- latency`: end-to-end delivery latency, from the client's startDelivery to the
 * first `status` query that shows the delivery CREATED, on the Temporal dev server and on the
 * Temporal cluster of `npm run cluster` (PostgreSQL, frontend, 2 history, 2 matching, worker
 * service), one after the other in one run, with the same workers, simulator and orders.
 *
 * Each target gets its own simulator (time scale LATENCY_BENCH_SCALE, so the provider's limits are
 * far above the pace), 2 worker processes, and LATENCY_BENCH_ORDERS orders started at a steady
 * LATENCY_BENCH_RATE per second, well under the limits: the figure is the system's latency, not a
 * queue's. Each order's status is polled every 20 ms.
 */
import { Client, Connection } from '@temporalio/client';
import { DeliveryClient } from '../client/delivery-client';
import { PROVIDER_RATE_LIMITS, type CallFamily, type RateLimit } from '../provider/limits';
import { createSimulator } from '../simulator/server';
import { deliveryRequest, destination } from '../test/fixtures/orders';
import type { DeliveryOrder } from '../contract/delivery-types';
import { startBenchCluster, startBenchServer } from './temporal';
import { round } from './limits-figures';
import { ENTRY, ProcessGroup, workflowBundleFile } from '../scripts/processes';

const num = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const SCALE = num('LATENCY_BENCH_SCALE', 60);
const ORDERS = num('LATENCY_BENCH_ORDERS', 100);
const RATE = num('LATENCY_BENCH_RATE', 4);
const TIME_LIMIT_MS = num('LATENCY_BENCH_TIME_LIMIT_MIN', 20) * 60_000;
const LIMITS: Record<CallFamily, RateLimit> = Object.fromEntries(
  Object.entries(PROVIDER_RATE_LIMITS).map(([f, l]) => [f, { limit: l.limit, windowMs: l.windowMs / SCALE }]),
) as Record<CallFamily, RateLimit>;

const progress = (line: string) => process.stderr.write(`[latency ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function order(target: string, n: number): DeliveryOrder {
  const { reference_number: _r, ...o } = deliveryRequest({ destinations: [destination(0, { location: { last_name: 'L', company: '', phone: '+4915112345600', address: `Latenzweg ${target}-${n}, 10115 Berlin` } })] });
  return o;
}

export function percentile(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

async function measure(label: string, address: string, namespace: string, bundle: string): Promise<number[]> {
  const sim = createSimulator({ timeScale: SCALE, onError: (m) => progress(`simulator: ${m}`) });
  const { url } = await sim.listen(0, '127.0.0.1');
  const taskQueue = `latency-${label}-${Date.now().toString(36)}`;
  const ms = (l: RateLimit) => `${l.limit}/${l.windowMs}ms`;
  const env = {
    TEMPORAL_ADDRESS: address,
    TEMPORAL_NAMESPACE: namespace,
    DELIVERY_TASK_QUEUE: taskQueue,
    DELIVERY_API_URL: url,
    DELIVERY_API_KEY: 'sandbox-key',
    PROVIDER_RATE_LIMITS: `creations=${ms(LIMITS.creations)},quotes=${ms(LIMITS.quotes)},other=${ms(LIMITS.other)}`,
    PROVIDER_LIMIT_MARGIN_MS: String(Math.round(250 / SCALE)),
    PROVIDER_QUOTE_MIN_REMAINING_MS: String(Math.round(60_000 / SCALE)),
    WORKER_WORKFLOW_BUNDLE: bundle,
  };
  const workers = new ProcessGroup({ maxOutputChars: 200_000 });
  const connection = await Connection.connect({ address });
  try {
    await Promise.all([1, 2].map((i) => workers.start({ name: `worker-${i}`, ...ENTRY.worker, env: { LOG_LEVEL: 'WARN', ...env } })));
    const client = new DeliveryClient({ temporal: new Client({ connection, namespace }), taskQueue });
    const latencies: number[] = [];
    const runs: Promise<void>[] = [];
    const stamp = Date.now().toString(36);
    for (let n = 0; n < ORDERS; n++) {
      const reference = `LAT-${label}-${stamp}-${n}`;
      runs.push(
        (async () => {
          const t0 = performance.now();
          await client.startDelivery(order(`${label}-${stamp}`, n), { reference });
          for (;;) {
            const s = await client.getStatus(reference).catch(() => undefined);
            if (s?.status === 'CREATED' || (s?.status && s.deliveryId)) break;
            if (performance.now() - t0 > 120_000) throw new Error(`${reference} was not CREATED within 120 s`);
            await sleep(20);
          }
          latencies.push(performance.now() - t0);
        })(),
      );
      await sleep(1000 / RATE);
    }
    await Promise.all(runs);
    progress(`${label}: p50 ${round(percentile(latencies, 50), 0)} ms, p99 ${round(percentile(latencies, 99), 0)} ms over ${latencies.length} orders`);
    return latencies;
  } finally {
    await workers.stopAll();
    await connection.close();
    await sim.close();
  }
}

export async function latencyBenchmark(): Promise<Record<string, number | string>> {
  const bundle = await workflowBundleFile();
  const figures: Record<string, number | string> = { orders: ORDERS, pace_per_s: RATE, scale: SCALE, worker_processes: 2 };
  {
    const { server, watchdog } = await startBenchServer(progress, TIME_LIMIT_MS);
    try {
      const l = await measure('dev', server.address, server.namespace, bundle);
      Object.assign(figures, { dev_server_p50_ms: round(percentile(l, 50), 0), dev_server_p99_ms: round(percentile(l, 99), 0) });
    } finally {
      clearTimeout(watchdog);
      await server.stop();
    }
  }
  {
    const { server, watchdog } = await startBenchCluster(progress, TIME_LIMIT_MS);
    try {
      const l = await measure('cluster', server.address, server.namespace, bundle);
      Object.assign(figures, { cluster_p50_ms: round(percentile(l, 50), 0), cluster_p99_ms: round(percentile(l, 99), 0) });
    } finally {
      clearTimeout(watchdog);
      await server.stop();
    }
  }
  return figures;
}
