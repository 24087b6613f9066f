/**
 * Notifications end to end, every part real: the simulator's signed webhooks reach the workflow
 * through the bridge; the workflow tells an order workflow by signal and an HTTP receiver (which
 * verifies each request with the independent `standardwebhooks` package) by signed webhook.
 */
import { getEventListeners } from 'node:events';
import { NativeConnection, Worker } from '@temporalio/worker';
import { WorkflowNotFoundError } from '@temporalio/client';
import { DeliveryRefusedError, DeliveryRequestRejectedError, InvalidInputError } from '../../client/delivery-client';
import type { DeliveryNotification } from '../../contract/delivery-types';
import type { DeliveryWorkflowInput } from '../../contract/delivery-types';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import type { NotifyConfig, NotifyEndpoint } from '../../notifications/config';
import { WEBHOOK_PATH } from '../../bridge/server';
import { signWebhook } from '../../provider/webhook-signature';
import { deliveryRequest } from '../fixtures/orders';
import { startReceiver, type Receiver } from '../helpers/notify-receiver';
import { createdDelivery, driveToDelivered, eventually, startStack, type Stack } from '../helpers/stack';
import { testNativeConnection, testServerAddress, uniqueTaskQueue } from '../helpers/temporal';
import { recordHistories } from '../helpers/histories';
import { setCurrentVersion, waitForVersion } from '../../temporal/worker-deployment';
import { randomUUID } from 'node:crypto';
import { SIGNAL_ENDPOINT, WorkerMetrics } from '../../metrics/worker-metrics';
import { DEFAULT_FOLLOW_UP } from '../../workflows/delivery';
import { parsePrometheusText } from '../helpers/prometheus';
import { defaultAccountOnly } from '../helpers/workers';

jest.setTimeout(120_000);

let stack: Stack;
let orders: Receiver; // answers 204
let flaky: Receiver; // answers 503 while `flakyDown`
let gone: Receiver; // answers 410 from the third notification on
let flakyDown = true;
let orderConnection: NativeConnection;
let orderWorker: Worker;
let orderWorkerRun: Promise<void>;
let orderTaskQueue: string;
const metrics = new WorkerMetrics(defaultAccountOnly(['orders', 'flaky', 'gone']));
/** The workers' count of signals to order workflows with this result. */
const signals = async (result: string) => parsePrometheusText(await metrics.registry.metrics()).value('delivery_notifications_total', { account: 'default', target: 'workflow', endpoint: SIGNAL_ENDPOINT, result });

const PERSONAL = ['Recipient', 'Musterstraße', '+49151', 'Kitchen', 'Trattoria', 'Torstraße'];

beforeAll(async () => {
  [orders, flaky, gone] = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
  flaky.answer = () => (flakyDown ? 503 : 204);
  gone.answer = (n) => (n.sequence >= 3 ? 410 : 204);
  const endpoint = (name: string, r: Receiver): [string, NotifyEndpoint] => [name, { name, url: new URL(r.url), secrets: [r.secret] }];
  // A fast schedule: the product's (5 s, 5 min, …) is for outages, not for a test.
  const notify: NotifyConfig = { endpoints: new Map([endpoint('orders', orders), endpoint('flaky', flaky), endpoint('gone', gone)]), retryScheduleMs: [200, 400, 800] };
  stack = await startStack({ notify, workers: { metrics } });
  orderTaskQueue = uniqueTaskQueue('orders');
  orderConnection = await testNativeConnection();
  orderWorker = await Worker.create({
    connection: orderConnection,
    namespace: testServerAddress().namespace,
    taskQueue: orderTaskQueue,
    workflowsPath: require.resolve('./fixtures/order-workflows'),
  });
  orderWorkerRun = orderWorker.run();
});

afterAll(async () => {
  orderWorker?.shutdown();
  await orderWorkerRun;
  await orderConnection?.close();
  await stack?.stop();
  await Promise.all([orders, flaky, gone].map((r) => r?.close()));
});

const forRef = (r: Receiver, reference: string) => r.accepted().filter((n) => n.reference === reference);
/** The notifications of `reference` once the last one (delivery.ended) has come, else undefined. */
const untilEnded = (r: Receiver, reference: string) => {
  const ns = forRef(r, reference);
  return ns.some((n) => n.type === 'delivery.ended') ? ns : undefined;
};

/** Sequences 1..n, each once, in arrival order. */
function expectInSequence(ns: DeliveryNotification[]): void {
  expect(ns.map((n) => n.sequence)).toEqual(ns.map((_, i) => i + 1));
  expect(new Set(ns.map((n) => n.eventId)).size).toBe(ns.length);
}

async function startOrderWorkflow(id: string): Promise<{ result(): Promise<DeliveryNotification[]> }> {
  return stack.temporal.workflow.start('orderFollowing', { taskQueue: orderTaskQueue, workflowId: id, args: [] });
}

describe('notifications', () => {
  it('tell an order workflow and an HTTP endpoint every change of a 3-stop delivery, once per event id, in sequence, up to DELIVERED', async () => {
    const reference = 'NOTIFY-1';
    const order = await startOrderWorkflow(`order:${reference}`);
    await stack.deliveries.startDelivery(deliveryRequest({}, 3), { reference, notify: { workflowId: `order:${reference}`, endpoint: 'orders' } });
    const created = await createdDelivery(stack, reference);
    driveToDelivered(stack.sim, created.deliveryId!);

    const bySignal = await order.result();
    const byWebhook = await eventually('the endpoint to hear of the end', () => untilEnded(orders, reference));
    const final = await stack.deliveries.result(reference);

    expectInSequence(bySignal);
    expect(byWebhook.map((n) => n.eventId)).toEqual(bySignal.map((n) => n.eventId));
    expect(orders.unverified).toBe(0);
    for (const r of orders.requests.filter((x) => x.notification.reference === reference)) {
      expect(r.id).toBe(r.notification.eventId);
      expect(r.type).toBe(r.notification.type);
    }

    // Every change: the delivery's statuses, each destination's link and statuses, then the end.
    const statuses = (subject: string) => bySignal.filter((n) => n.change.subject === subject && n.type.endsWith('status_changed')).map((n) => n.change.status);
    expect(statuses('delivery')).toEqual(['CREATED', 'ASSIGNED', 'UPCOMING', 'PICKED_UP', 'DELIVERED']);
    for (const d of final.destinations) {
      expect(bySignal.find((n) => n.type === 'destination.tracking_link' && n.change.subject === d.id)?.change.trackingUrl).toBe(d.trackingUrl);
      expect(statuses(d.id).at(-1)).toBe('DELIVERED');
    }
    const last = bySignal.at(-1)!;
    expect(last).toMatchObject({ type: 'delivery.ended', reference, deliveryId: created.deliveryId, change: { outcome: 'completed', status: 'DELIVERED' } });
    expect(last.result?.destinations.map((d) => d.status)).toEqual(['DELIVERED', 'DELIVERED', 'DELIVERED']);
    expect(bySignal.every((n) => n.state.reference === reference && !('timeline' in n.state))).toBe(true);

    // No personal data, and the timeline records each notification's fate.
    const text = JSON.stringify([bySignal, byWebhook]);
    for (const p of PERSONAL) expect(text).not.toContain(p);
    const told = (await stack.deliveries.getStatus(reference)).timeline.filter((e) => e.notification);
    expect(told.map((e) => e.notification!.sequence)).toEqual(bySignal.map((n) => n.sequence));
    expect(told.every((e) => e.notification!.to[`workflow:order:${reference}`] === 'sent' && e.notification!.to['endpoint:orders'] === 'sent')).toBe(true);
    if (process.env.RECORD_HISTORIES) await recordHistories(process.env.RECORD_HISTORIES, 'notifications to an order workflow and an endpoint', [{ workflowId: deliveryWorkflowId(reference) }]);
  });

  it('tell the parent of a delivery started as a child workflow, by default', async () => {
    const reference = 'NOTIFY-CHILD';
    const input: DeliveryWorkflowInput = { reference, order: deliveryRequest({}, 1), followUp: { endGraceMs: 0 } };
    const parent = await stack.temporal.workflow.start('orderWithChild', { taskQueue: orderTaskQueue, workflowId: `order:${reference}`, args: [input, stack.workers.taskQueue] });
    await eventually('the child to start', () => stack.temporal.workflow.getHandle(deliveryWorkflowId(reference)).describe().then(() => true, () => false));
    const created = await createdDelivery(stack, reference);
    driveToDelivered(stack.sim, created.deliveryId!);
    const received = (await parent.result()) as DeliveryNotification[];
    expectInSequence(received);
    expect(received.at(-1)).toMatchObject({ type: 'delivery.ended', change: { outcome: 'completed', status: 'DELIVERED' } });
  });

  it('tell the outcome of a cancellation, then the end', async () => {
    const reference = 'NOTIFY-CANCEL';
    await stack.deliveries.startDelivery(deliveryRequest(), { reference, notify: { endpoint: 'orders' } });
    await createdDelivery(stack, reference);
    await stack.deliveries.cancelDelivery(reference);
    const told = await eventually('the end', () => untilEnded(orders, reference));
    expectInSequence(told);
    expect(told.find((n) => n.type === 'cancellation.outcome')?.change.cancellation?.outcome).toBe('cancelled');
    expect(told.at(-1)).toMatchObject({ type: 'delivery.ended', change: { outcome: 'cancelled', status: 'CANCELED' } });
  });

  it('give an endpoint that failed for a while everything afterwards, in sequence', async () => {
    const reference = 'NOTIFY-FLAKY';
    flakyDown = true;
    await stack.deliveries.startDelivery(deliveryRequest({}, 2), { reference, notify: { endpoint: 'flaky' } });
    const created = await createdDelivery(stack, reference);
    driveToDelivered(stack.sim, created.deliveryId!);
    await eventually('a few failed attempts', () => flaky.requests.filter((r) => r.answered === 503).length >= 3);
    expect(forRef(flaky, reference)).toEqual([]);
    flakyDown = false;
    const told = await eventually('the end', () => untilEnded(flaky, reference), 30_000);
    expectInSequence(told);
    // The delivery itself was never held up by its endpoint.
    expect((await stack.deliveries.result(reference)).status).toBe('DELIVERED');
  });

  it('stop sending to an endpoint that answers 410, and tell the order workflow still', async () => {
    const reference = 'NOTIFY-GONE';
    // Read before the start: the first signals go out as soon as the delivery is created.
    const sentBefore = await signals('sent');
    const order = await startOrderWorkflow(`order:${reference}`);
    await stack.deliveries.startDelivery(deliveryRequest(), { reference, notify: { workflowId: `order:${reference}`, endpoint: 'gone' } });
    const created = await createdDelivery(stack, reference);
    driveToDelivered(stack.sim, created.deliveryId!);
    const bySignal = await order.result();
    expectInSequence(bySignal);
    // Counted like an endpoint's: one `sent` per signal delivered (the sink runs once the delivery's task is done: wait for it).
    await eventually('the signals counted', async () => ((await signals('sent')) - sentBefore >= bySignal.length ? true : undefined));
    const final = await stack.deliveries.result(reference);
    const toGone = gone.requests.filter((r) => r.notification.reference === reference);
    expect(toGone.map((r) => [r.notification.sequence, r.answered])).toEqual([
      [1, 204],
      [2, 204],
      [3, 410],
    ]);
    const after = (await stack.deliveries.getStatus(reference)).timeline;
    expect(after.filter((e) => e.note?.startsWith('notifications to endpoint:gone stopped at #3'))).toHaveLength(1);
    // #3 and those made before the stop took the stop's fate; those made after it name only the targets still told.
    const fromThird = after.filter((e) => e.notification && e.notification.sequence >= 3).map((e) => e.notification!);
    expect(fromThird.find((n) => n.sequence === 3)?.to['endpoint:gone']).toBe('gone');
    expect(fromThird.filter((n) => !['gone', undefined].includes(n.to['endpoint:gone']))).toEqual([]);
    expect(final.status).toBe('DELIVERED');
  });

  it('record once a signal target that does not exist, and carry on', async () => {
    const reference = 'NOTIFY-NOBODY';
    const failedBefore = await signals('failed');
    await stack.deliveries.startDelivery(deliveryRequest(), { reference, notify: { workflowId: 'order:nobody' } });
    const created = await createdDelivery(stack, reference);
    driveToDelivered(stack.sim, created.deliveryId!);
    const final = await stack.deliveries.result(reference);
    expect(final.status).toBe('DELIVERED');
    const notes = (await stack.deliveries.getStatus(reference)).timeline.filter((e) => e.note?.includes('workflow:order:nobody'));
    expect(notes).toHaveLength(1);
    expect(notes[0]!.note).toMatch(/stopped at #1: no running workflow order:nobody/);
    // A target that does not exist is a failed notification in the metrics too, once, and never pending.
    await eventually('the failed signal counted', async () => ((await signals('failed')) - failedBefore === 1 ? true : undefined));
    expect(parsePrometheusText(await metrics.registry.metrics()).value('delivery_notifications_pending', { account: 'default', target: 'workflow', endpoint: SIGNAL_ENDPOINT })).toBe(0);
    if (process.env.RECORD_HISTORIES) await recordHistories(process.env.RECORD_HISTORIES, 'notifications to a workflow that does not exist', [{ workflowId: deliveryWorkflowId(reference) }]);
  });

  it('refuse a URL before anything starts, and an unknown endpoint before anything is quoted', async () => {
    await expect(stack.deliveries.startDelivery(deliveryRequest(), { reference: 'NOTIFY-URL', notify: { endpoint: 'https://attacker.example/collect' } })).rejects.toThrow(
      expect.objectContaining({ constructor: InvalidInputError, message: expect.stringMatching(/notify\.endpoint: must be the name of an endpoint the operator configured .* not a URL/) }),
    );
    await expect(stack.temporal.workflow.getHandle(deliveryWorkflowId('NOTIFY-URL')).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);

    const mark = stack.sim.requestLog().length;
    // Refused to the caller within the start (the worker's check), and the workflow ended with the same reason.
    await expect(stack.deliveries.startDelivery(deliveryRequest(), { reference: 'NOTIFY-UNKNOWN', notify: { endpoint: 'billing' } })).rejects.toThrow(
      expect.objectContaining({ constructor: DeliveryRefusedError, issues: [expect.objectContaining({ field: 'notify.endpoint' })] }),
    );
    const failure = await stack.deliveries.result('NOTIFY-UNKNOWN').catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(DeliveryRequestRejectedError);
    expect(failure).toMatchObject({ type: 'InvalidDeliveryInput', message: expect.stringMatching(/notify\.endpoint: no notification endpoint named billing \(configured: orders, flaky, gone/) });
    expect(stack.sim.requestLog(mark).filter((r) => r.path.startsWith('/v1/quotes') || r.path.startsWith('/v1/deliveries'))).toEqual([]);
  });

  it('tell a status that arrives after the end, within the grace period, put it on the timeline, and end once nothing else can come', async () => {
    const reference = 'NOTIFY-LATE';
    // The default grace (10 minutes): the run must end when the missing step is heard, not wait it out.
    await stack.deliveries.startDelivery(deliveryRequest(), { reference, notify: { endpoint: 'orders' }, followUp: { endGraceMs: DEFAULT_FOLLOW_UP.endGraceMs } });
    const created = await createdDelivery(stack, reference);
    const destinationId = created.destinations[0]!.id;
    // Every step but one heard: the delivery's UPCOMING webhook is lost in an outage (the provider retries it below, after the end).
    for (const status of ['ASSIGNED', 'PICKED_UP']) stack.sim.advance(created.deliveryId!, { status });
    stack.sim.advance(created.deliveryId!, { destination_id: destinationId, status: 'DELIVERED' });
    driveToDelivered(stack.sim, created.deliveryId!);
    await eventually('the delivery to end', async () => (await stack.deliveries.getStatus(reference)).phase === 'ended');

    // A webhook retried after an outage: signed by the provider, through the bridge.
    const body = JSON.stringify({ id: 'evt_late_upcoming', type: 'delivery.status_changed', created_at: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'), data: { delivery_id: created.deliveryId, status: 'UPCOMING' } });
    const headers = signWebhook(stack.webhookSecret, 'evt_late_upcoming', Math.floor(Date.now() / 1000), body);
    const res = await fetch(stack.bridgeUrl + WEBHOOK_PATH, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    expect(res.status).toBe(200);

    const told = await eventually('the end, the grace cut short by the last missing step', () => untilEnded(orders, reference), 30_000);
    expectInSequence(told);
    const late = told.find((n) => n.change.late);
    expect(late).toMatchObject({ type: 'delivery.status_changed', change: { subject: 'delivery', status: 'UPCOMING', late: true, source: 'webhook' } });
    expect(told.at(-1)!.sequence).toBeGreaterThan(late!.sequence);
    const final = await stack.deliveries.result(reference);
    expect(final.timeline.some((e) => e.subject === 'delivery' && e.eventId === 'evt_late_upcoming' && e.late)).toBe(true);
    if (process.env.RECORD_HISTORIES) await recordHistories(process.env.RECORD_HISTORIES, 'notifications a late status within the grace', [{ workflowId: deliveryWorkflowId(reference) }]);
  });

  it('leave watch, which is for a person at a terminal, without an abort listener per poll', async () => {
    const reference = 'NOTIFY-WATCH';
    await stack.deliveries.startDelivery(deliveryRequest(), { reference });
    await createdDelivery(stack, reference);
    const abort = new AbortController();
    let polls = 0;
    const watching = (async () => {
      for await (const _ of stack.deliveries.watch(reference, { intervalMs: 10, signal: abort.signal })) polls++;
    })();
    await new Promise((r) => setTimeout(r, 1_500)); // dozens of polls of a delivery that does not change
    const listeners = getEventListeners(abort.signal, 'abort').length;
    abort.abort();
    await watching;
    expect(polls).toBeGreaterThanOrEqual(1);
    expect(listeners).toBeLessThanOrEqual(1);
    expect(getEventListeners(abort.signal, 'abort')).toHaveLength(0);
  });

  it('go out from the build a delivery is pinned to, when the workers are a deployment version', async () => {
    const version = { deploymentName: `notify-${randomUUID().slice(0, 8)}`, buildId: 'build-a' };
    const receiver = await startReceiver();
    const notify: NotifyConfig = { endpoints: new Map([['orders', { name: 'orders', url: new URL(receiver.url), secrets: [receiver.secret] }]]), retryScheduleMs: [200] };
    const versioned = await startStack({ notify, workers: { deployment: version } });
    try {
      const { workflowService, options } = versioned.temporal;
      await waitForVersion(workflowService, options.namespace, version, versioned.workers.taskQueue);
      await setCurrentVersion(workflowService, options.namespace, version);
      const reference = 'NOTIFY-PINNED';
      await versioned.deliveries.startDelivery(deliveryRequest(), { reference, notify: { endpoint: 'orders' } });
      const created = await createdDelivery(versioned, reference);
      driveToDelivered(versioned.sim, created.deliveryId!);
      const told = await eventually('the end', () => untilEnded(receiver, reference), 60_000);
      expectInSequence(told);
      expect(told.at(-1)).toMatchObject({ type: 'delivery.ended', change: { outcome: 'completed' } });
      expect((await versioned.temporal.workflow.getHandle(deliveryWorkflowId(reference)).describe()).raw.workflowExecutionInfo?.versioningInfo?.behavior).toBeTruthy();
    } finally {
      await versioned.stop();
      await receiver.close();
    }
  });
});
