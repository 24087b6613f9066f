/**
 * Issue 17, item 6: a delivery that ends while destinations are still open reads the provider
 * once more, and that last read is retried until it succeeds (Temporal's retry policy), so every
 * destination ends in the provider's state even when the provider cannot serve the read at first.
 * Everything real: dev server, worker, simulator (its read fault), bridge.
 */
import { statusChangedSignal } from '../../contract/delivery-messages';
import { deliveryRequest } from '../fixtures/orders';
import { createdDelivery, startStack, type Stack } from '../helpers/stack';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.stop());

it('a delivery whose last read fails twice still ends with every destination in the provider\'s state', async () => {
  const reference = `LAST-${Date.now().toString(36)}`;
  const { reference_number: _r, ...order } = deliveryRequest({}, 3);
  await stack.deliveries.startDelivery(order, { reference });
  const created = await createdDelivery(stack, reference);
  const deliveryId = created.deliveryId!;

  // The provider finishes the delivery, but only the delivery's own event reaches the workflow
  // (the destinations' events are lost: no webhook endpoint, so nothing is sent).
  stack.sim.setWebhookEndpoint(null);
  stack.sim.advance(deliveryId, { destination_id: created.destinations[0]!.id, status: 'FAILED' });
  stack.sim.advance(deliveryId, { status: 'DELIVERED' });
  const atProvider = stack.sim.deliveries().find((d) => d.delivery.id === deliveryId)!.delivery;
  expect(atProvider.destinations.map((d) => d.status)).toEqual(['FAILED', 'DELIVERED', 'DELIVERED']);
  // And the provider cannot serve this delivery's next two reads.
  stack.sim.failReads(deliveryId, 2);
  const readsBefore = stack.sim.requestLog().length;

  await stack.temporal.workflow
    .getHandle(`delivery:${reference}`)
    .signal(statusChangedSignal, { deliveryId, status: 'DELIVERED', eventId: `evt_last_${reference}`, occurredAt: new Date().toISOString(), source: 'webhook' });
  const result = await stack.deliveries.result(reference);

  expect(result.status).toBe('DELIVERED');
  expect(result.destinations.map((d) => [d.id, d.status])).toEqual(atProvider.destinations.map((d) => [d.id, d.status]));
  const reads = stack.sim
    .requestLog(readsBefore)
    .filter((e) => e.method === 'GET' && e.path === `/v1/deliveries/${deliveryId}`)
    .map((e) => e.status);
  expect(reads).toEqual([503, 503, 200]);
  expect(result.timeline.filter((e) => e.source === 'reconciliation').map((e) => e.status)).toEqual(['FAILED', 'DELIVERED', 'DELIVERED']);
  expect(result.timeline.some((e) => e.note?.includes('failed for good'))).toBe(false);
}, 60_000);
