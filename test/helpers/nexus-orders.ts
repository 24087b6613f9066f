/**
 * An order system in the `orders` namespace calling the Nexus service `deliveries` (issue #27):
 * the example order workflow (examples/nexus-order-system/) on a worker of its own, an endpoint
 * with a name unique to the test file, and the scenarios both the dev server
 * (test/temporal/nexus.test.ts) and the cluster (test/cluster/nexus.test.ts) run against it.
 */
import { randomUUID } from 'node:crypto';
import { Client, WorkflowFailedError, type Connection } from '@temporalio/client';
import { ApplicationFailure, NexusOperationFailure, type DataConverter } from '@temporalio/common';
import { HandlerError } from 'nexus-rpc';
import { NativeConnection, Worker } from '@temporalio/worker';
import { connectClient } from '../../temporal/client-connection';
import type { DeliveryClient } from '../../client/delivery-client';
import type { DeliveryState } from '../../contract/delivery-types';
import { deleteEndpoint, ensureNexusSetup, ORDERS_NAMESPACE } from '../../scripts/nexus-setup';
import { cancelDeliverySignal, deliveryRequestWorkflow, orderWorkflow, type DeliveryRequest, type OrderInput } from '../../examples/nexus-order-system/workflows';
import { deliveryRequest } from '../fixtures/orders';

/** The delivery side, as each project reaches it. */
export interface DeliverySide {
  address: string;
  namespace: string;
  taskQueue: string;
  /** The deployment's payload codec: callers in another namespace must share it to read what the service answers. */
  dataConverter?: DataConverter;
  deliveries: DeliveryClient;
  /** A client of the delivery side's namespace. */
  temporal: Client;
  /** Moves the delivery along the happy path at the simulator until DELIVERED. */
  driveToDelivered(deliveryId: string): Promise<void>;
  /** The provider's record of the delivery with this reference. */
  atProvider(reference: string): Promise<{ status: string; count: number }>;
}

export interface OrderSystem {
  endpoint: string;
  taskQueue: string;
  client: Client;
  stop(): Promise<void>;
}

/** `namespace` and `endpoint`: the caller's (default `orders`, and a name unique to the call). */
export async function startOrderSystem(side: DeliverySide, o: { namespace?: string; endpoint?: string } = {}): Promise<OrderSystem> {
  const connection: Connection = await connectClient({ address: side.address });
  const endpoint = o.endpoint ?? `deliveries-test-${randomUUID().slice(0, 8)}`;
  const namespace = o.namespace ?? ORDERS_NAMESPACE;
  await ensureNexusSetup(connection, { callerNamespace: namespace, endpoint, targetNamespace: side.namespace, targetTaskQueue: side.taskQueue, timeoutMs: 60_000 });
  const native = await NativeConnection.connect({ address: side.address });
  const taskQueue = `orders-${randomUUID().slice(0, 8)}`;
  const worker = await Worker.create({
    connection: native,
    namespace,
    taskQueue,
    workflowsPath: require.resolve('../../examples/nexus-order-system/workflows'),
    dataConverter: side.dataConverter,
  });
  const running = worker.run();
  return {
    endpoint,
    taskQueue,
    client: new Client({ connection, namespace, dataConverter: side.dataConverter }),
    async stop() {
      worker.shutdown();
      await running;
      await native.close();
      await deleteEndpoint(connection, endpoint).catch(() => undefined);
      await connection.close();
    },
  };
}

let seq = 0;
export const newReference = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;

export function order() {
  const { reference_number: _r, ...o } = deliveryRequest({}, 2);
  return o;
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The delivery's state once its workflow has created it at the provider. */
function created(side: DeliverySide, reference: string): Promise<DeliveryState> {
  return waitFor(`delivery ${reference} to be created`, async () => {
    const s = await side.deliveries.getStatus(reference);
    return s.phase === 'following' ? s : undefined;
  });
}

export function start(orders: OrderSystem, input: Omit<OrderInput, 'endpoint'>) {
  return orders.client.workflow.start(orderWorkflow, { taskQueue: orders.taskQueue, workflowId: `order:${input.reference}`, args: [{ followUp: { endGraceMs: 0 }, ...input, endpoint: orders.endpoint }] });
}

/** The failure a caller workflow ended with: the Nexus operation's, the handler error if any, and the deepest ApplicationFailure of its chain (the reason). */
export async function failureOf(result: Promise<unknown>): Promise<{ operation: NexusOperationFailure; handler?: HandlerError; application?: ApplicationFailure }> {
  const err = await result.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const operation = (err as WorkflowFailedError).cause;
  expect(operation).toBeInstanceOf(NexusOperationFailure);
  let handler: HandlerError | undefined;
  let application: ApplicationFailure | undefined;
  for (let cause: unknown = operation; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof HandlerError) handler = cause;
    if (cause instanceof ApplicationFailure) application = cause;
  }
  return { operation: operation as NexusOperationFailure, handler, application };
}

/** A synchronous operation, sent from a workflow in `orders` as a support tool would. */
export function request(orders: OrderSystem, r: DeliveryRequest): Promise<DeliveryState> {
  return orders.client.workflow.execute(deliveryRequestWorkflow, { taskQueue: orders.taskQueue, workflowId: `request:${r.operation}:${randomUUID()}`, args: [orders.endpoint, r] });
}

function phaseIs(side: DeliverySide, reference: string, phase: DeliveryState['phase']): Promise<DeliveryState> {
  return waitFor(`delivery ${reference} to be ${phase}`, async () => {
    const s = await side.deliveries.getStatus(reference);
    return s.phase === phase ? s : undefined;
  });
}

/** The scenarios of issue #27's Nexus tests; `get` gives the running sides (set in beforeAll). */
export function orderSystemScenarios(get: () => { side: DeliverySide; orders: OrderSystem }): void {
  it('an order workflow in `orders` quotes, creates a delivery through the endpoint and receives its DeliveryResult', async () => {
    const { side, orders } = get();
    const reference = newReference('NX-OK');
    const handle = await start(orders, { reference, order: order() });
    const state = await created(side, reference);
    // The carried quote was used: the delivery asked for none of its own.
    expect(state.timeline.filter((e) => e.note?.startsWith('quoted ')).length).toBe(1);
    await side.driveToDelivered(state.deliveryId!);
    const outcome = await handle.result();

    expect(outcome.quote).toEqual(expect.objectContaining({ fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/) }));
    expect(outcome.delivered?.reference).toBe(reference);
    expect(outcome.delivered?.phase).toBe('ended');
    expect(outcome.delivered?.status).toBe('DELIVERED');
    expect(outcome.delivered?.destinations.map((d) => d.status)).toEqual(['DELIVERED', 'DELIVERED']);
    expect(outcome.delivered?.price).toEqual(outcome.quote?.price);
    expect(await side.atProvider(reference)).toEqual({ status: 'DELIVERED', count: 1 });
  });

  it('cancelling the operation cancels the delivery at the provider, and the order workflow learns how it ended', async () => {
    const { side, orders } = get();
    const reference = newReference('NX-CANCEL');
    const handle = await start(orders, { reference, order: order(), quoteFirst: false });
    await created(side, reference);
    await handle.signal(cancelDeliverySignal);
    const outcome = await handle.result();

    expect(outcome.delivered).toBeUndefined();
    expect(outcome.cancelled?.cancellation?.outcome).toBe('cancelled');
    expect(outcome.cancelled?.status).toBe('CANCELED');
    expect(outcome.cancelled?.phase).toBe('ended');
    // Nothing orphaned: the one delivery made for the reference is cancelled at the provider, and its workflow has ended.
    expect(await side.atProvider(reference)).toEqual({ status: 'CANCELED', count: 1 });
    const description = await side.temporal.workflow.getHandle(`delivery:${reference}`).describe();
    expect(description.status.name).toBe('CANCELLED');
  });

  it('a bad order fails the operation with InvalidDeliveryInput naming the field, and nothing is started', async () => {
    const { side, orders } = get();
    const bad = { ...order(), destinations: [] };

    const reference = newReference('NX-BAD');
    const created = await failureOf(start(orders, { reference, order: bad, quoteFirst: false }).then((h) => h.result()));
    expect(created.operation.operation).toBe('createDelivery');
    expect(created.application?.type).toBe('InvalidDeliveryInput');
    expect(created.application?.nonRetryable).toBe(true);
    expect(created.application?.message).toContain('order.destinations: must have at least one destination');
    expect(created.application?.details?.[0]).toEqual([{ field: 'order.destinations', message: 'must have at least one destination' }]);
    await expect(side.deliveries.getStatus(reference)).rejects.toThrow(`no delivery with reference ${reference}`);

    // The synchronous quote checks the same way.
    const quoted = await failureOf(start(orders, { reference: newReference('NX-BAD'), order: bad }).then((h) => h.result()));
    expect(quoted.operation.operation).toBe('quote');
    expect(quoted.application?.type).toBe('InvalidDeliveryInput');
    expect(quoted.application?.message).toContain('order.destinations: must have at least one destination');
    expect(await side.atProvider(reference)).toEqual({ status: 'none', count: 0 });
  });
}

/** The synchronous operations on a delivery: approve, reject, update, status, and their refusals. */
export function syncOperationScenarios(get: () => { side: DeliverySide; orders: OrderSystem }): void {
  const overMax = { amount: 1, currency: 'EUR' };

  it('a person approves a quote over the maximum, changes a package and reads the status, each through a synchronous operation (a second approval refused)', async () => {
    const { side, orders } = get();
    const reference = newReference('NX-SYNC');
    const handle = await start(orders, { reference, order: order(), maxPrice: overMax });
    await phaseIs(side, reference, 'awaiting_approval');

    const approved = await request(orders, { operation: 'approveQuote', input: { reference } });
    expect(approved).toEqual(expect.objectContaining({ reference, quote: expect.objectContaining({ price: expect.any(Object) }) }));
    const following = await created(side, reference);
    const updated = await request(orders, { operation: 'updateDelivery', input: { reference, update: { destinations: [{ id: following.destinations[0]!.id, package_type: 'XLARGE' }] } } });
    expect(updated.destinations[0]!.packageType).toBe('XLARGE');
    // The update's validator refuses a second approval: the operation fails with the workflow's reason.
    const refused = await failureOf(request(orders, { operation: 'approveQuote', input: { reference } }));
    expect(refused.application?.message).toBe('no quote is waiting for approval (the delivery is following)');
    const status = await request(orders, { operation: 'status', input: { reference } });
    expect(status).toEqual(expect.objectContaining({ reference, phase: 'following', deliveryId: following.deliveryId }));

    await side.driveToDelivered(following.deliveryId!);
    const outcome = await handle.result();
    expect(outcome.delivered?.status).toBe('DELIVERED');
    expect(outcome.delivered?.destinations[0]!.packageType).toBe('XLARGE');
  });

  it('a rejected quote fails the order\'s createDelivery with QuoteRejected; an ended delivery and an unknown reference fail with their reason', async () => {
    const { side, orders } = get();
    const reference = newReference('NX-REJECT');
    const handle = await start(orders, { reference, order: order(), maxPrice: overMax });
    await phaseIs(side, reference, 'awaiting_approval');
    const rejected = await request(orders, { operation: 'rejectQuote', input: { reference, reason: 'too expensive' } });
    expect(rejected.reference).toBe(reference);

    const failed = await failureOf(handle.result());
    expect(failed.operation.operation).toBe('createDelivery');
    expect(failed.application?.type).toBe('QuoteRejected');
    expect(failed.application?.message).toContain('too expensive');
    expect(await side.atProvider(reference)).toEqual({ status: 'none', count: 0 });

    // Its workflow has ended: no update reaches it, the status still answers.
    const ended = await failureOf(request(orders, { operation: 'approveQuote', input: { reference } }));
    expect(ended.application?.type).toBe('DeliveryEnded');
    expect(ended.application?.message).toContain(`the delivery ${reference} has ended (its workflow is FAILED)`);
    expect((await request(orders, { operation: 'status', input: { reference } })).phase).toBe('ended');

    const unknown = await failureOf(request(orders, { operation: 'status', input: { reference: `${reference}-NONE` } }));
    expect(unknown.handler?.type).toBe('NOT_FOUND');
    expect(unknown.handler?.message).toContain(`no delivery with reference ${reference}-NONE`);
  });
}
