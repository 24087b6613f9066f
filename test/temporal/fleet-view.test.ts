/**
 * The fleet view (fleet/view.ts) against the real dev server's visibility: open deliveries by
 * DeliveryStatus and account, the age of the oldest in each status since it entered it (not since
 * its start), and its query budget: at most one query per status per 30 s of the waits it asks
 * for, whatever the number of deliveries. The deliveries are workflows of type `delivery` started
 * with their search attributes set, on a task queue no worker polls: they stay open as started.
 */
import type { Client, Connection, WorkflowHandle } from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import { DeliveryAccount, DeliveryStatus, DeliveryStatusSince } from '../../contract/search-attributes';
import { FLEET_STATUSES, FleetView, OTHER_ACCOUNT, QUERY_SPACING_MS } from '../../fleet/view';
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
  const handle = await client.workflow.start('delivery', { taskQueue, workflowId: `fleet-${taskQueue}-${++seq}`, args: [], typedSearchAttributes: attributes });
  started.push(handle);
  return handle;
}

/** Polls (each the same bounded set of queries) until the condition holds: visibility is eventually consistent. */
async function pollUntil(view: FleetView, what: string, ok: (m: ReturnType<typeof parsePrometheusText>) => boolean): Promise<{ polls: number; waitedMs: number }> {
  let polls = 0;
  let waitedMs = 0;
  await eventually(what, async () => {
    polls++;
    waitedMs += await view.poll();
    return ok(parsePrometheusText(await view.registry.metrics())) ? true : undefined;
  });
  return { polls, waitedMs };
}

const queries = (m: ReturnType<typeof parsePrometheusText>) => m.sum('delivery_fleet_visibility_queries_total');

describe('the fleet view', () => {
  it('ages each status from when its oldest delivery entered it, not from its start, within one query per status per 30 s', async () => {
    const taskQueue = uniqueTaskQueue('fleet');
    // Started first, but in PICKED_UP for 5 s only: not stuck. Started later, but ASSIGNED for 40 min.
    await open(taskQueue, { status: 'PICKED_UP', sinceAgoMs: 5_000 });
    await open(taskQueue, { status: 'ASSIGNED', sinceAgoMs: 40 * 60_000 });
    await open(taskQueue, { status: 'ASSIGNED', sinceAgoMs: 60_000 });
    const noneStart = Date.now();
    await open(taskQueue, {});
    const view = new FleetView({ client, namespace: testServerAddress().namespace, taskQueue, periodMs: 60_000 });
    const open_ = (m: ReturnType<typeof parsePrometheusText>, status: string) => m.value('delivery_fleet_open', { account: 'default', status });
    const { polls, waitedMs } = await pollUntil(view, 'every start visible', (m) => open_(m, 'ASSIGNED') === 2 && open_(m, 'PICKED_UP') === 1 && open_(m, 'none') === 1);
    const m = parsePrometheusText(await view.registry.metrics());
    const age = (status: string) => m.value('delivery_fleet_oldest_age_seconds', { account: 'default', status });
    expect(open_(m, 'UPCOMING')).toBe(0);
    expect(age('ASSIGNED')).toBeGreaterThanOrEqual(40 * 60);
    expect(age('ASSIGNED')).toBeLessThan(40 * 60 + 60);
    expect(age('PICKED_UP')).toBeGreaterThanOrEqual(5);
    expect(age('PICKED_UP')).toBeLessThan(60);
    expect(age('none')).toBeLessThanOrEqual((Date.now() - noneStart) / 1000 + 1); // not created yet: since its start
    expect(age('UPCOMING')).toBe(0);
    // One account: a count per status, a list page for each of the 3 with open deliveries; the waits asked for keep the budget.
    expect(m.value('delivery_fleet_visibility_queries_total', { account: 'default', kind: 'count' })).toBe(polls * FLEET_STATUSES.length);
    expect(m.value('delivery_fleet_visibility_queries_total', { account: 'default', kind: 'list' })).toBeLessThanOrEqual(polls * 3);
    expect(queries(m) / FLEET_STATUSES.length / (waitedMs / QUERY_SPACING_MS)).toBeLessThanOrEqual(1);
  });

  it("finds a status's oldest among more than a page with a time bound, and the next oldest once it leaves", async () => {
    const taskQueue = uniqueTaskQueue('fleet-pages');
    // The oldest in ASSIGNED was started in the middle: a newest-first page of 2 does not hold it.
    const ages = [3, 7, 50, 9, 4, 2].map((min) => min * 60_000);
    const handles: WorkflowHandle[] = [];
    for (const sinceAgoMs of ages) handles.push(await open(taskQueue, { status: 'ASSIGNED', sinceAgoMs }));
    const view = new FleetView({ client, namespace: testServerAddress().namespace, taskQueue, periodMs: 60_000, pageSize: 2 });
    const age = (m: ReturnType<typeof parsePrometheusText>) => m.value('delivery_fleet_oldest_age_seconds', { account: 'default', status: 'ASSIGNED' });
    const first = await pollUntil(view, 'the 50 min one found', (m) => m.value('delivery_fleet_open', { account: 'default', status: 'ASSIGNED' }) === 6 && age(m) >= 50 * 60);
    expect(age(parsePrometheusText(await view.registry.metrics()))).toBeLessThan(51 * 60);
    // While the bound holds: the count and one list page of the few older than it.
    const before = queries(parsePrometheusText(await view.registry.metrics()));
    expect(await view.poll()).toBe(60_000);
    expect(queries(parsePrometheusText(await view.registry.metrics())) - before).toBe(FLEET_STATUSES.length + 1);
    // The oldest leaves: the bound lists none, the view lists unbounded again and bounds again to find the 9 min one.
    await handles[2]!.terminate('moved on');
    const second = await pollUntil(view, 'the next oldest found', (m) => m.value('delivery_fleet_open', { account: 'default', status: 'ASSIGNED' }) === 5 && age(m) >= 9 * 60 && age(m) < 10 * 60);
    const m = parsePrometheusText(await view.registry.metrics());
    expect(queries(m) / FLEET_STATUSES.length / ((first.waitedMs + 60_000 + second.waitedMs) / QUERY_SPACING_MS)).toBeLessThanOrEqual(1);
  });

  it('counts by account of the registry, (other) for one it does not list, and waits longer to keep the budget', async () => {
    const taskQueue = uniqueTaskQueue('fleet-accounts');
    await open(taskQueue, { status: 'ASSIGNED', sinceAgoMs: 1_000 }); // default, its DeliveryAccount not set yet
    await open(taskQueue, { status: 'ASSIGNED', sinceAgoMs: 1_000, account: 'default' });
    await open(taskQueue, { status: 'ASSIGNED', sinceAgoMs: 1_000, account: 'acme' });
    await open(taskQueue, { status: 'CREATED', sinceAgoMs: 2 * 3600_000, account: 'acme' });
    await open(taskQueue, { status: 'CREATED', sinceAgoMs: 60_000, account: 'removed' });
    const view = new FleetView({ client, namespace: testServerAddress().namespace, taskQueue, periodMs: 60_000, accounts: () => ['acme', 'default'] });
    const n = (m: ReturnType<typeof parsePrometheusText>, account: string, status: string) => m.value('delivery_fleet_open', { account, status });
    const { waitedMs } = await pollUntil(view, 'every start visible', (m) => n(m, 'default', 'ASSIGNED') === 2 && n(m, 'acme', 'ASSIGNED') === 1 && n(m, 'acme', 'CREATED') === 1 && n(m, OTHER_ACCOUNT, 'CREATED') === 1);
    const m = parsePrometheusText(await view.registry.metrics());
    expect(n(m, 'default', 'CREATED')).toBe(0);
    expect(m.sum('delivery_fleet_open', { account: 'removed' })).toBe(0); // never a label the registry does not hold
    // The oldest carries its delivery's account.
    expect(m.value('delivery_fleet_oldest_age_seconds', { account: 'acme', status: 'CREATED' })).toBeGreaterThanOrEqual(2 * 3600);
    // 1 + 2 counts and a list: 4 queries for a status, so the next poll waits 2 min, not 1.
    expect(m.value('delivery_fleet_period_seconds', { account: 'default' })).toBe(120);
    expect(queries(m) / FLEET_STATUSES.length / (waitedMs / QUERY_SPACING_MS)).toBeLessThanOrEqual(1);
  });

  it('says when the gate cannot be asked, without failing the poll', async () => {
    const view = new FleetView({ client, namespace: testServerAddress().namespace, taskQueue: uniqueTaskQueue('fleet-no-gate'), periodMs: 60_000 });
    await view.poll();
    const m = parsePrometheusText(await view.registry.metrics());
    expect(m.value('delivery_fleet_poll_failures_total', { account: 'default', kind: 'gate' })).toBe(1);
    expect(m.value('delivery_fleet_poll_failures_total', { account: 'default', kind: 'count' })).toBe(0);
    expect(m.sum('delivery_gate_waiting')).toBe(0);
  });
});
