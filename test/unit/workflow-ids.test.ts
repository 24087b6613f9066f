import { providerTaskQueues, workflowTaskQueueOf } from '../../contract/task-queues';
import { accountOfWorkflowId, accountWebhookPath, deliveryWorkflowId, gateWorkflowId, parseDeliveryWorkflowId, parseGateWorkflowId, parseWebhookPath, referenceFromWorkflowId } from '../../contract/workflow-ids';

describe('workflow IDs by account', () => {
  it('keeps the form before accounts for `default`, and gives every other account its own', () => {
    expect(deliveryWorkflowId('ORD-1')).toBe('delivery:ORD-1');
    expect(deliveryWorkflowId('ORD-1', 'default')).toBe('delivery:ORD-1');
    expect(deliveryWorkflowId('ORD-1', 'acme')).toBe('delivery@acme:ORD-1');
    expect(gateWorkflowId('deliveries')).toBe('pacing-gate:deliveries');
    expect(gateWorkflowId('deliveries', 'acme')).toBe('pacing-gate:deliveries@acme');
  });

  it('reads the account and reference back, whatever the reference holds', () => {
    for (const [account, reference] of [['default', 'delivery@acme:x'], ['acme', 'a:b@c'], ['b-2', '注文-1001'], ['default', ':']]) {
      const id = deliveryWorkflowId(reference!, account);
      expect(parseDeliveryWorkflowId(id)).toEqual({ account, reference });
      expect(referenceFromWorkflowId(id)).toBe(reference);
    }
    expect(parseDeliveryWorkflowId('pacing-gate:deliveries')).toBeUndefined();
  });

  it('never gives two (account, reference) pairs one ID', () => {
    const pairs = [['default', 'x'], ['default', '@acme:x'], ['acme', 'x'], ['acme', ':x'], ['acm', 'e:x'], ['default', 'acme:x']];
    const ids = pairs.map(([a, r]) => deliveryWorkflowId(r!, a));
    expect(new Set(ids).size).toBe(pairs.length);
  });

  it("reads a gate's account back, given its queue, even a queue whose name holds '@'", () => {
    for (const queue of ['deliveries', 'team@eu']) {
      expect(parseGateWorkflowId(gateWorkflowId(queue), queue)).toBe('default');
      expect(parseGateWorkflowId(gateWorkflowId(queue, 'acme'), queue)).toBe('acme');
      expect(parseGateWorkflowId(gateWorkflowId(queue, 'acme'), `${queue}-other`)).toBeUndefined();
      for (const q of Object.values(providerTaskQueues(queue))) expect(workflowTaskQueueOf(q)).toBe(queue);
    }
    expect(workflowTaskQueueOf('deliveries.pacing-gate')).toBeUndefined();
  });

  it('one parser for the account of any workflow ID: a delivery\'s or a gate\'s; any other ID is an error naming it, never `default`', () => {
    expect(accountOfWorkflowId(deliveryWorkflowId('A-1'))).toBe('default');
    expect(accountOfWorkflowId(deliveryWorkflowId('A-1', 'acme'))).toBe('acme');
    expect(accountOfWorkflowId(gateWorkflowId('deliveries', 'acme'), 'deliveries')).toBe('acme');
    expect(accountOfWorkflowId(gateWorkflowId('deliveries'), 'deliveries')).toBe('default');
    for (const id of ['quote:3f2a', 'order-A-1', '', 'delivery@:A-1', gateWorkflowId('deliveries', 'acme')]) {
      expect(() => accountOfWorkflowId(id)).toThrow(`workflow ID ${JSON.stringify(id)} names no courier account`);
    }
  });

  it("reads the account a webhook URL names: 0.2.0's path is `default`'s, any other path none", () => {
    expect(parseWebhookPath('/webhooks/delivery')).toEqual({ account: 'default', route: '/webhooks/delivery' });
    expect(parseWebhookPath(accountWebhookPath('acme'))).toEqual({ account: 'acme', route: '/webhooks/delivery/{account}' });
    for (const path of ['/webhooks/delivery/acme/x', '/webhooks/deliveryx', '/', '/webhooks']) expect(parseWebhookPath(path)).toBeUndefined();
  });
});
