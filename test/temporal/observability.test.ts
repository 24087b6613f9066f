/**
 * The stack as an operator watches it, every part real: the simulator, a worker process and a
 * bridge process (test/helpers/processes.ts) with their metrics on, the fleet view, and Debian's
 * Prometheus scraping them all with deploy/prometheus/prometheus.yml and alerts.yml. With
 * deliveries in flight (some notified to an endpoint), every PromQL query of every panel of the
 * Grafana dashboard (deploy/grafana/delivery-orchestrator.json) must succeed and return series,
 * every scrape target must be up, and the alert rules must load and stay quiet.
 */
import { Client } from '@temporalio/client';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeliveryClient } from '../../client/delivery-client';
import { connectClient } from '../../temporal/client-connection';
import { ENTRY, removeWorkflowBundleFile, type RunningProcess } from '../../scripts/processes';
import { findPrometheus, Prometheus } from '../../scripts/prometheus';
import { freePort } from '../../scripts/temporal-dev-server';
import { deliveryRequest } from '../fixtures/orders';
import { DeliveryProcesses } from '../helpers/processes';
import { startReceiver, type Receiver } from '../helpers/notify-receiver';
import { testServerAddress } from '../helpers/temporal';
import { eventually } from '../helpers/stack';

jest.setTimeout(240_000);

interface Panel {
  title: string;
  type: string;
  targets?: { expr: string }[];
}
const DASHBOARD = JSON.parse(readFileSync(join(__dirname, '..', '..', 'deploy', 'grafana', 'delivery-orchestrator.json'), 'utf8')) as { panels: Panel[] };
/** Every query of the dashboard, with its variable set as "All" would set it. */
const QUERIES = DASHBOARD.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr.replaceAll('$account', '.*') })));

let procs: DeliveryProcesses;
let receiver: Receiver;
let prometheus: Prometheus;
let promDir: string;
const cleanups: (() => Promise<unknown> | unknown)[] = [];

async function promQuery(url: string, expr: string): Promise<{ status: string; error?: string; data?: { result: unknown[] } }> {
  const res = await fetch(`${url}/api/v1/query?${new URLSearchParams({ query: expr })}`);
  return (await res.json()) as { status: string; error?: string; data?: { result: unknown[] } };
}

beforeAll(async () => {
  const { address, namespace } = testServerAddress();
  receiver = await startReceiver();
  cleanups.push(() => receiver.close());
  const ports = { sdk: await freePort(), own: await freePort(), bridgeAdmin: await freePort(), fleet: await freePort(), prometheus: await freePort() };
  procs = await DeliveryProcesses.start({
    temporalAddress: address,
    namespace,
    prefix: 'observe',
    // Statuses advance every 2 s: deliveries end while others are still open.
    simulatorEnv: { SIMULATOR_AUTO_ADVANCE_MS: '2000' },
    workerEnv: {
      WORKER_METRICS_ADDRESS: `127.0.0.1:${ports.sdk}`,
      WORKER_DELIVERY_METRICS_ADDRESS: `127.0.0.1:${ports.own}`,
      DELIVERY_NOTIFY_ENDPOINTS: `orders=${receiver.url}`,
      DELIVERY_NOTIFY_SECRETS: `orders=${receiver.secret}`,
    },
    bridgeEnv: { BRIDGE_ADMIN_PORT: String(ports.bridgeAdmin) },
  });
  cleanups.push(() => procs.stop());
  const connection = await connectClient({ address });
  cleanups.push(() => connection.close());
  const deliveries = new DeliveryClient({ temporal: new Client({ connection, namespace, dataConverter: procs.dataConverter() }), taskQueue: procs.taskQueue, followUp: { endGraceMs: 0 } });
  const run = Date.now().toString(36).toUpperCase();
  for (let i = 0; i < 6; i++) await deliveries.startDelivery(deliveryRequest({}, 1 + (i % 3)), { reference: `OBS-${run}-${i}`, notify: { endpoint: 'orders' } });

  // The fleet view after the starts: its first poll finds them open.
  const fleet: RunningProcess = await procs.group.start({ name: 'fleet', ...ENTRY.fleet, env: { ...procs.env, FLEET_METRICS_ADDRESS: `127.0.0.1:${ports.fleet}` } });
  cleanups.unshift(() => fleet.stop());

  promDir = mkdtempSync(join(tmpdir(), 'delivery-prometheus-'));
  prometheus = new Prometheus({
    binary: findPrometheus(),
    dir: promDir,
    port: ports.prometheus,
    interval: '2s',
    retention: '1h',
    targets: {
      'worker-sdk': [`127.0.0.1:${ports.sdk}`],
      worker: [`127.0.0.1:${ports.own}`],
      fleet: [`127.0.0.1:${ports.fleet}`],
      bridge: [`127.0.0.1:${ports.bridgeAdmin}`],
      temporal: [],
    },
  });
  await prometheus.start();
  cleanups.unshift(() => prometheus.stop());
});

afterAll(async () => {
  for (const c of cleanups) await c();
  if (promDir) rmSync(promDir, { recursive: true, force: true });
  await removeWorkflowBundleFile();
});

describe('Prometheus scraping a running stack', () => {
  it('scrapes every process of the stack', async () => {
    const up = await eventually(
      'every target up',
      async () => {
        const r = await promQuery(prometheus.url, 'up');
        const results = (r.data?.result ?? []) as { metric: { job: string }; value: [number, string] }[];
        const jobs = Object.fromEntries(results.map((s) => [s.metric.job, s.value[1]]));
        return ['worker-sdk', 'worker', 'fleet', 'bridge', 'prometheus'].every((j) => jobs[j] === '1') ? jobs : undefined;
      },
      60_000,
    );
    expect(up).toEqual({ 'worker-sdk': '1', worker: '1', fleet: '1', bridge: '1', prometheus: '1' });
  });

  it("every panel's query of the Grafana dashboard succeeds and returns series", async () => {
    expect(QUERIES.length).toBeGreaterThan(20);
    // Rates need two samples, histograms a task or call, the "ended" panel a delivery ended: wait for all, bounded.
    const empty = async () => {
      const failing: string[] = [];
      for (const q of QUERIES) {
        const r = await promQuery(prometheus.url, q.expr);
        if (r.status !== 'success') throw new Error(`panel "${q.panel}": ${q.expr} fails: ${r.error}`);
        if ((r.data?.result.length ?? 0) === 0) failing.push(`panel "${q.panel}": ${q.expr}`);
      }
      return failing;
    };
    let last: string[] = [];
    await eventually(
      'every panel with series',
      async () => {
        last = await empty();
        return last.length === 0 ? true : undefined;
      },
      150_000,
    ).catch(() => undefined);
    expect(last).toEqual([]);
  });

  it('counts what happened: provider calls, deliveries started, notifications sent, open deliveries by status', async () => {
    const value = async (expr: string) => Number(((await promQuery(prometheus.url, expr)).data?.result[0] as { value: [number, string] } | undefined)?.value[1] ?? NaN);
    expect(await value('sum(delivery_deliveries_started_total)')).toBe(6);
    expect(await value('sum(delivery_provider_calls_total{family="creations",outcome="2xx"})')).toBeGreaterThanOrEqual(6);
    expect(await value('sum(delivery_provider_calls_total{family="quotes",outcome="2xx"})')).toBeGreaterThanOrEqual(1);
    expect(await value('sum(delivery_notifications_total{endpoint="orders",result="sent"})')).toBeGreaterThanOrEqual(6);
    expect(await value('sum(delivery_fleet_open)')).toBeGreaterThanOrEqual(0);
    expect(await value('sum(delivery_gate_slots_limit{family="creations"})')).toBeGreaterThan(0);
  });

  it('loads every alert rule, and none fires on a healthy stack', async () => {
    const res = (await (await fetch(`${prometheus.url}/api/v1/rules`)).json()) as { data: { groups: { rules: { name: string; state: string; health: string }[] }[] } };
    const rules = res.data.groups.flatMap((g) => g.rules);
    expect(rules.length).toBeGreaterThanOrEqual(8);
    expect(rules.filter((r) => r.health !== 'ok' || r.state === 'firing').map((r) => `${r.name}: ${r.health} ${r.state}`)).toEqual([]);
  });
});
