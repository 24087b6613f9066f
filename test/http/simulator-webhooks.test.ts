/**
 * Webhooks over real HTTP: every signature checked with the independent `standardwebhooks`
 * package, one event per status change in order, the retry schedule (7 attempts, scaled) and
 * the log/dashboard state, and the drop/duplicate/reorder faults.
 */
import { Webhook } from 'standardwebhooks';
import { WebhookEventSchema, type WebhookEvent } from '../../provider/schemas';
import { generateWebhookSecret, secretFingerprint } from '../../provider/webhook-signature';
import { simulatorConfigFromEnv } from '../../simulator/config';
import { createSimulator } from '../../simulator/server';
import type { WebhookAttempt, WebhookDispatch } from '../../simulator/webhooks';
import { call, createBody, destination, sleep, startReceiver, startSimulator, type Receiver, type Started } from './simulator-fixtures';

const secret = generateWebhookSecret();
let s: Started;
let rx: Receiver;
let answer = 204;

beforeAll(async () => {
  // 5 s … 1 h retry delays become 0.5 ms … 360 ms.
  s = await startSimulator({ timeScale: 10_000, seed: 42 });
  rx = await startReceiver(() => answer);
});
afterAll(async () => {
  await s.sim.close();
  await rx.close();
  expect(s.errors).toEqual([]);
});
beforeEach(async () => {
  s.sim.reset();
  rx.received.length = 0;
  answer = 204;
  const a = await call(s.url, 'PUT', '/_sim/webhook-endpoint', { key: null, body: { url: rx.url, secret } });
  expect(a.json).toEqual({ url: rx.url, secret_fingerprint: secretFingerprint(secret) });
});

async function createDelivery(n = 1): Promise<{ id: string; destinations: string[] }> {
  const a = await call(s.url, 'POST', '/v1/deliveries', { body: createBody({ destinations: Array.from({ length: n }, () => destination()) }) });
  const d = a.json as { id: string; destinations: { id: string }[] };
  return { id: d.id, destinations: d.destinations.map((x) => x.id) };
}

function verified(): WebhookEvent[] {
  const wh = new Webhook(secret);
  return rx.received.map((r) => {
    expect(r.headers['content-type']).toBe('application/json');
    wh.verify(r.body, r.headers);
    const e = WebhookEventSchema.parse(JSON.parse(r.body));
    expect(r.headers['webhook-id']).toBe(e.id);
    expect(Math.abs(Number(r.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    return e;
  });
}

const summary = (e: WebhookEvent) => ('destination_id' in e.data ? `${e.data.destination_id}:${e.data.status}` : `delivery:${e.data.status}`);

test('one signed event per status change, in order, destination events carry destination_id', async () => {
  const d = await createDelivery(2);
  const [d1, d2] = d.destinations as [string, string];
  for (let i = 0; i < 4; i++) await call(s.url, 'POST', `/_sim/deliveries/${d.id}/advance`, { key: null });
  await call(s.url, 'POST', `/_sim/deliveries/${d.id}/advance`, { key: null, body: { destination_id: d2, status: 'FAILED' } });
  await rx.waitFor(8);
  await sleep(50);
  const events = verified();
  expect(events.map(summary)).toEqual([
    'delivery:ASSIGNED',
    'delivery:UPCOMING',
    'delivery:PICKED_UP',
    `${d1}:IN_TRANSIT`,
    `${d2}:IN_TRANSIT`,
    `${d1}:DELIVERED`,
    `${d2}:FAILED`,
    'delivery:DELIVERED',
  ]);
  for (const e of events) expect(e.data.delivery_id).toBe(d.id);
  expect(new Set(events.map((e) => e.id)).size).toBe(8);
  expect(events.filter((e) => e.type === 'delivery.status_changed').every((e) => !('destination_id' in e.data))).toBe(true);

  const log = (await call(s.url, 'GET', '/_sim/webhooks', { key: null })).json as { data: WebhookAttempt[]; events: WebhookDispatch[] };
  expect(log.data).toHaveLength(8);
  expect(log.data.every((a) => a.outcome === 'delivered' && a.attempt === 1 && a.answer_status === 204 && a.url === rx.url)).toBe(true);
  expect(log.events.every((e) => e.state === 'delivered')).toBe(true);
});

test('cancel emits the delivery event and one per open destination', async () => {
  const d = await createDelivery(2);
  await call(s.url, 'POST', `/v1/deliveries/${d.id}/actions/cancel`);
  await rx.waitFor(3);
  await sleep(30);
  expect(verified().map(summary)).toEqual(['delivery:CANCELED', `${d.destinations[0]}:CANCELED`, `${d.destinations[1]}:CANCELED`]);
});

test('setting the current status again emits nothing', async () => {
  const d = await createDelivery();
  await call(s.url, 'POST', `/_sim/deliveries/${d.id}/advance`, { key: null, body: { status: 'CREATED' } });
  await call(s.url, 'POST', `/_sim/deliveries/${d.id}/advance`, { key: null, body: { status: 'ASSIGNED' } });
  await rx.waitFor(1);
  await sleep(50);
  expect(verified().map(summary)).toEqual(['delivery:ASSIGNED']);
});

test('a receiver that always fails gets exactly 7 attempts, then the log says failed for good', async () => {
  answer = 500;
  const d = await createDelivery();
  s.sim.advance(d.id);
  await s.sim.webhooksIdle(5_000);
  expect(rx.received).toHaveLength(7);
  const ids = new Set(verified().map((e) => e.id));
  expect(ids.size).toBe(1);
  const log = (await call(s.url, 'GET', '/_sim/webhooks', { key: null })).json as { data: WebhookAttempt[]; events: WebhookDispatch[]; next: number };
  expect(log.data.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  expect(log.data.map((a) => a.outcome)).toEqual([...Array<string>(6).fill('retrying'), 'failed_for_good']);
  expect(log.data.slice(0, 6).every((a) => a.next_attempt_at !== null && a.answer_status === 500)).toBe(true);
  expect(log.data[6]?.next_attempt_at).toBeNull();
  expect(log.events).toEqual([expect.objectContaining({ state: 'failed', attempts: 7, delivery_id: d.id, status: 'ASSIGNED' })]);
  const page = await call(s.url, 'GET', '/_sim', { key: null });
  expect(page.text).toContain('failed for good after 7 attempts');
  // Incremental read.
  const more = (await call(s.url, 'GET', `/_sim/webhooks?since=${log.next}`, { key: null })).json as { data: unknown[] };
  expect(more.data).toEqual([]);
});

test('a receiver that recovers: retried until a 2xx, each attempt re-signed', async () => {
  answer = 503;
  const d = await createDelivery();
  s.sim.advance(d.id);
  while (rx.received.length < 3) await sleep(1);
  answer = 200;
  const calls = rx.received.length;
  await s.sim.webhooksIdle(5_000);
  expect(rx.received.length).toBe(calls + 1);
  verified();
  const e = s.sim.webhookEvents()[0];
  expect(e?.state).toBe('delivered');
  expect(e?.attempts).toBe(calls + 1);
});

test('connection errors are retried and logged, the simulator stays up', async () => {
  s.sim.setWebhookEndpoint({ url: 'http://127.0.0.1:1/hooks', secret });
  const d = await createDelivery();
  s.sim.advance(d.id);
  await s.sim.webhooksIdle(10_000);
  const attempts = s.sim.webhookAttempts();
  expect(attempts).toHaveLength(7);
  expect(attempts.every((a) => a.answer_status === null && a.error !== null)).toBe(true);
  expect((await call(s.url, 'GET', '/v1/health/token')).status).toBe(200);
});

test('without an endpoint, events are recorded as not sent', async () => {
  await call(s.url, 'PUT', '/_sim/webhook-endpoint', { key: null, body: { url: null } });
  const d = await createDelivery();
  s.sim.advance(d.id);
  expect(s.sim.webhookEvents()).toEqual([expect.objectContaining({ state: 'no_endpoint' })]);
});

test('PUT /_sim/webhook-endpoint needs a secret; the endpoint is shown with its fingerprint, never the secret', async () => {
  const before = (await call(s.url, 'GET', '/_sim/webhook-endpoint', { key: null })).json;
  const refused = await call(s.url, 'PUT', '/_sim/webhook-endpoint', { key: null, body: { url: rx.url } });
  expect(refused.status).toBe(422);
  expect((await call(s.url, 'GET', '/_sim/webhook-endpoint', { key: null })).json).toEqual(before);
  const secret = generateWebhookSecret();
  const set = await call(s.url, 'PUT', '/_sim/webhook-endpoint', { key: null, body: { url: rx.url, secret } });
  expect(set.json).toEqual({ url: rx.url, secret_fingerprint: secretFingerprint(secret) });
  const shown = await call(s.url, 'GET', '/_sim/webhook-endpoint', { key: null });
  expect(shown.text).not.toContain(secret.slice('whsec_'.length, 20));
  const d = await createDelivery();
  s.sim.advance(d.id);
  await rx.waitFor(1);
  const r = rx.received[0]!;
  expect(() => new Webhook(secret).verify(r.body, r.headers)).not.toThrow();
});

test('weak or malformed secrets are refused, by the API and at start', async () => {
  const weak = ['whsec_AB', 'whsec_!!AB??', 'whsec_' + Buffer.alloc(23, 1).toString('base64'), 'whsec_' + Buffer.alloc(65, 1).toString('base64'), 'whsec_' + Buffer.alloc(24, 1).toString('base64').slice(0, -1) + ' '];
  for (const secret of weak) {
    const a = await call(s.url, 'PUT', '/_sim/webhook-endpoint', { key: null, body: { url: rx.url, secret } });
    expect(a.status).toBe(422);
    expect(a.text).not.toContain(secret);
    expect(() => createSimulator({ webhook: { url: rx.url, secret } })).toThrow(/webhook secret/);
  }
  expect(() => simulatorConfigFromEnv({ SIMULATOR_WEBHOOK_URL: rx.url, SIMULATOR_WEBHOOK_SECRET: 'whsec_AB' })).toThrow(/SIMULATOR_WEBHOOK_SECRET/);
});

describe('faults', () => {
  test('webhook_drop_rate 1: nothing is sent, events show dropped', async () => {
    await call(s.url, 'POST', '/_sim/faults', { key: null, body: { webhook_drop_rate: 1 } });
    const d = await createDelivery();
    s.sim.advance(d.id);
    s.sim.advance(d.id);
    await sleep(100);
    expect(rx.received).toHaveLength(0);
    expect(s.sim.webhookEvents().map((e) => e.state)).toEqual(['dropped', 'dropped']);
  });

  test('webhook_duplicate_rate 1: every event arrives twice with the same id', async () => {
    await call(s.url, 'POST', '/_sim/faults', { key: null, body: { webhook_duplicate_rate: 1 } });
    const d = await createDelivery();
    s.sim.advance(d.id);
    s.sim.advance(d.id);
    await rx.waitFor(4);
    await s.sim.webhooksIdle();
    const events = verified();
    expect(events).toHaveLength(4);
    expect(new Set(events.map((e) => e.id)).size).toBe(2);
    expect(events.map(summary).sort()).toEqual(['delivery:ASSIGNED', 'delivery:ASSIGNED', 'delivery:UPCOMING', 'delivery:UPCOMING']);
  });

  test('webhook_reorder_rate 1: an event is held back and sent after the next one', async () => {
    await call(s.url, 'POST', '/_sim/faults', { key: null, body: { webhook_reorder_rate: 1 } });
    const d = await createDelivery();
    s.sim.advance(d.id);
    s.sim.advance(d.id);
    await rx.waitFor(2);
    await s.sim.webhooksIdle();
    expect(verified().map(summary)).toEqual(['delivery:UPCOMING', 'delivery:ASSIGNED']);
  });

  test('a held-back event with no successor is still sent', async () => {
    await call(s.url, 'POST', '/_sim/faults', { key: null, body: { webhook_reorder_rate: 1 } });
    const d = await createDelivery();
    s.sim.advance(d.id);
    await rx.waitFor(1);
    expect(verified().map(summary)).toEqual(['delivery:ASSIGNED']);
  });
});

test('auto mode advances deliveries to DELIVERED and emits every change', async () => {
  const auto = await startSimulator({ timeScale: 1_000, autoAdvanceMs: 10_000, webhook: { url: rx.url, secret } }); // one step per 10 ms
  try {
    const a = await call(auto.url, 'POST', '/v1/deliveries', { body: createBody({ destinations: [destination(), destination()] }) });
    const id = (a.json as { id: string }).id;
    // ASSIGNED, UPCOMING, PICKED_UP (+2 IN_TRANSIT), dst1 DELIVERED, dst2 DELIVERED (+ delivery DELIVERED)
    await rx.waitFor(8);
    await auto.sim.webhooksIdle();
    const events = verified();
    expect(events.filter((e) => e.data.delivery_id === id).map((e) => e.data.status)).toEqual([
      'ASSIGNED',
      'UPCOMING',
      'PICKED_UP',
      'IN_TRANSIT',
      'IN_TRANSIT',
      'DELIVERED',
      'DELIVERED',
      'DELIVERED',
    ]);
    const order = (await call(auto.url, 'GET', `/v1/orders?delivery_id=${id}`)).json as { data: { status: string }[] };
    expect(order.data[0]?.status).toBe('INVOICED');
  } finally {
    await auto.sim.close();
  }
});
