/**
 * The stack as an operator watches it, every part real: the simulator, a worker process and a
 * bridge process (test/helpers/processes.ts) with their metrics on, the fleet view, and Debian's
 * Prometheus scraping them all with deploy/prometheus/prometheus.yml and alerts.yml.
 *
 * The scenario makes every panel of the Grafana dashboard (deploy/grafana/delivery-orchestrator.json)
 * move, for its account (`default`), and holds deliveries in flight while the queries run (the
 * simulator advances no status on its own): 8 deliveries against a gate of 4 creations per 10 min,
 * so 4 are created and 4 wait at the gate; of the created, two are taken to DELIVERED (they end),
 * one to ASSIGNED, one stays CREATED. Prometheus scrapes from before the first start. Half notify an endpoint that answers, half one that never
 * does (its attempts hold an activity slot until they time out and are retried). A workflow of a
 * type no worker knows makes workflow tasks fail. A second worker of the account, on a queue of
 * its own, holds a key the courier refuses: the account is paused (one 401). Every query of every panel, with `$account` set to
 * the scenario's account, must then return a series with a value above zero: a counter's
 * increase, a gauge above zero, a latency with samples. A metric renamed, a label dropped or a
 * panel pointing at a series no process exports fails it.
 */
import { Client } from '@temporalio/client';
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { DeliveryClient, DeliveryRefusedError } from '../../client/delivery-client';
import { DEFAULT_ACCOUNT } from '../../contract/accounts';
import { gateStatusQuery } from '../../contract/gate-messages';
import { gateWorkflowId } from '../../contract/workflow-ids';
import { connectClient } from '../../temporal/client-connection';
import { generateWebhookSecret } from '../../provider/webhook-signature';
import { ENTRY, removeWorkflowBundleFile, workflowBundleFile, type RunningProcess } from '../../scripts/processes';
import { freePort } from '../../scripts/temporal-dev-server';
import { deliveryRequest } from '../fixtures/orders';
import { DeliveryProcesses } from '../helpers/processes';
import { startReceiver, type Receiver } from '../helpers/notify-receiver';
import { testDeployment, testServerAddress } from '../helpers/temporal';
import { runBundleFile } from '../helpers/workflow-bundle';
import { eventually } from '../helpers/stack';
import { startTestPrometheus, type TestPrometheus } from '../helpers/test-prometheus';

jest.setTimeout(300_000);

interface Panel {
  title: string;
  type: string;
  targets?: { expr: string }[];
}
const DASHBOARD = JSON.parse(readFileSync(join(__dirname, '..', '..', 'deploy', 'grafana', 'delivery-orchestrator.json'), 'utf8')) as { panels: Panel[] };
const ACCOUNT = DEFAULT_ACCOUNT;
/**
 * Gauges that are above zero only for moments (a task slot is used for the milliseconds of a task,
 * or the 10 s of a hung notification attempt): their panel's query is read over the scenario's
 * last 5 minutes (a subquery at the scrape interval), every other one at the instant.
 */
const MOMENTARY = new Set(['Worker task slots used and available']);
/** Every query of the dashboard, with its variable set to the scenario's account. */
const QUERIES = DASHBOARD.panels.flatMap((p) =>
  (p.targets ?? []).map((t) => {
    const expr = t.expr.replaceAll('$account', ACCOUNT);
    return { panel: p.title, expr: MOMENTARY.has(p.title) ? `max_over_time((${expr})[5m:2s])` : expr };
  }),
);
const DELIVERIES = 8;
const SCRAPE_MS = 2_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** When the scenario had put everything in place: the fleet view's figures must be from a poll after it. */
let scenarioDoneAt = 0;
const CREATIONS_PER_WINDOW = 4;

let procs: DeliveryProcesses;
let receiver: Receiver;
let prometheus: TestPrometheus;
let temporalClient: Client;
const cleanups: (() => Promise<unknown> | unknown)[] = [];

const value = async (expr: string) => Number((await prometheus.query(expr))[0]?.value[1] ?? NaN);

/** An endpoint that takes the connection and never answers: each attempt waits out its timeout. */
async function startHungEndpoint(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    close: () =>
      new Promise((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

beforeAll(async () => {
  const { address, namespace } = testServerAddress();
  receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  const hung = await startHungEndpoint();
  cleanups.push(() => hung.close());
  const hungSecret = generateWebhookSecret();
  const ports = { sdk: await freePort(), revokedSdk: await freePort(), own: await freePort(), bridgeAdmin: await freePort(), fleet: await freePort() };
  procs = await DeliveryProcesses.start({
    temporalAddress: address,
    namespace,
    prefix: 'observe',
    workerEnv: {
      WORKER_METRICS_ADDRESS: `127.0.0.1:${ports.sdk}`,
      WORKER_DELIVERY_METRICS_ADDRESS: `127.0.0.1:${ports.own}`,
      DELIVERY_NOTIFY_ENDPOINTS: `orders=${receiver.url},hung=${hung.url}`,
      DELIVERY_NOTIFY_SECRETS: `orders=${receiver.secret},hung=${hungSecret}`,
      // 4 created at once, the other 4 wait at the gate for the next window: a backlog that lasts.
      PROVIDER_RATE_LIMITS: `creations=${CREATIONS_PER_WINDOW}/10m`,
    },
    bridgeEnv: { BRIDGE_ADMIN_PORT: String(ports.bridgeAdmin) },
  });
  cleanups.push(() => procs.stop());
  const connection = await connectClient({ address });
  cleanups.push(() => connection.close());
  temporalClient = new Client({ connection, namespace, dataConverter: procs.dataConverter() });
  // The fleet view and Prometheus from the start: every counter is scraped before the scenario moves it
  // (rate() takes a series' first sample as its start, not 0).
  const fleet: RunningProcess = await procs.group.start({ name: 'fleet', ...ENTRY.fleet, env: { ...procs.env, FLEET_METRICS_ADDRESS: `127.0.0.1:${ports.fleet}` } });
  cleanups.unshift(() => fleet.stop());

  prometheus = await startTestPrometheus(
    {
      'worker-sdk': [`127.0.0.1:${ports.sdk}`, `127.0.0.1:${ports.revokedSdk}`],
      worker: [`127.0.0.1:${ports.own}`],
      fleet: [`127.0.0.1:${ports.fleet}`],
      bridge: [`127.0.0.1:${ports.bridgeAdmin}`],
      temporal: [],
    },
    { interval: `${SCRAPE_MS / 1000}s` },
  );
  cleanups.unshift(() => prometheus.stop());
  const deliveries = new DeliveryClient({ temporal: temporalClient, taskQueue: procs.taskQueue, followUp: { endGraceMs: 0 } });
  const run = Date.now().toString(36).toUpperCase();
  // The account's second worker, whose key the courier refuses, and a delivery on its queue.
  const revokedQueue = `${procs.taskQueue}-revoked`;
  const revokedEnv = { ...procs.env, DELIVERY_TASK_QUEUE: revokedQueue, ...testDeployment(revokedQueue), DELIVERY_API_KEY: 'revoked-key', WORKER_METRICS_ADDRESS: `127.0.0.1:${ports.revokedSdk}` };
  const revoked = await procs.group.start({ name: 'worker-revoked', ...ENTRY.worker, env: { ...revokedEnv, WORKER_WORKFLOW_BUNDLE: runBundleFile(revokedEnv) ?? (await workflowBundleFile(revokedEnv)) } });
  cleanups.unshift(() => revoked.stop());
  await new DeliveryClient({ temporal: temporalClient, taskQueue: revokedQueue }).startDelivery(deliveryRequest(), { reference: `OBS-${run}-revoked` });
  // A start the check refuses (an endpoint the account does not have): a failed workflow, counted as refused too.
  await expect(deliveries.startDelivery(deliveryRequest(), { reference: `OBS-${run}-refused`, notify: { endpoint: 'nowhere' } })).rejects.toThrow(DeliveryRefusedError);
  // One start per scrape interval and more, so that each series a start makes is scraped before the next one moves it.
  for (let i = 0; i < DELIVERIES; i++) {
    await deliveries.startDelivery(deliveryRequest({}, 1 + (i % 3)), { reference: `OBS-${run}-${i}`, notify: { endpoint: i % 2 ? 'hung' : 'orders' } });
    await sleep(SCRAPE_MS + 500);
  }

  // The courier moves the created ones: two to their end, one a step on; the last stays where it is.
  const created = await eventually('4 deliveries created', async () => {
    const d = await procs.sim.deliveries();
    return d.length >= CREATIONS_PER_WINDOW ? d : undefined;
  });
  expect(created).toHaveLength(CREATIONS_PER_WINDOW);
  // Two end, the second once Prometheus has the completions' series (the SDK makes it at the first).
  const deliver = async (id: string) => {
    for (let r = await procs.sim.advance(id); r.status !== 'DELIVERED'; r = await procs.sim.advance(r.id));
  };
  // Those that notify `orders` (even references) end; one notifying the hung endpoint never would (its notifications wait).
  const notifiesOrders = (d: (typeof created)[number]) => Number(d.delivery.reference_number?.split('-').at(-1)) % 2 === 0;
  const [first, second] = created.filter(notifiesOrders);
  const [third] = created.filter((d) => d !== first && d !== second);
  expect([first, second, third].every(Boolean)).toBe(true);
  await deliver(first!.delivery.id);
  await eventually('the first completion scraped', async () => ((await prometheus.query('temporal_workflow_completed{workflow_type="delivery"}')).length > 0 ? true : undefined), 60_000);
  await deliver(second!.delivery.id);
  expect((await procs.sim.advance(third!.delivery.id)).status).toBe('ASSIGNED');

  // A workflow no worker has registered: its workflow task fails, and is retried, until terminated.
  const broken = await temporalClient.workflow.start('noSuchWorkflow', { taskQueue: procs.taskQueue, workflowId: `observe-broken-${run}`, args: [] });
  cleanups.unshift(() => broken.terminate('end of test').catch(() => undefined));

  // Everything in place, for the fleet view's next poll: the 4 others waiting at the gate, the
  // delivered ones ended, the courier's statuses in visibility.
  const gate = temporalClient.workflow.getHandle(gateWorkflowId(procs.taskQueue));
  await eventually('4 creations waiting at the gate', async () => ((await gate.query(gateStatusQuery)).waitingByFamily?.creations === DELIVERIES - CREATIONS_PER_WINDOW ? true : undefined));
  const count = async (q: string) => (await temporalClient.workflow.count(`WorkflowType="delivery" AND TaskQueue="${procs.taskQueue}" AND ${q}`)).count;
  const expected = { ended: 2, ASSIGNED: 1, CREATED: 1 };
  let seen = {};
  await eventually(
    'the statuses seen by visibility',
    async () => {
      seen = { ended: await count('ExecutionStatus!="Running"'), ASSIGNED: await count('ExecutionStatus="Running" AND DeliveryStatus="ASSIGNED"'), CREATED: await count('ExecutionStatus="Running" AND DeliveryStatus="CREATED"') };
      return JSON.stringify(seen) === JSON.stringify(expected) ? true : undefined;
    },
    60_000,
  ).catch(() => undefined);
  expect(seen).toEqual(expected);
  scenarioDoneAt = Date.now();
});

afterAll(async () => {
  for (const c of cleanups) await c();
  await removeWorkflowBundleFile();
});

describe('Prometheus scraping a running stack with deliveries in flight', () => {
  it("every query of every panel returns what the scenario made, for the scenario's account", async () => {
    expect(QUERIES.length).toBeGreaterThan(20);
    expect(QUERIES.filter((q) => /or\s+vector\(/.test(q.expr))).toEqual([]);
    // Rates need two samples, the fleet view a poll, the slow endpoint a timed-out attempt: wait for all, bounded.
    const missing = async () => {
      const out: string[] = [];
      for (const q of QUERIES) {
        const series = await prometheus.query(q.expr);
        if (!series.some((s) => Number(s.value[1]) > 0)) out.push(`panel "${q.panel}": ${q.expr} -> ${series.length ? series.map((s) => `${JSON.stringify(s.metric)} ${s.value[1]}`).join('; ') : 'no series'}`);
      }
      return out;
    };
    let last: string[] = [];
    await eventually(
      'every panel with data above zero',
      async () => {
        last = await missing();
        // The fleet view polls each minute: its figures must be from a poll after the scenario.
        const updated = Number((await prometheus.query('delivery_fleet_updated_timestamp_seconds'))[0]?.value[1] ?? 0);
        if (updated * 1000 <= scenarioDoneAt) last.push(`the fleet view has not polled since the scenario (last ${new Date(updated * 1000).toISOString()})`);
        return last.length === 0 ? true : undefined;
      },
      180_000,
    ).catch(() => undefined);
    expect(last).toEqual([]);
  });

  it('counts what happened: deliveries started, open by status, the gate backlog, provider calls, notifications', async () => {
    const acct = `account="${ACCOUNT}"`;
    expect(await value(`sum(delivery_deliveries_started_total{${acct}})`)).toBe(DELIVERIES);
    // 4 waiting for their creation (none), 1 CREATED, 1 ASSIGNED; the 2 DELIVERED have ended.
    expect(await value(`sum(delivery_fleet_open{${acct},status="none"})`)).toBe(DELIVERIES - CREATIONS_PER_WINDOW);
    expect(await value(`sum(delivery_fleet_open{${acct},status="CREATED"})`)).toBe(1);
    expect(await value(`sum(delivery_fleet_open{${acct},status="ASSIGNED"})`)).toBe(1);
    expect(await value(`sum(delivery_fleet_open{${acct}})`)).toBe(DELIVERIES - 2);
    expect(await value(`sum(delivery_gate_waiting{${acct},family="creations"})`)).toBe(DELIVERIES - CREATIONS_PER_WINDOW);
    expect(await value(`sum(delivery_gate_slots_limit{${acct},family="creations"})`)).toBe(CREATIONS_PER_WINDOW);
    expect(await value(`sum(delivery_provider_calls_total{${acct},family="creations",outcome="2xx"})`)).toBe(CREATIONS_PER_WINDOW);
    expect(await value(`sum(delivery_notifications_total{${acct},endpoint="orders",result="sent"})`)).toBeGreaterThanOrEqual(DELIVERIES / 2);
    expect(await value(`sum(delivery_notifications_total{${acct},endpoint="hung",result="sent"})`)).toBe(0);
  });

  it('evaluates every alert rule; those whose conditions the scenario met are pending, no other is active', async () => {
    const rules = await prometheus.rules();
    expect(rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError}`)).toEqual([]);
    // Failing workflow tasks (for: 5m) and most attempts to the hung endpoint failing (for: 10m):
    // pending, as the test is shorter than their `for`; every rule without a long `for` is quiet.
    const active = Object.fromEntries(rules.filter((r) => r.state !== 'inactive').map((r) => [r.name, r.state]));
    expect(active).toEqual({ WorkflowTaskFailures: 'pending', NotificationsFailing: 'pending' });
  });
});
