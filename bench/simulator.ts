/**
 * Simulator throughput: creations and key checks per second through the real API client, with
 * a fixed number of callers, for a fixed number of calls. The rate limits are raised for this
 * run only (the figure is about the server, not about the provider's limits).
 */
import { ProviderClient } from '../provider/client';
import { createSimulator } from '../simulator/server';
import { deliveryRequest } from '../test/fixtures/orders';

const CALLERS = 64;
const CALLS = 5_000;

async function timed(calls: number, one: (i: number) => Promise<unknown>): Promise<{ perSecond: number; p99Ms: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (next < calls) {
        const i = next++;
        const t = performance.now();
        await one(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return { perSecond: Math.round(calls / seconds), p99Ms: Number(latencies[Math.floor(latencies.length * 0.99)]!.toFixed(2)) };
}

export async function simulatorBenchmark(): Promise<Record<string, number | string>> {
  const big = { limit: 1_000_000 };
  const sim = createSimulator({ rateLimits: { creations: big, quotes: big, other: big } });
  const { url } = await sim.listen(0, '127.0.0.1');
  const client = new ProviderClient({ baseUrl: url, apiKey: 'sandbox-key', connections: CALLERS });
  try {
    const body = deliveryRequest({}, 3);
    process.stderr.write(`creating ${CALLS} deliveries with ${CALLERS} callers...\n`);
    const creations = await timed(CALLS, (i) => client.createDelivery(body, { idempotencyKey: `bench-${i}` }));
    process.stderr.write(`checking the key ${CALLS} times...\n`);
    const checks = await timed(CALLS, () => client.checkKey());
    return {
      callers: CALLERS,
      calls: CALLS,
      creations_per_second: creations.perSecond,
      creation_p99_ms: creations.p99Ms,
      key_checks_per_second: checks.perSecond,
      key_check_p99_ms: checks.p99Ms,
    };
  } finally {
    await client.close();
    await sim.close();
  }
}
