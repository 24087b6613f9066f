/**
 * Accounts seen under their own name (metrics/account.ts), everything real: the registry file,
 * the dev server, the workers with one API client per account, the simulator with a key per
 * account, an order system's endpoint, the worker's /metrics over HTTP and the fleet view.
 * DELIVERY_METRICS_ACCOUNTS is 2 for a registry of 3: `alpha` and `beta` by name, `gamma` as
 * `_other` everywhere but the busiest-accounts gauge, which names it. `gamma` may create once a
 * minute: its second order waits at its gate, which the fleet view sees.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import { accountRegistryFromEnv, type AccountRegistry } from '../../accounts/registry';
import { providerClientsFor, type ProviderClients } from '../../accounts/provider-clients';
import { createProviderActivities } from '../../activities/provider-activities';
import { DeliveryClient, DeliveryRefusedError } from '../../client/delivery-client';
import { FleetView } from '../../fleet/view';
import { OTHER_ACCOUNTS } from '../../metrics/account';
import { serveMetrics, type MetricsListener } from '../../metrics/serve';
import { providerOutcome, WorkerMetrics } from '../../metrics/worker-metrics';
import { registryTargets } from '../../notifications/targets';
import type { Simulator } from '../../simulator/server';
import { accountsSimulator, writeAccountsFile } from '../helpers/account-stack';
import { deliveryRequest } from '../fixtures/orders';
import { startReceiver, type Receiver } from '../helpers/notify-receiver';
import { parsePrometheusText } from '../helpers/prometheus';
import { eventually } from '../helpers/stack';
import { testClient, testServerAddress } from '../helpers/temporal';
import { startWorkers, type RunningWorkers } from '../helpers/workers';

jest.setTimeout(120_000);

const IDS = ['alpha', 'beta', 'gamma'] as const;
let sim: Simulator;
let receiver: Receiver;
let registry: AccountRegistry;
let clients: ProviderClients;
let metrics: WorkerMetrics;
let listener: MetricsListener;
let workers: RunningWorkers;
let temporal: Client;
let connection: Connection;
let deliveries: DeliveryClient;
const started: string[] = [];

beforeAll(async () => {
  let dir: string;
  ({ sim, dir } = await accountsSimulator(Object.fromEntries(IDS.map((id) => [id, `key-${id}`])), 'account-metrics-'));
  receiver = await startReceiver();
  writeFileSync(join(dir, 'orders.secret'), receiver.secret);
  // Each account's own `orders` endpoint (here the same receiver): two accounts' endpoints, two series.
  const accounts = IDS.map((id) => ({ id, baseUrl: sim.url, apiKey: { file: `${id}.key` }, limits: id === 'gamma' ? 'creations=1/60s' : 'creations=20/60s', notify: { orders: { url: receiver.url, secrets: { file: 'orders.secret' } } } }));
  writeAccountsFile(dir, accounts);
  registry = accountRegistryFromEnv({ DELIVERY_ACCOUNTS_FILE: join(dir, 'accounts.json') });
  // As worker/main.ts wires them.
  metrics = new WorkerMetrics({ ids: () => registry.ids(), endpointsOf: (id) => registryTargets(registry).names(id) }, { namedAccounts: 2 });
  clients = providerClientsFor(registry, { timeoutMs: 5_000, onCall: ({ account, family, status, seconds }) => metrics.providerCall({ account, family, outcome: providerOutcome(status), seconds }) });
  listener = await serveMetrics(metrics.registry, '127.0.0.1:0');
  workers = await startWorkers(createProviderActivities((account) => clients.forAccount(account), { accountLabel: (a) => metrics.labels.of(a) }), { prefix: 'account-metrics', accounts: registry, metrics });
  ({ client: temporal, connection } = await testClient());
  deliveries = new DeliveryClient({ temporal, taskQueue: workers.taskQueue, followUp: { endGraceMs: 0 } });
});

afterAll(async () => {
  await Promise.all(started.map((id) => temporal.workflow.getHandle(id).terminate('test over').catch(() => undefined)));
  await workers?.stop();
  await clients?.close();
  registry?.close();
  await listener?.close();
  await connection?.close();
  await receiver?.close();
  await sim?.close();
});

async function start(reference: string, account: string): Promise<void> {
  const { reference_number: _r, ...order } = deliveryRequest({ is_food: false });
  started.push((await deliveries.startDelivery(order, { reference, account, notify: { endpoint: 'orders' } })).workflowId);
}

/** The worker's /metrics, read over HTTP as Prometheus reads it. */
async function scrape() {
  return parsePrometheusText(await (await fetch(listener.url)).text());
}

const accountValues = (m: ReturnType<typeof parsePrometheusText>, prefix: string) => new Set(m.samples.filter((s) => s.name.startsWith(prefix) && s.labels.account !== undefined).map((s) => s.labels.account));

test("two accounts' deliveries are two label values on the worker's /metrics and the fleet view's; an account beyond DELIVERY_METRICS_ACCOUNTS is _other; its gate's backlog is seen", async () => {
  const run = Date.now().toString(36);
  await start(`A-${run}`, 'alpha');
  await start(`B-${run}`, 'beta');
  await start(`G1-${run}`, 'gamma');
  await start(`G2-${run}`, 'gamma'); // waits a minute at gamma's gate

  const m = await eventually('three deliveries created and notified', async () => {
    const now = await scrape();
    const created = (account: string) => now.value('delivery_provider_calls_total', { account, family: 'creations', outcome: '2xx' });
    return created('alpha') >= 1 && created('beta') >= 1 && created(OTHER_ACCOUNTS) >= 1 && now.sum('delivery_notifications_total', { result: 'sent' }) >= 3 ? now : undefined;
  });
  const creations = Object.fromEntries(['alpha', 'beta', OTHER_ACCOUNTS].map((account) => [account, m.value('delivery_provider_calls_total', { account, family: 'creations', outcome: '2xx' })]));
  expect(creations).toEqual({ alpha: 1, beta: 1, [OTHER_ACCOUNTS]: 1 }); // gamma's second waits at its gate
  for (const [account, n] of [['alpha', 1], ['beta', 1], [OTHER_ACCOUNTS, 2]] as const) expect(m.value('delivery_deliveries_started_total', { account })).toBe(n);
  // Two accounts' `orders` endpoints: two series, each with its account's notification.
  expect(m.sum('delivery_notifications_total', { account: 'alpha', target: 'endpoint', endpoint: 'orders', result: 'sent' })).toBeGreaterThanOrEqual(1);
  expect(m.sum('delivery_notifications_total', { account: 'beta', target: 'endpoint', endpoint: 'orders', result: 'sent' })).toBeGreaterThanOrEqual(1);
  expect(accountValues(m, 'delivery_')).toEqual(new Set(['alpha', 'beta', OTHER_ACCOUNTS])); // never `gamma`, never `default`

  const view = new FleetView({ client: temporal, namespace: testServerAddress().namespace, taskQueue: workers.taskQueue, periodMs: 60_000, accounts: () => registry.ids(), namedAccounts: 2 });
  const fleet = await eventually('the fleet view sees every account and gamma waiting at its gate', async () => {
    await view.poll();
    const f = parsePrometheusText(await view.registry.metrics());
    const open = (account: string) => f.sum('delivery_fleet_open', { account });
    return open('alpha') === 1 && open('beta') === 1 && open(OTHER_ACCOUNTS) === 2 && f.value('delivery_fleet_open', { account: OTHER_ACCOUNTS, status: 'none' }) === 1 && f.value('delivery_gate_waiting', { account: OTHER_ACCOUNTS, family: 'creations' }) === 1 ? f : undefined;
  });
  expect(accountValues(fleet, 'delivery_fleet_open')).toEqual(new Set(['alpha', 'beta', OTHER_ACCOUNTS]));
  expect(fleet.value('delivery_gate_oldest_wait_seconds', { account: OTHER_ACCOUNTS, family: 'creations' })).toBeGreaterThan(0);
  expect(fleet.value('delivery_gate_slots_limit', { account: OTHER_ACCOUNTS, family: 'creations' })).toBe(1); // gamma's own limit
  // The busiest accounts by id, gamma included: the one place an unnamed account is named.
  expect(fleet.value('delivery_fleet_busiest_open', { account: 'gamma' })).toBe(2);

  // A start the check refuses (an account nobody serves) is counted apart from the failed workflow it also is.
  const { reference_number: _r, ...order } = deliveryRequest({ is_food: false });
  await expect(deliveries.startDelivery(order, { reference: `N-${run}`, account: 'nobody' })).rejects.toThrow(DeliveryRefusedError);
  const refused = await scrape();
  expect(['alpha', 'beta', OTHER_ACCOUNTS].map((account) => refused.value('delivery_starts_refused_total', { account }))).toEqual([0, 0, 1]);
});
