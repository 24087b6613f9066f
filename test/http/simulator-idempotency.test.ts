/**
 * Idempotency-Key on POST /v1/deliveries: same key + same body → the first delivery (200, its
 * current record); different body → 409; per key; expires after 24 h (scaled); and a provider
 * that ignores the header (fault) creates a second delivery.
 */
import { DeliveryRecordSchema, ErrorBodySchema } from '../../provider/schemas';
import { call, createBody, sleep, startSimulator, type Started } from './simulator-fixtures';

let s: Started;
beforeAll(async () => {
  s = await startSimulator({ apiKeys: ['second-key'] });
});
afterAll(async () => {
  await s.sim.close();
  expect(s.errors).toEqual([]);
});
beforeEach(() => s.sim.reset());

const post = (body: unknown, key: string, apiKey?: string) => call(s.url, 'POST', '/v1/deliveries', { body, key: apiKey, headers: { 'idempotency-key': key } });

test('same key and same body: one delivery, 200 with the current record the second time', async () => {
  const body = createBody({ reference_number: 'R-1' });
  const first = await post(body, 'abc');
  expect(first.status).toBe(201);
  const d = DeliveryRecordSchema.parse(first.json);
  s.sim.advance(d.id);

  // Same content with keys in another order and other whitespace is the same body.
  const reordered = JSON.parse(JSON.stringify(Object.fromEntries(Object.entries(body).reverse()))) as unknown;
  const again = await post(reordered, 'abc');
  expect(again.status).toBe(200);
  const r = DeliveryRecordSchema.parse(again.json);
  expect(r.id).toBe(d.id);
  expect(r.status).toBe('ASSIGNED');
  expect(s.sim.deliveries()).toHaveLength(1);
});

test('same key and a different body: 409 idempotency_conflict', async () => {
  expect((await post(createBody({ is_food: false }), 'k')).status).toBe(201);
  const a = await post(createBody({ is_food: true }), 'k');
  expect(a.status).toBe(409);
  expect(ErrorBodySchema.parse(a.json).error.code).toBe('idempotency_conflict');
  expect(s.sim.deliveries()).toHaveLength(1);
});

test('keys are per API key, and different keys create different deliveries', async () => {
  const body = createBody();
  const a = DeliveryRecordSchema.parse((await post(body, 'k')).json);
  const b = await post(body, 'k', 'second-key');
  expect(b.status).toBe(201);
  expect(DeliveryRecordSchema.parse(b.json).id).not.toBe(a.id);
  const c = await post(body, 'k2');
  expect(c.status).toBe(201);
  expect(s.sim.deliveries()).toHaveLength(3);
});

test('a replay still answers after the pickup time has passed', async () => {
  let t = Date.now();
  const timed = await startSimulator({ clock: () => t });
  try {
    const body = createBody({ desired_pickup_time: new Date(t + 60_000).toISOString() });
    const first = await call(timed.url, 'POST', '/v1/deliveries', { body, headers: { 'idempotency-key': 'x' } });
    expect(first.status).toBe(201);
    t += 10 * 60_000;
    const again = await call(timed.url, 'POST', '/v1/deliveries', { body, headers: { 'idempotency-key': 'x' } });
    expect(again.status).toBe(200);
    expect(DeliveryRecordSchema.parse(again.json).id).toBe(DeliveryRecordSchema.parse(first.json).id);
    // After 24 h the key is forgotten: the body is judged afresh (and its pickup time is past now).
    t += 24 * 3_600_000;
    expect((await call(timed.url, 'POST', '/v1/deliveries', { body, headers: { 'idempotency-key': 'x' } })).status).toBe(422);
  } finally {
    await timed.sim.close();
  }
});

test('the 24 h memory is scaled by the time scale', async () => {
  const fast = await startSimulator({ timeScale: 24 * 3_600 * 4 }); // 24 h → 250 ms
  try {
    const body = createBody();
    expect((await call(fast.url, 'POST', '/v1/deliveries', { body, headers: { 'idempotency-key': 'y' } })).status).toBe(201);
    expect((await call(fast.url, 'POST', '/v1/deliveries', { body, headers: { 'idempotency-key': 'y' } })).status).toBe(200);
    await sleep(300);
    expect((await call(fast.url, 'POST', '/v1/deliveries', { body, headers: { 'idempotency-key': 'y' } })).status).toBe(201);
  } finally {
    await fast.sim.close();
  }
});

test('with ignore_idempotency_keys a second delivery is created', async () => {
  const f = await call(s.url, 'POST', '/_sim/faults', { key: null, body: { ignore_idempotency_keys: true } });
  expect((f.json as { ignore_idempotency_keys: boolean }).ignore_idempotency_keys).toBe(true);
  const body = createBody();
  const a = await post(body, 'same');
  const b = await post(body, 'same');
  expect([a.status, b.status]).toEqual([201, 201]);
  expect(DeliveryRecordSchema.parse(a.json).id).not.toBe(DeliveryRecordSchema.parse(b.json).id);
});

test('an over-long Idempotency-Key is 422', async () => {
  const a = await post(createBody(), 'k'.repeat(256));
  expect(a.status).toBe(422);
  expect(ErrorBodySchema.parse(a.json).error.details?.[0]?.field).toBe('Idempotency-Key');
});
