/**
 * Long deliveries stay small: 100 destinations, each through every status (with duplicates),
 * an update and reconciliation, end correctly while every run's history stays under 2,000
 * events; the workflow continues as new carrying its whole state, timeline included.
 */
import type { Client, Connection } from '@temporalio/client';
import type { ProviderActivities } from '../../activities/provider-activities';
import { statusChangedSignal, statusQuery, updateDeliveryUpdate } from '../../contract/delivery-messages';
import { type DeliveryState, type DeliveryWorkflowInput, type StatusChange } from '../../contract/delivery-types';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { FakeProvider } from '../fixtures/fake-provider-activities';
import { deliveryRequest } from '../fixtures/orders';
import { testClient } from '../helpers/temporal';
import { startWorkers, type RunningWorkers } from '../helpers/workers';

const provider = new FakeProvider();
let client: Client;
let connection: Connection;
let workers: RunningWorkers;

beforeAll(async () => {
  ({ client, connection } = await testClient());
  workers = await startWorkers(provider.activities as ProviderActivities, { prefix: 'long' });
});
afterAll(async () => {
  await workers.stop();
  await connection.close();
});

it('a delivery of 100 destinations ends correctly, every run under 2,000 events', async () => {
  const reference = `LONG-${Date.now()}`;
  const { reference_number: _r, ...order } = deliveryRequest({}, 100);
  const input: DeliveryWorkflowInput = { reference, order, historyLimit: 300, followUp: { quietMs: 2_000, jitter: 0, endGraceMs: 0 } };
  const handle = await client.workflow.start('delivery', { taskQueue: workers.taskQueue, workflowId: deliveryWorkflowId(reference), args: [input] });

  let s: DeliveryState;
  for (;;) {
    s = await handle.query(statusQuery);
    if (s.phase === 'following') break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const send = (change: Omit<StatusChange, 'deliveryId' | 'source'>) => handle.signal(statusChangedSignal, { deliveryId: s.deliveryId!, source: 'webhook', ...change });
  let evt = 0;
  const event = () => `evt_long${++evt}`;

  await send({ status: 'ASSIGNED', eventId: event() });
  const updated = await handle.executeUpdate(updateDeliveryUpdate, { args: [{ destinations: [{ id: s.destinations[7]!.id, package_type: 'LARGE' }] }] });
  expect(updated.destinations[7]!.packageType).toBe('LARGE');
  await send({ status: 'UPCOMING', eventId: event() });
  await send({ status: 'PICKED_UP', eventId: event() });
  for (const d of s.destinations) {
    const id = event();
    await send({ destinationId: d.id, status: 'IN_TRANSIT', eventId: id });
    await send({ destinationId: d.id, status: 'IN_TRANSIT', eventId: id }); // a duplicate
  }
  // The last ten destinations' webhooks are lost; reconciliation must find them delivered.
  for (const d of s.destinations.slice(0, 90)) await send({ destinationId: d.id, status: 'DELIVERED', eventId: event() });
  const record = provider.deliveries.get(s.deliveryId!)!;
  record.status = 'DELIVERED';
  for (const d of record.destinations) d.status = 'DELIVERED';

  const result = (await handle.result()) as DeliveryState;
  expect(result.status).toBe('DELIVERED');
  expect(result.destinations.filter((d) => d.status === 'DELIVERED')).toHaveLength(100);
  expect(result.destinations[7]!.packageType).toBe('LARGE');
  // The timeline survived every run: all 100 destinations' steps, and the reconciled ones.
  const destinationSteps = result.timeline.filter((e) => e.subject !== 'delivery' && e.subject !== 'workflow' && e.status);
  expect(destinationSteps).toHaveLength(300); // PENDING, IN_TRANSIT, DELIVERED each
  expect(destinationSteps.filter((e) => e.source === 'reconciliation')).toHaveLength(10);

  // Walk the chain of runs through their histories (visibility may lag; histories do not).
  const runs: number[] = [];
  let runId: string | undefined = handle.firstExecutionRunId;
  while (runId) {
    type Event = { workflowExecutionContinuedAsNewEventAttributes?: { newExecutionRunId?: string | null } | null };
    const events: Event[] = (await client.workflow.getHandle(handle.workflowId, runId).fetchHistory()).events ?? [];
    runs.push(events.length);
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  expect(runs.length).toBeGreaterThanOrEqual(2);
  for (const length of runs) expect(length).toBeLessThan(2_000);
  expect(result.timeline.filter((e) => /continuing as new/.test(e.note ?? '')).length).toBe(runs.length - 1);
}, 120_000);
