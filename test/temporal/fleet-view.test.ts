/**
 * The fleet view (fleet/view.ts) against the real dev server's visibility: open deliveries by
 * DeliveryStatus and account, the age of the oldest in each status since it entered it (not since
 * its start), the busiest accounts by id, and its query budget: the same queries a pass whatever
 * the number of accounts, at most 3 a status and the scan's pages. The deliveries are workflows of
 * type `delivery` started with their search attributes set, on a task queue no worker polls: they
 * stay open as started.
 */
import { DEFAULT_ACCOUNT } from '../../contract/accounts';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import type { Client, Connection, WorkflowHandle } from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import { DeliveryAccount, DeliveryStatus, DeliveryStatusSince } from '../../contract/search-attributes';
import { DEFAULT_SCAN_PAGES, FLEET_STATUSES, FleetView } from '../../fleet/view';
import { OTHER_ACCOUNTS } from '../../metrics/account';
import { parsePrometheusText } from '../helpers/prometheus';
import { testClient, testServerAddress, uniqueTaskQueue } from '../helpers/temporal';
import { eventually } from '../helpers/stack';

let client: Client;
let connection: Connection;
const started: WorkflowHandle[] = [];

beforeAll(async () => {
  ({ client, connection } = await testClient());
});

afterAll(async () => {
  await Promise.all(started.map((h) => h.terminate().catch(() => undefined)));
  await connection.close();
});

let seq = 0;
async function open(taskQueue: string, o: { status?: string; sinceAgoMs?: number; account?: string }): Promise<WorkflowHandle> {
  const attributes: SearchAttributePair[] = [];
  if (o.status) attributes.push({ key: DeliveryStatus, value: o.status }, { key: DeliveryStatusSince, value: new Date(Date.now() - (o.sinceAgoMs ?? 0)) });
  if (o.account) attributes.push({ key: DeliveryAccount, value: o.account });
  const handle = await client.workflow.start('delivery', { taskQueue, workflowId: deliveryWorkflowId(`F-${taskQueue}-${++seq}`, o.account ?? DEFAULT_ACCOUNT), args: [], typedSearchAttributes: attributes });
  started.push(handle);
  return handle;
}

type Metrics = ReturnType<typeof parsePrometheusText>;

/** Polls (each the same bounded set of queries) until the condition holds: visibility is eventually consistent. */
async function pollUntil(view: FleetView, what: string, ok: (m: Metrics) => boolean): Promise<number> {
  let polls = 0;
  await eventually(what, async () => {
    polls++;
    await view.poll();
    return ok(parsePrometheusText(await view.registry.metrics())) ? true : undefined;
  });
  return polls;
}

const metricsOf = async (view: FleetView) => parsePrometheusText(await view.registry.metrics());
const queries = (m: Metrics, kind?: string) => m.sum('delivery_fleet_visibility_queries_total', kind ? { kind } : {});

describe('the fleet view', () => {
  it('ages each status from when its oldest delivery entered it, not from its start, with a count and at most 2 list pages a status a pass', async () => {
    const taskQueue = uniqueTaskQueue('fleet');
    // Started first, but in PICKED_UP for 5 s only: not stuck. Started later, but ASSIGNED for 40 min.
    await open(taskQueue, { status: 'PICKED_UP', sinceAgoMs: 5_000 });
    await open(taskQueue, { status: 'ASSIGNED', sinceAgoMs: 40 * 60_000 });
    await open(taskQueue, { status: 'ASSIGNED', sinceAgoMs: 60_000 });
    const noneStart = Date.now();
    await open(taskQueue, {});
    const view = new FleetView({ client, namespace: testServerAddress().namespace, taskQueue, periodMs: 60_000, accounts: () => [DEFAULT_ACCOUNT] });
    const total = (m: Metrics, status: string) => m.value('delivery_fleet_status_open', { status });
    const polls = await pollUntil(view, 'every start visible', (m) => total(m, 'ASSIGNED') === 2 && total(m, 'PICKED_UP') === 1 && total(m, 'none') === 1 && m.value('delivery_fleet_open', { account: 'default', status: 'ASSIGNED' }) === 2);
    const m = await metricsOf(view);
    const age = (status: string) => m.sum('delivery_fleet_oldest_age_seconds', { status });
    expect(total(m, 'UPCOMING')).toBe(0);
    expect(m.value('delivery_fleet_open', { account: 'default', status: 'none' })).toBe(1);
    expect(m.value('delivery_fleet_oldest_age_seconds', { account: 'default', status: 'ASSIGNED' })).toBeGreaterThanOrEqual(40 * 60);
    expect(age('ASSIGNED')).toBeLessThan(40 * 60 + 60);
    expect(age('PICKED_UP')).toBeGreaterThanOrEqual(5);
    expect(age('PICKED_UP')).toBeLessThan(60);
    expect(age('none')).toBeLessThanOrEqual((Date.now() - noneStart) / 1000 + 1); // not created yet: since its start
    expect(age('UPCOMING')).toBe(0);
    // A count per status, a list page for each of the 3 with open deliveries, one scan page (4 deliveries).
    expect(queries(m, 'count')).toBe(polls * FLEET_STATUSES.length);
    expect(queries(m, 'list')).toBeLessThanOrEqual(polls * 3);
    expect(queries(m, 'scan')).toBe(polls);
  });

  it("finds a status's oldest among more than a page with a time bound, and the next oldest once it leaves", async () => {
    const taskQueue = uniqueTaskQueue('fleet-pages');
    // The oldest in ASSIGNED was started in the middle: a newest-first page of 2 does not hold it.
    const ages = [3, 7, 50, 9, 4, 2].map((min) => min * 60_000);
    const handles: WorkflowHandle[] = [];
    for (const sinceAgoMs of ages) handles.push(await open(taskQueue, { status: 'ASSIGNED', sinceAgoMs }));
    const view = new FleetView({ client, namespace: testServerAddress().namespace, taskQueue, periodMs: 60_000, pageSize: 2, accounts: () => [DEFAULT_ACCOUNT] });
    const age = (m: Metrics) => m.value('delivery_fleet_oldest_age_seconds', { account: 'default', status: 'ASSIGNED' });
    await pollUntil(view, 'the 50 min one found', (m) => m.value('delivery_fleet_status_open', { status: 'ASSIGNED' }) === 6 && age(m) >= 50 * 60);
    expect(age(await metricsOf(view))).toBeLessThan(51 * 60);
    // While the bound holds: the counts, one list page of the few older than it, and the scan's pages (6 by 2, at most 5 a pass).
    const before = await metricsOf(view);
    await view.poll();
    const after = await metricsOf(view);
    expect(queries(after, 'count') - queries(before, 'count')).toBe(FLEET_STATUSES.length);
    expect(queries(after, 'list') - queries(before, 'list')).toBe(1);
    expect(queries(after, 'scan') - queries(before, 'scan')).toBeLessThanOrEqual(DEFAULT_SCAN_PAGES);
    // The oldest leaves: the bound lists none, the view lists unbounded again and bounds again to find the 9 min one.
    await handles[2]!.terminate('moved on');
    await pollUntil(view, 'the next oldest found', (m) => m.value('delivery_fleet_status_open', { status: 'ASSIGNED' }) === 5 && age(m) >= 9 * 60 && age(m) < 10 * 60);
  });

  it('counts by account label (the first DELIVERY_METRICS_ACCOUNTS by name, the rest _other), names the busiest by id, with the same queries at 3 or 3,000 accounts', async () => {
    const taskQueue = uniqueTaskQueue('fleet-accounts');
    await open(taskQueue, { status: 'ASSIGNED', sinceAgoMs: 1_000 }); // default of 0.2.0: no DeliveryAccount, its account from its ID
    await open(taskQueue, { status: 'ASSIGNED', sinceAgoMs: 1_000, account: 'default' });
    await open(taskQueue, { status: 'ASSIGNED', sinceAgoMs: 1_000, account: 'acme' });
    await open(taskQueue, { status: 'CREATED', sinceAgoMs: 2 * 3600_000, account: 'acme' });
    for (let i = 0; i < 3; i++) await open(taskQueue, { status: 'CREATED', sinceAgoMs: 60_000, account: 'zeta' }); // beyond the named
    await open(taskQueue, { status: 'CREATED', sinceAgoMs: 60_000, account: 'removed' });
    const many = ['acme', 'default', 'zeta', ...Array.from({ length: 2_997 }, (_, i) => `shop-${i}`)];
    const view = new FleetView({ client, namespace: testServerAddress().namespace, taskQueue, periodMs: 60_000, accounts: () => ['acme', 'default', 'zeta'], namedAccounts: 2, busiest: 2 });
    const n = (m: Metrics, account: string, status: string) => m.value('delivery_fleet_open', { account, status });
    await pollUntil(view, 'every start visible', (m) => n(m, 'default', 'ASSIGNED') === 2 && n(m, 'acme', 'ASSIGNED') === 1 && n(m, 'acme', 'CREATED') === 1 && n(m, OTHER_ACCOUNTS, 'CREATED') === 4);
    const m = await metricsOf(view);
    expect(n(m, 'default', 'CREATED')).toBe(0);
    // Never a label beyond the named ones and _other: zeta and removed are _other.
    expect(new Set(m.samples.filter((s) => s.name === 'delivery_fleet_open').map((s) => s.labels.account))).toEqual(new Set(['acme', 'default', OTHER_ACCOUNTS]));
    // The busiest, by id whether named or not: zeta (3), then the tie of acme and default (2) by id.
    expect(m.samples.filter((s) => s.name === 'delivery_fleet_busiest_open').map((s) => [s.labels.account, s.value])).toEqual([
      ['zeta', 3],
      ['acme', 2],
    ]);
    // The oldest carries its delivery's account label.
    expect(m.value('delivery_fleet_oldest_age_seconds', { account: 'acme', status: 'CREATED' })).toBeGreaterThanOrEqual(2 * 3600);
    // A pass costs the same queries with 3,000 accounts in the registry as with 3.
    const perPass = async (accounts: string[]) => {
      const v = new FleetView({ client, namespace: testServerAddress().namespace, taskQueue, periodMs: 60_000, accounts: () => accounts, namedAccounts: 2 });
      await v.poll();
      return queries(await metricsOf(v));
    };
    const [few, lots] = [await perPass(['acme', 'default', 'zeta']), await perPass(many)];
    expect(lots).toBe(few);
    expect(lots).toBeLessThanOrEqual(3 * FLEET_STATUSES.length + DEFAULT_SCAN_PAGES);
  });

  it("asks the gate of an account with deliveries not created yet, and says when it cannot be asked, without failing the pass", async () => {
    const taskQueue = uniqueTaskQueue('fleet-no-gate');
    await open(taskQueue, { account: 'acme' });
    const view = new FleetView({ client, namespace: testServerAddress().namespace, taskQueue, periodMs: 60_000, accounts: () => ['acme'] });
    await pollUntil(view, 'the gate asked', (m) => m.value('delivery_fleet_poll_failures_total', { kind: 'gate' }) >= 1);
    const m = await metricsOf(view);
    expect(m.value('delivery_fleet_poll_failures_total', { kind: 'count' })).toBe(0);
    expect(m.sum('delivery_gate_waiting')).toBe(0);
  });
});
