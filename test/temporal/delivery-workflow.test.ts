/**
 * The delivery workflow on a real dev server, with mocked provider activities: each step,
 * duplicates and regressions, every cancellation timing, update rules and the price guard.
 */
import { WorkflowFailedError, WorkflowUpdateFailedError, type Client, type Connection, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { CreateDeliveryInput, ProviderActivities } from '../../activities/provider-activities';
import { approveQuoteUpdate, rejectQuoteUpdate, statusChangedSignal, statusQuery, updateDeliveryUpdate } from '../../contract/delivery-messages';
import { type DeliveryState, type DeliveryWorkflowInput, type StatusChange } from '../../contract/delivery-types';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { gateWorkflowId } from '../../contract/workflow-ids';
import { deliveryRequest } from '../fixtures/orders';
import { FakeProvider, Gate } from '../fixtures/fake-provider-activities';
import { recordHistories } from '../helpers/histories';
import { testClient, uniqueTaskQueue } from '../helpers/temporal';
import { startWorkers, type RunningWorkers } from '../helpers/workers';
import { rejectionOf } from '../helpers/rejection';
import { eventually } from '../helpers/stack';

let provider: FakeProvider;
const forwarding = Object.fromEntries(
  (['quoteDelivery', 'createDelivery', 'quoteInGate', 'createInGate', 'getDelivery', 'updateDelivery', 'cancelDelivery'] as const).map((name) => [
    name,
    (...args: unknown[]) => (provider.activities[name] as (...a: unknown[]) => Promise<unknown>)(...args),
  ]),
) as unknown as ProviderActivities;

let client: Client;
let connection: Connection;
let workers: RunningWorkers;
let seq = 0;
/** Workflows started by the current test; with RECORD_HISTORIES=1 their histories are saved for the replay test. */
let started: WorkflowHandle[] = [];

beforeAll(async () => {
  ({ client, connection } = await testClient());
  workers = await startWorkers(forwarding, { prefix: 'wf' });
});
afterAll(async () => {
  // The pacing gate these deliveries used is recorded too (a partial history: it runs on).
  if (process.env.RECORD_HISTORIES) await recordHistories(process.env.RECORD_HISTORIES, 'pacing gate', [client.workflow.getHandle(gateWorkflowId(workers.taskQueue))]);
  await workers.stop();
  await connection.close();
});
beforeEach(() => {
  provider = new FakeProvider();
  started = [];
});
afterEach(async () => {
  if (process.env.RECORD_HISTORIES) await recordHistories(process.env.RECORD_HISTORIES, expect.getState().currentTestName ?? 'unnamed', started);
});

async function start(overrides: Partial<DeliveryWorkflowInput> = {}, destinations = 2): Promise<WorkflowHandle> {
  const reference = `T-${Date.now()}-${++seq}`;
  const { reference_number: _r, ...order } = deliveryRequest({}, destinations);
  // Inputs of its own: identical orders share one quote while it is valid, and tests set prices.
  order.pickup_location = { ...order.pickup_location, comment: `test order ${reference}` };
  const handle = await client.workflow.start('delivery', {
    taskQueue: workers.taskQueue,
    workflowId: deliveryWorkflowId(reference),
    // No grace after the end unless a test asks for one (tests wait for results).
    args: [{ reference, order, ...overrides, followUp: { endGraceMs: 0, ...overrides.followUp } } satisfies DeliveryWorkflowInput],
  });
  started.push(handle);
  return handle;
}

async function until(handle: WorkflowHandle, check: (s: DeliveryState) => boolean, what: string): Promise<DeliveryState> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const s = await handle.query(statusQuery);
    if (check(s)) return s;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; state: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const following = (h: WorkflowHandle) => until(h, (s) => s.phase === 'following', 'the following phase');

function change(s: DeliveryState, status: string, extra: Partial<StatusChange> = {}): StatusChange {
  return { deliveryId: s.deliveryId!, status, source: 'webhook', ...extra };
}

describe('the delivery workflow', () => {
  it('quotes, creates with a key derived from the workflow id, follows every change and returns the final record', async () => {
    const handle = await start();
    const s = await following(handle);
    const created = provider.callsTo('createDelivery')[0]!.args[0] as CreateDeliveryInput;
    expect(created.idempotencyKey).toBe(handle.workflowId);
    expect(created.request.reference_number).toBe(s.reference);
    expect(s.quote?.price.amount).toBe(1250);

    for (const status of ['ASSIGNED', 'UPCOMING', 'PICKED_UP']) await handle.signal(statusChangedSignal, change(s, status));
    for (const d of s.destinations) {
      await handle.signal(statusChangedSignal, change(s, 'IN_TRANSIT', { destinationId: d.id }));
      await handle.signal(statusChangedSignal, change(s, 'DELIVERED', { destinationId: d.id }));
    }
    await handle.signal(statusChangedSignal, change(s, 'DELIVERED'));
    const result = (await handle.result()) as DeliveryState;

    expect(result.status).toBe('DELIVERED');
    expect(result.phase).toBe('ended');
    expect(result.destinations.map((d) => [d.status, d.trackingUrl])).toEqual(s.destinations.map((d) => ['DELIVERED', d.trackingUrl]));
    expect(result.price).toEqual({ amount: 1250, currency: 'EUR' });
    const deliveryTimeline = result.timeline.filter((e) => e.subject === 'delivery').map((e) => e.status);
    expect(deliveryTimeline).toEqual(['CREATED', 'ASSIGNED', 'UPCOMING', 'PICKED_UP', 'DELIVERED']);
    expect(result.timeline.every((e) => !Number.isNaN(Date.parse(e.at)))).toBe(true);
  });

  it('checks with the provider when the delivery ends while destinations are still open', async () => {
    const handle = await start({}, 1);
    const s = await following(handle);
    provider.deliverAll(s.deliveryId!);
    // The delivery's own event overtook its destination's, which is still on its way.
    await handle.signal(statusChangedSignal, change(s, 'DELIVERED'));
    const result = (await handle.result()) as DeliveryState;
    expect(result.destinations[0]!.status).toBe('DELIVERED');
    expect(result.timeline.find((e) => e.subject === s.destinations[0]!.id && e.status === 'DELIVERED')?.source).toBe('reconciliation');
  });

  it('ignores duplicates, keeps an overtaken status as late without moving back, and keeps an unknown status', async () => {
    const handle = await start({}, 1);
    const s = await following(handle);
    const steps = (x: DeliveryState) => x.timeline.filter((e) => e.subject === 'delivery').map((e) => `${e.status}${e.late ? ' (late)' : ''}`);
    await handle.signal(statusChangedSignal, change(s, 'UPCOMING', { eventId: 'evt_1' }));
    await handle.signal(statusChangedSignal, change(s, 'UPCOMING', { eventId: 'evt_1' }));
    await handle.signal(statusChangedSignal, change(s, 'ASSIGNED', { eventId: 'evt_0' })); // arrived late
    await handle.signal(statusChangedSignal, change(s, 'HELD_AT_DEPOT', { eventId: 'evt_2' })); // a future status
    const held = await until(handle, (x) => x.status === 'HELD_AT_DEPOT', 'the unknown status');
    expect(steps(held)).toEqual(['CREATED', 'UPCOMING', 'ASSIGNED (late)', 'HELD_AT_DEPOT']);

    await handle.signal(statusChangedSignal, change(s, 'CREATED', { eventId: 'evt_3' })); // known already, from the creation's record
    await handle.signal(statusChangedSignal, change(s, 'CANCELED', { eventId: 'evt_4' }));
    const result = (await handle.result()) as DeliveryState;
    expect(result.status).toBe('CANCELED');
    expect(steps(result)).toEqual(['CREATED', 'UPCOMING', 'ASSIGNED (late)', 'HELD_AT_DEPOT', 'CANCELED']);
  });

  it('applies a webhook that arrives while the creation call is still in flight', async () => {
    provider.gates.createDelivery = new Gate();
    const handle = await start({}, 1);
    await provider.gates.createDelivery.entered; // the gate creates right after the quote: the order hears of both at once
    // The provider has made the delivery and already reports it assigned; our call has not returned.
    await handle.signal(statusChangedSignal, { deliveryId: 'del_fake1', status: 'ASSIGNED', source: 'webhook', eventId: 'evt_early' });
    provider.gates.createDelivery.open();
    const s = await until(handle, (x) => x.status === 'ASSIGNED', 'the early webhook applied');
    expect(s.deliveryId).toBe('del_fake1');
    await handle.terminate('test done');
  });

  describe('search attributes', () => {
    /** The keys of each search-attribute upsert in the history: each one is a billed action on Temporal Cloud. */
    async function upserts(handle: WorkflowHandle): Promise<string[][]> {
      const { events } = await handle.fetchHistory();
      return (events ?? []).flatMap((e) => (e.upsertWorkflowSearchAttributesEventAttributes ? [Object.keys(e.upsertWorkflowSearchAttributesEventAttributes.searchAttributes?.indexedFields ?? {}).sort()] : []));
    }
    const searchAttributes = async (handle: WorkflowHandle) => Object.fromEntries((await handle.describe()).typedSearchAttributes.getAll().map((p) => [p.key.name, p.value]));
    async function deliver(handle: WorkflowHandle, s: DeliveryState, afterPickup: () => Promise<void>): Promise<void> {
      // One at a time, each in a workflow task of its own, as statuses minutes apart come.
      for (const status of ['ASSIGNED', 'UPCOMING', 'PICKED_UP']) {
        await handle.signal(statusChangedSignal, change(s, status));
        await until(handle, (x) => x.status === status, status);
      }
      await afterPickup();
      for (const d of s.destinations) await handle.signal(statusChangedSignal, change(s, 'DELIVERED', { destinationId: d.id }));
      await handle.signal(statusChangedSignal, change(s, 'DELIVERED'));
      await handle.result();
    }

    it('by default: DeliveryStatus follows every status, one upsert each with the time it was entered, so an open delivery is found by its status and aged in it', async () => {
      const before = Date.now();
      const handle = await start();
      const s = await following(handle);
      const created = await searchAttributes(handle);
      expect(created).toMatchObject({ OrderReference: s.reference, IsFood: false, DestinationCount: 2, DeliveryId: s.deliveryId, QuotedPrice: 1250, DeliveryStatus: 'CREATED', DeliveryAccount: 'default' });
      const createdSince = (created.DeliveryStatusSince as Date).getTime();
      expect(createdSince).toBeGreaterThanOrEqual(before - 1_000); // one clock (dev server and worker on this host); 1 s for rounding
      expect(createdSince).toBeLessThanOrEqual(Date.now());
      await deliver(handle, s, async () => {
        const picked = await searchAttributes(handle);
        expect(picked.DeliveryStatus).toBe('PICKED_UP');
        // Since the status was entered, not since the start: later than the creation's.
        expect((picked.DeliveryStatusSince as Date).getTime()).toBeGreaterThan(createdSince);
        // What `delivery list --status PICKED_UP`, the Web UI and the fleet view ask; visibility is eventually consistent: wait for it.
        const query = `DeliveryStatus="PICKED_UP" AND DeliveryStatusSince > "${new Date(createdSince).toISOString()}" AND WorkflowId="${handle.workflowId}" AND ExecutionStatus="Running"`;
        await eventually('the open delivery listed by its status and the time it entered it', async () => ((await client.workflow.count(query)).count === 1 ? true : undefined));
      });
      expect((await searchAttributes(handle)).DeliveryStatus).toBe('DELIVERED');
      const upserted = await upserts(handle);
      expect(upserted[0]).toEqual(['DeliveryAccount', 'DeliveryId', 'DeliveryStatus', 'DeliveryStatusSince', 'DestinationCount', 'IsFood', 'OrderReference', 'QuotedPrice']);
      // CREATED, ASSIGNED, UPCOMING, PICKED_UP, DELIVERED: the time each was entered rides in the same upsert (no extra action).
      expect(upserted.filter((keys) => keys.includes('DeliveryStatus'))).toHaveLength(5);
      expect(upserted.filter((keys) => keys.includes('DeliveryStatusSince'))).toHaveLength(5);
      expect(upserted.every((keys) => keys.includes('DeliveryStatus') === keys.includes('DeliveryStatusSince'))).toBe(true);
    });

    it('with DELIVERY_STATUS_SEARCH=final: the order\'s and the creation\'s in one upsert, DeliveryStatus once with the status the delivery ends in', async () => {
      const final = await startWorkers(forwarding, { prefix: 'wf-final', pacing: { statusSearch: 'final' } });
      try {
        const reference = `T-${Date.now()}-${++seq}`;
        const { reference_number: _r, ...order } = deliveryRequest({}, 2);
        const handle = await client.workflow.start('delivery', { taskQueue: final.taskQueue, workflowId: deliveryWorkflowId(reference), args: [{ reference, order, followUp: { endGraceMs: 0 } } satisfies DeliveryWorkflowInput] });
        started.push(handle);
        const s = await following(handle);
        const created = await searchAttributes(handle);
        expect(created).toMatchObject({ OrderReference: s.reference, IsFood: false, DestinationCount: 2, DeliveryId: s.deliveryId, DeliveryAccount: 'default' });
        expect(created.DeliveryStatus).toBeUndefined();
        await deliver(handle, s, async () => expect((await searchAttributes(handle)).DeliveryStatus).toBeUndefined());
        expect((await searchAttributes(handle)).DeliveryStatus).toBe('DELIVERED');
        expect(await upserts(handle)).toEqual([['DeliveryAccount', 'DeliveryId', 'DestinationCount', 'IsFood', 'OrderReference', 'QuotedPrice'], ['DeliveryStatus', 'DeliveryStatusSince']]);
      } finally {
        await final.stop();
      }
    });
  });

  describe('cancellation', () => {
    it('before creation: nothing is created', async () => {
      provider.gates.quoteDelivery = new Gate();
      const handle = await start();
      await provider.gates.quoteDelivery.entered;
      await handle.cancel();
      const err = await rejectionOf(handle.result());
      expect(err).toBeInstanceOf(WorkflowFailedError);
      expect((err as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
      provider.gates.quoteDelivery.open();
      const s = await handle.query(statusQuery);
      expect(s.cancellation?.outcome).toBe('before_creation');
      expect(provider.callsTo('createDelivery')).toHaveLength(0);
    });

    it('before its first workflow task: the state says so and the delivery can still be found by its reference', async () => {
      // No worker polls this queue until the cancellation is in the history.
      const reference = `T-${Date.now()}-${++seq}`;
      const taskQueue = uniqueTaskQueue('wf-late');
      const { reference_number: _r, ...order } = deliveryRequest({}, 1);
      const handle = await client.workflow.start('delivery', { taskQueue, workflowId: deliveryWorkflowId(reference), args: [{ reference, order } satisfies DeliveryWorkflowInput] });
      started.push(handle);
      await handle.cancel();
      const late = await startWorkers(forwarding, { taskQueue });
      try {
        expect((await rejectionOf(handle.result())) as WorkflowFailedError).toMatchObject({ cause: expect.any(CancelledFailure) });
        expect((await handle.query(statusQuery)).cancellation?.outcome).toBe('before_creation');
        // Visibility lags the history a little.
        await eventually('the delivery by OrderReference', async () => ((await client.workflow.count(`OrderReference = '${reference}'`)).count === 1 ? true : undefined), 10_000);
        expect(provider.callsTo('quoteInGate')).toHaveLength(0);
      } finally {
        await late.stop();
      }
    });

    it('while creation is in flight: the creation finishes, then the delivery is cancelled at the provider', async () => {
      provider.gates.createDelivery = new Gate();
      const handle = await start();
      await provider.gates.createDelivery.entered;
      await handle.cancel();
      await new Promise((r) => setTimeout(r, 300)); // the cancel must not cut the creation short
      expect(provider.callsTo('cancelDelivery')).toHaveLength(0);
      provider.gates.createDelivery.open();
      const err = await rejectionOf(handle.result());
      expect((err as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
      expect(provider.callsTo('cancelDelivery').map((c) => c.args[0])).toEqual(['del_fake1']);
      expect(provider.deliveries.get('del_fake1')!.status).toBe('CANCELED');
      const s = await handle.query(statusQuery);
      expect(s.status).toBe('CANCELED');
      expect(s.cancellation?.outcome).toBe('cancelled');
    });

    it('after creation: the delivery is cancelled at the provider', async () => {
      const handle = await start();
      const s = await following(handle);
      await handle.cancel();
      await rejectionOf(handle.result());
      expect(provider.deliveries.get(s.deliveryId!)!.status).toBe('CANCELED');
      const after = await handle.query(statusQuery);
      expect(after.status).toBe('CANCELED');
      expect(after.destinations.every((d) => d.status === 'CANCELED')).toBe(true);
    });

    it('refused by the provider: records the refusal and follows the delivery to its real end', async () => {
      const handle = await start({}, 1);
      const s = await following(handle);
      provider.setStatus(s.deliveryId!, 'PICKED_UP'); // the courier already has it; no webhook yet
      await handle.cancel();
      const refused = await until(handle, (x) => x.cancellation?.outcome === 'refused', 'the refusal');
      expect(refused.cancellation?.reason).toMatch(/PICKED_UP/);
      await handle.signal(statusChangedSignal, change(s, 'PICKED_UP'));
      await handle.signal(statusChangedSignal, change(s, 'DELIVERED', { destinationId: s.destinations[0]!.id }));
      await handle.signal(statusChangedSignal, change(s, 'DELIVERED'));
      const result = (await handle.result()) as DeliveryState;
      expect(result.status).toBe('DELIVERED');
      expect(result.cancellation?.outcome).toBe('refused');
    });
  });

  describe('reconciliation', () => {
    it('fetches the truth when no webhook arrives, and ends in the provider\'s final state', async () => {
      const handle = await start({ followUp: { quietMs: 1_500, jitter: 0 } });
      const s = await following(handle);
      provider.deliverAll(s.deliveryId!); // every webhook of it was lost
      const result = (await handle.result()) as DeliveryState;
      expect(result.status).toBe('DELIVERED');
      expect(result.destinations.every((d) => d.status === 'DELIVERED')).toBe(true);
      const fromReconciliation = result.timeline.filter((e) => e.source === 'reconciliation').map((e) => `${e.subject}:${e.status}`);
      expect(fromReconciliation).toEqual([...s.destinations.map((d) => `${d.id}:DELIVERED`), 'delivery:DELIVERED']);
      expect(result.timeline.some((e) => /reconciling: no webhook for 2 s/.test(e.note ?? ''))).toBe(true);
    });

    it('fetches the truth when a time window has passed without news', async () => {
      const { reference_number: _r, ...o } = deliveryRequest({}, 1);
      o.destinations[0]!.time_window_start = new Date(Date.now() - 60_000).toISOString();
      o.destinations[0]!.time_window_end = new Date(Date.now() + 500).toISOString();
      const handle = await start({ order: o, followUp: { quietMs: 10 * 60_000, windowGraceMs: 1_000 } });
      const s = await following(handle);
      provider.deliverAll(s.deliveryId!);
      const result = (await handle.result()) as DeliveryState;
      expect(result.status).toBe('DELIVERED');
      expect(result.timeline.some((e) => e.note === `reconciling: time window of ${s.destinations[0]!.id} passed without news`)).toBe(true);
      expect(provider.callsTo('getDelivery')).toHaveLength(1);
    });

    it('does not poll while webhooks keep coming', async () => {
      const handle = await start({ followUp: { quietMs: 1_500, jitter: 0 } }, 1);
      const s = await following(handle);
      const destinationId = s.destinations[0]!.id;
      for (const c of [change(s, 'ASSIGNED'), change(s, 'UPCOMING'), change(s, 'PICKED_UP'), change(s, 'IN_TRANSIT', { destinationId }), change(s, 'DELIVERED', { destinationId })]) {
        await new Promise((r) => setTimeout(r, 700));
        await handle.signal(statusChangedSignal, c);
      }
      await handle.signal(statusChangedSignal, change(s, 'DELIVERED'));
      await handle.result();
      expect(provider.callsTo('getDelivery')).toHaveLength(0);
    });
  });

  describe('price guard', () => {
    const maxPrice = { amount: 1000, currency: 'EUR' };

    it('waits for approval when the quote is over the maximum, then creates', async () => {
      const handle = await start({ maxPrice });
      await until(handle, (x) => x.phase === 'awaiting_approval', 'awaiting approval');
      expect(provider.callsTo('createDelivery')).toHaveLength(0);
      const s = await handle.executeUpdate(approveQuoteUpdate);
      expect(s.timeline.map((e) => e.note)).toContain('quote approved');
      await following(handle);
      expect(provider.callsTo('createDelivery')).toHaveLength(1);
      await handle.terminate('test done');
    });

    it('does not wait when the quote is within the maximum', async () => {
      provider.quotePrice = 900;
      const handle = await start({ maxPrice });
      await following(handle);
      await handle.terminate('test done');
    });

    it('ends with a clear failure and creates nothing when the quote is rejected', async () => {
      const handle = await start({ maxPrice });
      await until(handle, (x) => x.phase === 'awaiting_approval', 'awaiting approval');
      await handle.executeUpdate(rejectQuoteUpdate, { args: ['too expensive today'] });
      const err = (await rejectionOf(handle.result())) as WorkflowFailedError;
      expect(err.cause).toBeInstanceOf(ApplicationFailure);
      expect((err.cause as ApplicationFailure).type).toBe('QuoteRejected');
      expect(err.cause?.message).toMatch(/12\.50 EUR was rejected \(too expensive today\); nothing was created/);
      expect(provider.callsTo('createDelivery')).toHaveLength(0);
    });

    it('ends with a clear failure and creates nothing when no approval comes in time', async () => {
      const handle = await start({ maxPrice, approvalTimeoutMs: 1_000 });
      const err = (await rejectionOf(handle.result())) as WorkflowFailedError;
      expect((err.cause as ApplicationFailure).type).toBe('QuoteApprovalTimedOut');
      expect(err.cause?.message).toMatch(/12\.50 EUR is over the maximum of 10\.00 EUR and was not approved within 1 s/);
      expect(provider.callsTo('createDelivery')).toHaveLength(0);
    });

    it('refuses a currency it cannot compare', async () => {
      const handle = await start({ maxPrice: { amount: 5000, currency: 'USD' } });
      const err = (await rejectionOf(handle.result())) as WorkflowFailedError;
      expect((err.cause as ApplicationFailure).type).toBe('QuoteCurrencyMismatch');
      expect(provider.callsTo('createDelivery')).toHaveLength(0);
    });

    it('rejects an approval when no quote is waiting', async () => {
      const handle = await start();
      await following(handle);
      const err = await rejectionOf(handle.executeUpdate(approveQuoteUpdate));
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((err as WorkflowUpdateFailedError).cause?.message).toMatch(/no quote is waiting for approval/);
      await handle.terminate('test done');
    });
  });

  describe('updateDelivery', () => {
    it('calls the provider and returns the new state', async () => {
      const handle = await start();
      const s = await following(handle);
      const updated = await handle.executeUpdate(updateDeliveryUpdate, { args: [{ destinations: [{ id: s.destinations[0]!.id, package_type: 'XLARGE' }] }] });
      expect(updated.destinations[0]!.packageType).toBe('XLARGE');
      expect(updated.price?.amount).toBe(1350);
      expect(provider.callsTo('updateDelivery')).toHaveLength(1);
      await handle.terminate('test done');
    });

    it.each([
      [{ destinations: [{ id: 'dst_x', package_type: 'HUGE' }] }, /destinations\[0\]\.package_type/],
      [{}, /must change at least one field/],
      [{ destinations: [{ id: 'dst_nope', package_type: 'SMALL' }] }, /destinations\[0\]\.id: no destination dst_nope/],
    ])('rejects %j with a reason, before calling the provider', async (patch, reason) => {
      const handle = await start();
      await following(handle);
      const err = (await rejectionOf(handle.executeUpdate(updateDeliveryUpdate, { args: [patch as never] }))) as WorkflowUpdateFailedError;
      expect(err.cause?.message).toMatch(reason);
      expect(provider.callsTo('updateDelivery')).toHaveLength(0);
      await handle.terminate('test done');
    });

    it('rejects a change once the delivery is picked up', async () => {
      const handle = await start();
      const s = await following(handle);
      await handle.signal(statusChangedSignal, change(s, 'PICKED_UP'));
      await until(handle, (x) => x.status === 'PICKED_UP', 'picked up');
      const err = (await rejectionOf(handle.executeUpdate(updateDeliveryUpdate, { args: [{ is_food: true }] }))) as WorkflowUpdateFailedError;
      expect(err.cause?.message).toMatch(/cannot be updated once it is PICKED_UP/);
      expect(provider.callsTo('updateDelivery')).toHaveLength(0);
      await handle.terminate('test done');
    });
  });
});
