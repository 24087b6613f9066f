/**
 * The simulator as an attacker's web page would meet it (issue 17): a cross-site form POST, a
 * foreign Origin, a DNS-rebinding Host. Each is refused, and nothing is lost or changed.
 */
import { generateWebhookSecret } from '../../provider/webhook-signature';
import { rawRequest } from '../helpers/http';
import { call, createBody, startReceiver, startSimulator, type Receiver, type Started } from './simulator-fixtures';

let s: Started;
let rx: Receiver;
const secret = generateWebhookSecret();
let deliveryId: string;

beforeAll(async () => {
  s = await startSimulator({ allowedHosts: ['simulator:4010'] });
  rx = await startReceiver();
  s.sim.setWebhookEndpoint({ url: rx.url, secret });
  const created = await call(s.url, 'POST', '/v1/deliveries', { body: createBody() });
  expect(created.status).toBe(201);
  deliveryId = (created.json as { id: string }).id;
});
afterAll(async () => {
  await s.sim.close();
  await rx.close();
  expect(s.errors).toEqual([]);
});

const port = () => new URL(s.url).port;
const state = () => JSON.stringify(s.sim.deliveries());

test('a cross-site form POST to reset or advance (no body, text/plain or form type) changes nothing', async () => {
  const before = state();
  const forms: Record<string, string>[] = [
    {}, // no content type at all: the empty form POST
    { 'content-type': 'text/plain' },
    { 'content-type': 'application/x-www-form-urlencoded' },
    { 'content-type': 'multipart/form-data; boundary=x' },
  ];
  for (const headers of forms) {
    for (const path of ['/_sim/reset', `/_sim/deliveries/${deliveryId}/advance`, '/_sim/faults']) {
      const a = await rawRequest(s.url + path, { method: 'POST', headers });
      expect(a.status).toBe(415);
    }
  }
  // The same from a foreign page with the right content type: the Origin stops it.
  for (const origin of ['http://evil.example', 'null', `http://127.0.0.1:${Number(port()) + 1}`]) {
    const a = await rawRequest(s.url + '/_sim/reset', { method: 'POST', headers: { 'content-type': 'application/json', origin } });
    expect(a.status).toBe(403);
    expect(JSON.parse(a.text)).toMatchObject({ error: { code: 'origin_not_allowed' } });
  }
  expect(state()).toBe(before);
  expect(s.sim.deliveries()).toHaveLength(1);
});

test('a DNS-rebinding Host reads nothing: no delivery, no phone, no secret, no dashboard', async () => {
  for (const path of ['/_sim/deliveries', '/_sim/webhook-endpoint', '/_sim', '/_sim/webhooks', `/v1/deliveries/${deliveryId}`]) {
    const a = await rawRequest(s.url + path, { headers: { host: `evil.example:${port()}`, authorization: 'Bearer sandbox-key' } });
    expect(a.status).toBe(403);
    expect(a.text).not.toContain(deliveryId);
    expect(a.text).not.toContain('+49');
    expect(JSON.parse(a.text)).toMatchObject({ error: { code: 'host_not_allowed' } });
  }
});

test('its own names work: 127.0.0.1, localhost, a configured name; the endpoint shows a fingerprint only', async () => {
  for (const host of [`127.0.0.1:${port()}`, `localhost:${port()}`, 'simulator:4010', 'SIMULATOR:4010']) {
    const a = await rawRequest(s.url + '/_sim/deliveries', { headers: { host } });
    expect(a.status).toBe(200);
    expect(a.text).toContain(deliveryId);
  }
  const same = await rawRequest(s.url + '/_sim/faults', { method: 'POST', headers: { 'content-type': 'application/json', origin: s.url }, body: '{}' });
  expect(same.status).toBe(200);
  const ep = await rawRequest(s.url + '/_sim/webhook-endpoint');
  expect(JSON.parse(ep.text)).toEqual({ url: rx.url, secret_fingerprint: expect.stringMatching(/^sha256:[0-9a-f]{12}$/) });
  expect(ep.text).not.toContain(secret.slice(6, 20));
  const dashboard = await rawRequest(s.url + '/_sim');
  expect(dashboard.text).not.toContain(secret.slice(6, 20));
});

test('the provider API refuses a foreign Origin but keeps its bodiless POSTs for servers', async () => {
  const foreign = await rawRequest(`${s.url}/v1/deliveries/${deliveryId}/actions/cancel`, { method: 'POST', headers: { authorization: 'Bearer sandbox-key', origin: 'http://evil.example' } });
  expect(foreign.status).toBe(403);
  expect(s.sim.deliveries()[0]!.delivery.status).toBe('CREATED');
  const server = await rawRequest(`${s.url}/v1/deliveries/${deliveryId}/actions/cancel`, { method: 'POST', headers: { authorization: 'Bearer sandbox-key' } });
  expect(server.status).toBe(200);
  expect(s.sim.deliveries()[0]!.delivery.status).toBe('CANCELED');
});

test('POST /_sim/deliveries/{id}/fail-reads makes the next reads of that delivery answer 503, then serves it again', async () => {
  const created = await call(s.url, 'POST', '/v1/deliveries', { body: createBody() });
  const id = (created.json as { id: string }).id;
  expect((await call(s.url, 'POST', `/_sim/deliveries/${id}/fail-reads`, { key: null, body: { count: 2 } })).status).toBe(200);
  expect((await call(s.url, 'GET', `/v1/deliveries/${deliveryId}`)).status).toBe(200); // another delivery: unaffected
  expect((await call(s.url, 'GET', `/v1/deliveries/${id}`)).status).toBe(503);
  expect((await call(s.url, 'GET', `/v1/deliveries/${id}`)).status).toBe(503);
  const read = await call(s.url, 'GET', `/v1/deliveries/${id}`);
  expect(read.status).toBe(200);
  expect((read.json as { id: string }).id).toBe(id);
  expect((await call(s.url, 'POST', '/_sim/deliveries/del_nobody/fail-reads', { key: null, body: { count: 1 } })).status).toBe(404);
});
