/**
 * The fleet view (fleet/view.ts) against the real dev server's visibility: open deliveries by
 * DeliveryStatus and the age of the oldest in each, and its query budget: per poll, one count
 * per status and one list page per status with open deliveries, whatever their number. The
 * deliveries are workflows of type `delivery` started with their DeliveryStatus set, on a task
 * queue no worker polls: they stay open exactly as started.
 */
import type { Client, Connection } from '@temporalio/client';
import { DeliveryStatus } from '../../contract/search-attributes';
import { FLEET_STATUSES, FleetView } from '../../fleet/view';
import { parsePrometheusText } from '../helpers/prometheus';
import { testClient, testServerAddress, uniqueTaskQueue } from '../helpers/temporal';
import { eventually } from '../helpers/stack';

let client: Client;
let connection: Connection;
const started: { terminate(): Promise<unknown> }[] = [];

beforeAll(async () => {
  ({ client, connection } = await testClient());
});

afterAll(async () => {
  await Promise.all(started.map((h) => h.terminate().catch(() => undefined)));
  await connection.close();
});

async function open(taskQueue: string, status: string | undefined, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const handle = await client.workflow.start('delivery', {
      taskQueue,
      workflowId: `fleet-${taskQueue}-${status ?? 'none'}-${i}`,
      args: [],
      typedSearchAttributes: status ? [{ key: DeliveryStatus, value: status }] : [],
    });
    started.push(handle);
  }
}

describe('the fleet view', () => {
  it('counts open deliveries by status and ages the oldest in each, within one query per status per 30 s', async () => {
    const taskQueue = uniqueTaskQueue('fleet');
    const firstStart = Date.now();
    await open(taskQueue, 'ASSIGNED', 3);
    await open(taskQueue, 'PICKED_UP', 2);
    await open(taskQueue, undefined, 1);
    const view = new FleetView({ client, namespace: testServerAddress().namespace, taskQueue, periodMs: 60_000 });
    const metrics = async () => parsePrometheusText(await view.registry.metrics());
    // Visibility is eventually consistent: poll until it has every start (each poll is the same bounded set of queries).
    let polls = 0;
    await eventually('every start visible', async () => {
      polls++;
      await view.poll();
      const m = await metrics();
      return m.value('delivery_fleet_open', { account: 'default', status: 'ASSIGNED' }) === 3 && m.value('delivery_fleet_open', { account: 'default', status: 'PICKED_UP' }) === 2 && m.value('delivery_fleet_open', { account: 'default', status: 'none' }) === 1 ? true : undefined;
    });
    const m = await metrics();
    expect(m.value('delivery_fleet_open', { account: 'default', status: 'UPCOMING' })).toBe(0);
    const age = (status: string) => m.value('delivery_fleet_oldest_age_seconds', { account: 'default', status });
    const upper = (Date.now() - firstStart) / 1000 + 1;
    expect(age('ASSIGNED')).toBeGreaterThan(0);
    expect(age('ASSIGNED')).toBeLessThanOrEqual(upper);
    expect(age('ASSIGNED')).toBeGreaterThanOrEqual(age('PICKED_UP')); // started first
    expect(age('UPCOMING')).toBe(0);

    // The budget: per poll a count per status, and a list page only for the 3 statuses with open deliveries.
    const counts = m.value('delivery_fleet_visibility_queries_total', { account: 'default', kind: 'count' });
    const lists = m.value('delivery_fleet_visibility_queries_total', { account: 'default', kind: 'list' });
    expect(counts).toBe(polls * FLEET_STATUSES.length);
    expect(lists).toBeLessThanOrEqual(polls * 3);
    // At the shortest period (60 s): at most 2 queries per status, so one per status per 30 s.
    expect((counts + lists) / polls / FLEET_STATUSES.length).toBeLessThanOrEqual(2);
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
