/** npm run bench -- fleet: docs/benchmarks.md, "The fleet view's visibility queries". */
import { DEFAULT_ACCOUNT } from '../contract/accounts';
import { DeliveryStatus, DeliveryStatusSince } from '../contract/search-attributes';
import { FLEET_STATUSES, FleetView } from '../fleet/view';
import { parsePrometheusText } from '../test/helpers/prometheus';
import { benchSettings, pool, progressLog, waitFor, type BenchmarkOutput } from './measure';
import { withBenchStack } from './temporal';

const settings = benchSettings('FLEET');
const DELIVERIES = settings.num('DELIVERIES', 3_000);
const POLLS = settings.num('POLLS', 5);
const progress = progressLog('fleet');
/** Most of them in one status, so its list takes more than a page. */
const SHARES: Record<string, number> = { ASSIGNED: 0.7, PICKED_UP: 0.2, CREATED: 0.1 };
const PERIOD_S = 60;

export async function fleetBenchmark(): Promise<BenchmarkOutput> {
  return withBenchStack(progress, 15 * 60_000, {}, async (stack) => {
    const client = await stack.client();
    const taskQueue = `bench-fleet-${Date.now().toString(36)}`;
    const firstStart = Date.now();
    const items = Object.entries(SHARES).flatMap(([status, share]) => Array.from({ length: Math.round(DELIVERIES * share) }, (_, i) => ({ status, i, since: firstStart - ((i * 7919) % 3600) * 1000 })));
    await pool(items, 32, async ({ status, i, since }) => void (await client.workflow.start('delivery', { taskQueue, workflowId: `fleet-${taskQueue}-${status}-${i}`, args: [], typedSearchAttributes: [{ key: DeliveryStatus, value: status }, { key: DeliveryStatusSince, value: new Date(since) }] })));
    const oldest = (status: string) => Math.min(...items.filter((x) => x.status === status).map((x) => x.since)); // scattered: not the first started
    progress(`${items.length} open deliveries started in ${Math.round((Date.now() - firstStart) / 1000)} s`);
    const view = new FleetView({ client, namespace: stack.server.namespace, taskQueue, periodMs: PERIOD_S * 1000, accounts: () => [DEFAULT_ACCOUNT] });
    const metrics = async () => parsePrometheusText(await view.registry.metrics());
    await waitFor('visibility counts every start', 600_000, 500, async () => { // first, not measured
      const m = await (await view.poll(), metrics());
      return Object.entries(SHARES).every(([s, share]) => m.value('delivery_fleet_open', { account: 'default', status: s }) === Math.round(DELIVERIES * share));
    });
    const fresh = new FleetView({ client, namespace: stack.server.namespace, taskQueue, periodMs: PERIOD_S * 1000, accounts: () => [DEFAULT_ACCOUNT] });
    const pollMs: number[] = [];
    const knownAfter: Record<string, number> = {};
    for (let n = 1; n <= POLLS; n++) {
      const t = performance.now();
      await fresh.poll();
      pollMs.push(performance.now() - t);
      const m = parsePrometheusText(await fresh.registry.metrics());
      for (const s of Object.keys(SHARES)) if (!(s in knownAfter) && Math.abs(m.value('delivery_fleet_oldest_age_seconds', { account: 'default', status: s }) - (Date.now() - oldest(s)) / 1000) < 2) knownAfter[s] = n;
    }
    const m = parsePrometheusText(await fresh.registry.metrics());
    const [counts, lists, scans] = (['count', 'list', 'scan'] as const).map((kind) => m.value('delivery_fleet_visibility_queries_total', { kind })) as [number, number, number];
    const perStatusPer30s = (counts + lists) / FLEET_STATUSES.length / ((POLLS * PERIOD_S) / 30);
    const oldestAge = m.value('delivery_fleet_oldest_age_seconds', { account: 'default', status: 'ASSIGNED' });
    progress(`${POLLS} polls: ${counts} counts, ${lists} list pages, ${scans} scan pages; ${perStatusPer30s.toFixed(2)} count and list queries per status per 30 s at one poll per ${PERIOD_S} s`);
    return {
      ...{ open_deliveries: items.length, statuses: FLEET_STATUSES.length, polls: POLLS, period_s: PERIOD_S, count_queries_per_poll: counts / POLLS, list_queries_per_poll: lists / POLLS, scan_queries_per_poll: scans / POLLS },
      ...{ queries_per_status_per_30s: Math.round(perStatusPer30s * 100) / 100, poll_ms_max: Math.round(Math.max(...pollMs)) },
      ...Object.fromEntries(Object.keys(SHARES).map((s) => [`oldest_known_after_polls_${s.toLowerCase()}`, knownAfter[s] ?? -1])),
      oldest_assigned_age_error_s: Math.round(Math.abs(oldestAge - (Date.now() - oldest('ASSIGNED')) / 1000) * 10) / 10,
    };
  });
}
