/** npm run bench -- simulator: docs/benchmarks.md, "Simulator"; limits raised: the figure is about the server, not the provider's limits. */
import { ProviderClient } from '../provider/client';
import { createSimulator } from '../simulator/server';
import { deliveryRequest } from '../test/fixtures/orders';
import { benchSettings, percentile, pool } from './measure';
import { ROOMY_LIMITS } from './temporal';

const CALLERS = 64;
const CALLS = benchSettings('SIMULATOR').num('CALLS', 5_000);

async function timed(one: (i: number) => Promise<unknown>): Promise<{ perSecond: number; p99Ms: number }> {
  const latencies: number[] = [];
  const perSecond = await pool([...Array(CALLS).keys()], CALLERS, async (i) => {
    const t = performance.now();
    await one(i);
    latencies.push(performance.now() - t);
  });
  return { perSecond: Math.round(perSecond), p99Ms: percentile(latencies.sort((a, b) => a - b), 0.99) };
}

export async function simulatorBenchmark(): Promise<Record<string, number | string>> {
  const sim = createSimulator({ rateLimits: ROOMY_LIMITS });
  const client = new ProviderClient({ baseUrl: (await sim.listen(0, '127.0.0.1')).url, apiKey: 'sandbox-key', connections: CALLERS });
  try {
    const body = deliveryRequest({}, 3);
    process.stderr.write(`creating ${CALLS} deliveries, then checking the key ${CALLS} times, with ${CALLERS} callers...\n`);
    const creations = await timed((i) => client.createDelivery(body, { idempotencyKey: `bench-${i}` }));
    const checks = await timed(() => client.checkKey());
    return { callers: CALLERS, calls: CALLS, creations_per_second: creations.perSecond, creation_p99_ms: creations.p99Ms, key_checks_per_second: checks.perSecond, key_check_p99_ms: checks.p99Ms };
  } finally {
    await client.close();
    await sim.close();
  }
}
