/** npm run bench -- latency: docs/benchmarks.md, "On the Temporal cluster". */
import { DeliveryClient } from '../client/delivery-client';
import { deliveryRequest, destination } from '../test/fixtures/orders';
import { rateLimitsEnv, scaledLimits, withBenchStack } from './temporal';
import { benchSettings, openLoop, p50p99, progressLog, waitFor } from './measure';

const { num } = benchSettings('LATENCY');
const SCALE = num('SCALE', 60);
const ORDERS = num('ORDERS', 100);
const RATE = num('RATE', 4);
const TIME_LIMIT_MS = num('TIME_LIMIT_MIN', 20) * 60_000;
const progress = progressLog('latency');

export async function latencyBenchmark(): Promise<Record<string, number | string>> {
  const figures: Record<string, number | string> = { orders: ORDERS, pace_per_s: RATE, scale: SCALE, worker_processes: 2 };
  for (const label of ['dev_server', 'cluster'] as const) {
    await withBenchStack(progress, TIME_LIMIT_MS, { cluster: label === 'cluster' }, async (stack) => {
      const { url } = await stack.simulator({ timeScale: SCALE });
      const taskQueue = `latency-${label}-${Date.now().toString(36)}`;
      const env = { LOG_LEVEL: 'WARN', DELIVERY_TASK_QUEUE: taskQueue, PROVIDER_RATE_LIMITS: rateLimitsEnv(scaledLimits(SCALE)), PROVIDER_QUOTE_MIN_REMAINING_MS: String(Math.round(60_000 / SCALE)), WORKER_WORKFLOW_BUNDLE: await stack.bundle() };
      await Promise.all([1, 2].map((i) => stack.start('worker', url, env, { name: `worker-${i}`, inherit: true })));
      const client = new DeliveryClient({ temporal: await stack.client(), taskQueue });
      const references = Array.from({ length: ORDERS }, (_, n) => `${taskQueue}-${n}`);
      const latencies = await openLoop(references, RATE, async (reference) => {
        const order = deliveryRequest({ destinations: [destination(0, { location: { ...destination(0).location, last_name: 'L', address: `Latenzweg ${reference}, 10115 Berlin` } })] });
        await client.startDelivery(order, { reference });
        await waitFor(`${reference} CREATED`, 120_000, 20, async () => (await client.getStatus(reference).catch(() => undefined))?.deliveryId);
      });
      Object.assign(figures, p50p99(label, latencies, 0));
      progress(`${label}: ${JSON.stringify(p50p99(label, latencies, 0))} over ${latencies.length} orders`);
    });
  }
  return figures;
}
