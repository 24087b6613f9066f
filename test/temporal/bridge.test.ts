/**
 * The webhook bridge with real parts: signed requests over HTTP on 127.0.0.1, reference lookups
 * at the simulator, signals to workflows on the dev server.
 */
import { request } from 'undici';
import { Webhook } from 'standardwebhooks';
import { WEBHOOK_PATH, createBridge } from '../../bridge/server';
import { ProviderClient } from '../../provider/client';
import { generateWebhookSecret, signWebhook } from '../../provider/webhook-signature';
import type { DeliveryState } from '../../contract/delivery-types';
import { deliveryRequest } from '../fixtures/orders';
import { createdDelivery, SANDBOX_KEY, startStack, type Stack } from '../helpers/stack';

let stack: Stack;
let seq = 0;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.stop());

interface Sent {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

async function post(body: string | Buffer, headers: Record<string, string>, url = stack.bridgeUrl): Promise<Sent> {
  const res = await request(url + WEBHOOK_PATH, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : {} };
}

function event(deliveryId: string, status: string, destinationId?: string) {
  const id = `evt_test${Date.now()}${++seq}`;
  return {
    id,
    type: destinationId ? 'destination.status_changed' : 'delivery.status_changed',
    created_at: new Date().toISOString(),
    data: destinationId ? { delivery_id: deliveryId, destination_id: destinationId, status } : { delivery_id: deliveryId, status },
  };
}

function signed(evt: { id: string }, secret = stack.webhookSecret, at = Date.now()) {
  const body = JSON.stringify(evt);
  return { body, headers: { ...signWebhook(secret, evt.id, Math.floor(at / 1000), body) } };
}

async function followedDelivery(): Promise<DeliveryState> {
  const reference = `BR-${Date.now().toString(36)}-${++seq}`;
  const { reference_number: _r, ...order } = deliveryRequest({}, 1);
  await stack.deliveries.startDelivery(order, { reference });
  return createdDelivery(stack, reference);
}

describe('the webhook bridge', () => {
  it('delivers a correctly signed event to its workflow and answers 200', async () => {
    const s = await followedDelivery();
    const { body, headers } = signed(event(s.deliveryId!, 'ASSIGNED'));
    const res = await post(body, headers);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ outcome: 'accepted', workflow_id: `delivery:${s.reference}` });
    // 200 means the signal is in the workflow's history: the next query sees it.
    expect((await stack.deliveries.getStatus(s.reference)).status).toBe('ASSIGNED');
  });

  it('accepts every secret during a rotation, checked with an independent Standard Webhooks implementation', async () => {
    const s = await followedDelivery();
    const oldSecret = generateWebhookSecret();
    const rotating = createBridge({ temporal: stack.temporal, provider: new ProviderClient({ baseUrl: stack.simUrl, apiKey: SANDBOX_KEY }), secrets: [oldSecret, stack.webhookSecret], log: () => undefined });
    const url = await rotating.listen(0, '127.0.0.1');
    try {
      for (const [secret, status] of [
        [oldSecret, 'ASSIGNED'],
        [stack.webhookSecret, 'UPCOMING'],
      ] as const) {
        const evt = event(s.deliveryId!, status);
        const body = JSON.stringify(evt);
        const at = new Date();
        const signature = new Webhook(secret).sign(evt.id, at, body);
        const res = await post(body, { 'webhook-id': evt.id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': signature }, url);
        expect(res.status).toBe(200);
      }
      expect((await stack.deliveries.getStatus(s.reference)).status).toBe('UPCOMING');
    } finally {
      await rotating.close();
    }
  });

  it.each([
    ['a signature made with another secret', (evt: { id: string }) => signed(evt, generateWebhookSecret())],
    ['no signature headers', (evt: { id: string }) => ({ body: JSON.stringify(evt), headers: {} })],
    ['a timestamp ten minutes old', (evt: { id: string }) => signed(evt, undefined, Date.now() - 10 * 60_000)],
    [
      'a body changed after signing',
      (evt: { id: string }) => {
        const s = signed(evt);
        return { body: s.body.replace('PICKED_UP', 'DELIVERED'), headers: s.headers };
      },
    ],
  ])('answers 401 to %s and changes nothing', async (_what, make) => {
    const s = await followedDelivery();
    const { body, headers } = make(event(s.deliveryId!, 'PICKED_UP'));
    const res = await post(body, headers);
    expect(res.status).toBe(401);
    expect(res.body.outcome).toBe('rejected');
    expect((await stack.deliveries.getStatus(s.reference)).status).toBe('CREATED');
  });

  it('answers 400 to a signed body that is not JSON, or not an event, naming the field', async () => {
    const notJson = 'not json';
    const r1 = await post(notJson, { ...signWebhook(stack.webhookSecret, 'evt_x1', Math.floor(Date.now() / 1000), notJson) });
    expect(r1.status).toBe(400);
    expect(r1.body.reason).toMatch(/not valid JSON/);

    const notEvent = JSON.stringify({ id: 'evt_x2', type: 'delivery.status_changed', created_at: new Date().toISOString(), data: {} });
    const r2 = await post(notEvent, { ...signWebhook(stack.webhookSecret, 'evt_x2', Math.floor(Date.now() / 1000), notEvent) });
    expect(r2.status).toBe(400);
    expect(JSON.stringify(r2.body.details)).toContain('data.delivery_id');
  });

  it('answers 413 to an oversized body and 415 to a wrong content type', async () => {
    const huge = Buffer.alloc(200 * 1024, 'a');
    expect((await post(huge, {})).status).toBe(413);
    const res = await request(stack.bridgeUrl + WEBHOOK_PATH, { method: 'POST', body: '{}', headers: { 'content-type': 'text/plain' } });
    await res.body.dump();
    expect(res.statusCode).toBe(415);
  });

  it('answers 503 with Retry-After for an unknown delivery, so the provider retries', async () => {
    const { body, headers } = signed(event('del_doesnotexist', 'ASSIGNED'));
    const res = await post(body, headers);
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('1');
  });

  it('answers 503 with Retry-After while the workflow of a delivery does not exist yet', async () => {
    const provider = new ProviderClient({ baseUrl: stack.simUrl, apiKey: SANDBOX_KEY });
    const reference = `NOWF-${Date.now()}`;
    const { delivery } = await provider.createDelivery({ ...deliveryRequest({}, 1), reference_number: reference }, { idempotencyKey: reference });
    await provider.close();
    const { body, headers } = signed(event(delivery.id, 'ASSIGNED'));
    const res = await post(body, headers);
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ outcome: 'retry_later', reason: 'workflow not started yet', workflow_id: `delivery:${reference}` });
    expect(res.headers['retry-after']).toBe('1');
  });

  it('acknowledges an event for a delivery whose workflow has ended, and says so', async () => {
    const s = await followedDelivery();
    await stack.temporal.workflow.getHandle(`delivery:${s.reference}`).terminate('ended for the test');
    const { body, headers } = signed(event(s.deliveryId!, 'ASSIGNED'));
    const res = await post(body, headers);
    expect(res.status).toBe(200);
    expect(res.body.outcome).toBe('workflow_closed');
  });

  it('answers its health check', async () => {
    const res = await request(stack.bridgeUrl + '/healthz');
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ ok: true });
  });
});
