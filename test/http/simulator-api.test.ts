/**
 * The simulator's /v1 API over real HTTP: every call family, every error answer, key scoping,
 * and that the server keeps answering after each bad request. Answers are parsed with the
 * contract's own schemas.
 */
import {
  DeliveryListSchema,
  DeliveryRecordSchema,
  ERROR_CODES,
  ErrorBodySchema,
  KeyCheckSchema,
  OrderListSchema,
  OrderRecordSchema,
  QuoteSchema,
  type DeliveryRecord,
} from '../../provider/schemas';
import { call, createBody, destination, startSimulator, type Answer, type Started } from './simulator-fixtures';

let s: Started;
beforeAll(async () => {
  s = await startSimulator({ apiKeys: ['second-key', 'third-key'] });
});
afterAll(async () => {
  await s.sim.close();
  expect(s.errors).toEqual([]);
});
beforeEach(() => s.sim.reset());

function errorOf(a: Answer, status: number, code: string) {
  expect(a.status).toBe(status);
  const body = ErrorBodySchema.parse(a.json);
  expect(body.error.code).toBe(code);
  return body.error;
}

async function create(body = createBody(), key?: string): Promise<DeliveryRecord> {
  const a = await call(s.url, 'POST', '/v1/deliveries', { body, key });
  expect(a.status).toBe(201);
  return DeliveryRecordSchema.parse(a.json);
}

/** The simulator must still answer a good call after a bad one. */
async function stillUp() {
  const a = await call(s.url, 'GET', '/v1/health/token');
  expect(a.status).toBe(200);
}

describe('happy paths', () => {
  test('create, get, list, orders, key check', async () => {
    const d = await create(createBody({ reference_number: 'REF-1', destinations: [destination({ reference_number: 'D-1' }), destination({ package_type: 'XLARGE' })] }));
    expect(d.id).toMatch(/^del_[A-Za-z0-9_-]+$/);
    expect(d.status).toBe('CREATED');
    expect(d.reference_number).toBe('REF-1');
    expect(d.destinations.map((x) => x.status)).toEqual(['PENDING', 'PENDING']);
    expect(d.destinations[0]?.id).toMatch(/^dst_/);
    expect(d.destinations[0]?.tracking_url).toBe(`${s.url}/track/${d.destinations[0]?.id}`);
    expect(d.destinations[0]?.reference_number).toBe('D-1');
    expect(d.destinations[1]?.reference_number).toBeNull();
    expect(d.price).toEqual({ amount: 490 + 260 + 120 + 260 + 650, currency: 'EUR' });

    const got = await call(s.url, 'GET', `/v1/deliveries/${d.id}`);
    expect(got.status).toBe(200);
    expect(DeliveryRecordSchema.parse(got.json)).toEqual(d);

    const list = DeliveryListSchema.parse((await call(s.url, 'GET', '/v1/deliveries')).json);
    expect(list).toMatchObject({ page: 1, page_size: 20, has_more: false });
    expect(list.data.map((x) => x.id)).toEqual([d.id]);

    const orders = OrderListSchema.parse((await call(s.url, 'GET', `/v1/orders?delivery_id=${d.id}`)).json);
    expect(orders.data).toHaveLength(1);
    const order = orders.data[0]!;
    expect(order).toMatchObject({ delivery_id: d.id, amount: d.price.amount, currency: 'EUR', status: 'OPEN' });
    expect(order.id).toMatch(/^ord_/);
    const one = await call(s.url, 'GET', `/v1/orders/${order.id}`);
    expect(OrderRecordSchema.parse(one.json)).toEqual(order);

    expect(KeyCheckSchema.parse((await call(s.url, 'GET', '/v1/health/token')).json)).toEqual({ valid: true });
  });

  test('quote: contract layout, price equals the created delivery price, expires in 15 minutes', async () => {
    const body = createBody({ is_food: true, destinations: [destination({ package_type: 'LARGE' }), destination({ package_type: 'SMALL' })] });
    const before = Date.now();
    const a = await call(s.url, 'POST', '/v1/quotes', { body });
    expect(a.status).toBe(200);
    const q = QuoteSchema.parse(a.json);
    const expires = Date.parse(q.expires_at) - before;
    expect(expires).toBeGreaterThanOrEqual(15 * 60_000 - 50);
    expect(expires).toBeLessThanOrEqual(15 * 60_000 + 1_000);
    const d = await create(body);
    expect(d.price).toEqual(q.price);
    expect(q.price.amount).toBe(490 + 180 + 2 * 260 + 300 + 0);
  });

  test('list: newest first, pages, filters by status and reference_number', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create(createBody({ reference_number: `R${i % 2}` }))).id);
    const p1 = DeliveryListSchema.parse((await call(s.url, 'GET', '/v1/deliveries?page_size=2')).json);
    expect(p1.data.map((d) => d.id)).toEqual([ids[4], ids[3]]);
    expect(p1.has_more).toBe(true);
    const p3 = DeliveryListSchema.parse((await call(s.url, 'GET', '/v1/deliveries?page_size=2&page=3')).json);
    expect(p3.data.map((d) => d.id)).toEqual([ids[0]]);
    expect(p3.has_more).toBe(false);

    const r1 = DeliveryListSchema.parse((await call(s.url, 'GET', '/v1/deliveries?reference_number=R1')).json);
    expect(r1.data.map((d) => d.id)).toEqual([ids[3], ids[1]]);

    s.sim.advance(ids[2]!);
    const assigned = DeliveryListSchema.parse((await call(s.url, 'GET', '/v1/deliveries?status=ASSIGNED')).json);
    expect(assigned.data.map((d) => d.id)).toEqual([ids[2]]);

    errorOf(await call(s.url, 'GET', '/v1/deliveries?page_size=101'), 422, 'validation_failed');
    const bad = errorOf(await call(s.url, 'GET', '/v1/deliveries?page=0'), 422, 'validation_failed');
    expect(bad.details?.[0]?.field).toBe('page');
    const orders = OrderListSchema.parse((await call(s.url, 'GET', '/v1/orders?page_size=3')).json);
    expect(orders.data.map((o) => o.delivery_id)).toEqual([ids[4], ids[3], ids[2]]);
  });

  test('update while CREATED: fields change, price and order amount follow', async () => {
    const d = await create();
    const dst = d.destinations[0]!;
    const a = await call(s.url, 'PATCH', `/v1/deliveries/${d.id}`, {
      body: { is_food: true, destinations: [{ id: dst.id, package_type: 'XLARGE', location: { ...dst.location, last_name: 'Roe' } }] },
    });
    expect(a.status).toBe(200);
    const u = DeliveryRecordSchema.parse(a.json);
    expect(u.is_food).toBe(true);
    expect(u.destinations[0]).toMatchObject({ id: dst.id, package_type: 'XLARGE', location: { last_name: 'Roe' } });
    expect(u.price.amount).toBe(490 + 180 + 260 + 650);
    const order = OrderListSchema.parse((await call(s.url, 'GET', `/v1/orders?delivery_id=${d.id}`)).json).data[0];
    expect(order?.amount).toBe(u.price.amount);
    // The tracking index still sees the same destination object.
    expect((await call(s.url, 'GET', `/track/${dst.id}`, { key: null })).status).toBe(200);
  });

  test('update: unknown destination id and a window against the unchanged bound are 422 naming the field', async () => {
    const d = await create();
    const dst = d.destinations[0]!;
    const e1 = errorOf(await call(s.url, 'PATCH', `/v1/deliveries/${d.id}`, { body: { destinations: [{ id: 'dst_nope', package_type: 'SMALL' }] } }), 422, 'validation_failed');
    expect(e1.details).toEqual([expect.objectContaining({ field: 'destinations[0].id' })]);
    const before = new Date(Date.parse(dst.time_window_start) - 60_000).toISOString();
    const e2 = errorOf(await call(s.url, 'PATCH', `/v1/deliveries/${d.id}`, { body: { destinations: [{ id: dst.id, time_window_end: before }] } }), 422, 'validation_failed');
    expect(e2.details).toEqual([expect.objectContaining({ field: 'destinations[0].time_window_end' })]);
    const after = new Date(Date.parse(dst.time_window_end) + 60_000).toISOString();
    const e3 = errorOf(await call(s.url, 'PATCH', `/v1/deliveries/${d.id}`, { body: { destinations: [{ id: dst.id, time_window_start: after }] } }), 422, 'validation_failed');
    expect(e3.details).toEqual([expect.objectContaining({ field: 'destinations[0].time_window_start' })]);
    errorOf(await call(s.url, 'PATCH', `/v1/deliveries/${d.id}`, { body: {} }), 422, 'validation_failed');
  });

  test('cancel before pickup: delivery, destinations and order CANCELED', async () => {
    const d = await create(createBody({ destinations: [destination(), destination()] }));
    s.sim.advance(d.id, { destination_id: d.destinations[1]!.id, status: 'FAILED' });
    const a = await call(s.url, 'POST', `/v1/deliveries/${d.id}/actions/cancel`);
    expect(a.status).toBe(200);
    const c = DeliveryRecordSchema.parse(a.json);
    expect(c.status).toBe('CANCELED');
    expect(c.destinations.map((x) => x.status)).toEqual(['CANCELED', 'FAILED']);
    const order = OrderListSchema.parse((await call(s.url, 'GET', `/v1/orders?delivery_id=${d.id}`)).json).data[0];
    expect(order?.status).toBe('CANCELED');
    errorOf(await call(s.url, 'POST', `/v1/deliveries/${d.id}/actions/cancel`), 409, 'conflict');
  });

  test('full lifecycle through the control API; order INVOICED when DELIVERED', async () => {
    const d = await create(createBody({ destinations: [destination(), destination()] }));
    for (const expected of ['ASSIGNED', 'UPCOMING', 'PICKED_UP']) {
      const a = await call(s.url, 'POST', `/_sim/deliveries/${d.id}/advance`, { key: null });
      expect(DeliveryRecordSchema.parse(a.json).status).toBe(expected);
    }
    let r = DeliveryRecordSchema.parse((await call(s.url, 'GET', `/v1/deliveries/${d.id}`)).json);
    expect(r.destinations.map((x) => x.status)).toEqual(['IN_TRANSIT', 'IN_TRANSIT']);
    r = DeliveryRecordSchema.parse((await call(s.url, 'POST', `/_sim/deliveries/${d.id}/advance`, { key: null })).json);
    expect(r.status).toBe('PICKED_UP');
    expect(r.destinations.map((x) => x.status)).toEqual(['DELIVERED', 'IN_TRANSIT']);
    r = DeliveryRecordSchema.parse(
      (await call(s.url, 'POST', `/_sim/deliveries/${d.id}/advance`, { key: null, body: { destination_id: d.destinations[1]!.id, status: 'FAILED' } })).json,
    );
    expect(r.status).toBe('DELIVERED');
    expect(r.destinations.map((x) => x.status)).toEqual(['DELIVERED', 'FAILED']);
    const order = OrderListSchema.parse((await call(s.url, 'GET', `/v1/orders?delivery_id=${d.id}`)).json).data[0];
    expect(order?.status).toBe('INVOICED');
    errorOf(await call(s.url, 'POST', `/_sim/deliveries/${d.id}/advance`, { key: null }), 409, 'conflict');
  });

  test('an unknown future status set through the control API is kept and served', async () => {
    const d = await create();
    const a = await call(s.url, 'POST', `/_sim/deliveries/${d.id}/advance`, { key: null, body: { status: 'RETURNED_TO_SENDER' } });
    expect(a.status).toBe(200);
    const r = DeliveryRecordSchema.parse((await call(s.url, 'GET', `/v1/deliveries/${d.id}`)).json);
    expect(r.status).toBe('RETURNED_TO_SENDER');
    errorOf(await call(s.url, 'POST', `/v1/deliveries/${d.id}/actions/cancel`), 409, 'conflict');
  });
});

describe('errors', () => {
  test('401 for a missing, malformed or wrong key; the known extra keys work', async () => {
    const missing = errorOf(await call(s.url, 'GET', '/v1/health/token', { key: null }), 401, 'unauthorized');
    expect(missing.message).toMatch(/Authorization/);
    errorOf(await call(s.url, 'GET', '/v1/health/token', { key: 'wrong-key' }), 401, 'unauthorized');
    errorOf(await call(s.url, 'GET', '/v1/health/token', { key: null, headers: { authorization: 'Basic abc' } }), 401, 'unauthorized');
    expect((await call(s.url, 'GET', '/v1/health/token', { key: 'third-key' })).status).toBe(200);
    await stillUp();
  });

  test('data is scoped per key', async () => {
    const d = await create(createBody({ reference_number: 'SHARED' }), 'second-key');
    expect(DeliveryListSchema.parse((await call(s.url, 'GET', '/v1/deliveries?reference_number=SHARED')).json).data).toEqual([]);
    expect(DeliveryListSchema.parse((await call(s.url, 'GET', '/v1/deliveries?reference_number=SHARED', { key: 'second-key' })).json).data).toHaveLength(1);
    errorOf(await call(s.url, 'GET', `/v1/deliveries/${d.id}`), 404, 'not_found');
    errorOf(await call(s.url, 'POST', `/v1/deliveries/${d.id}/actions/cancel`), 404, 'not_found');
    expect(DeliveryListSchema.parse((await call(s.url, 'GET', '/v1/deliveries')).json).data).toEqual([]);
    expect(OrderListSchema.parse((await call(s.url, 'GET', `/v1/orders?delivery_id=${d.id}`)).json).data).toEqual([]);
    expect((await call(s.url, 'GET', `/v1/deliveries/${d.id}`, { key: 'second-key' })).status).toBe(200);
  });

  test('404 for unknown ids and routes, 405 for a wrong method on a known path', async () => {
    errorOf(await call(s.url, 'GET', '/v1/deliveries/del_unknown'), 404, 'not_found');
    errorOf(await call(s.url, 'PATCH', '/v1/deliveries/del_unknown', { body: { is_food: true } }), 404, 'not_found');
    errorOf(await call(s.url, 'GET', '/v1/orders/ord_unknown'), 404, 'not_found');
    errorOf(await call(s.url, 'GET', '/v1/nothing/here'), 404, 'not_found');
    errorOf(await call(s.url, 'GET', '/nothing', { key: null }), 404, 'not_found');
    errorOf(await call(s.url, 'GET', '/v1/deliveries/%ZZ/..'), 404, 'not_found');
    const m = await call(s.url, 'DELETE', '/v1/deliveries');
    expect(m.status).toBe(405);
    expect(m.headers.allow).toBe('GET, POST');
    expect(ErrorBodySchema.parse(m.json).error.code).toBe('method_not_allowed');
    await stillUp();
  });

  test('409 for update and cancel after pickup', async () => {
    const d = await create();
    for (let i = 0; i < 3; i++) s.sim.advance(d.id);
    expect(s.sim.deliveries()[0]?.delivery.status).toBe('PICKED_UP');
    errorOf(await call(s.url, 'PATCH', `/v1/deliveries/${d.id}`, { body: { is_food: true } }), 409, 'conflict');
    errorOf(await call(s.url, 'POST', `/v1/deliveries/${d.id}/actions/cancel`), 409, 'conflict');
    await stillUp();
  });

  test('update allowed while ASSIGNED, not while UPCOMING', async () => {
    const d = await create();
    s.sim.advance(d.id);
    expect((await call(s.url, 'PATCH', `/v1/deliveries/${d.id}`, { body: { is_food: true } })).status).toBe(200);
    s.sim.advance(d.id);
    errorOf(await call(s.url, 'PATCH', `/v1/deliveries/${d.id}`, { body: { is_food: false } }), 409, 'conflict');
  });

  test('422 names each bad field', async () => {
    const body = createBody({ destinations: [destination({ location: { ...destination().location, phone: '015112345678' } })] });
    const e = errorOf(await call(s.url, 'POST', '/v1/deliveries', { body }), 422, 'validation_failed');
    expect(e.details).toEqual([expect.objectContaining({ field: 'destinations[0].location.phone' })]);

    const past = createBody({ desired_pickup_time: new Date(Date.now() - 3_600_000).toISOString() });
    const e2 = errorOf(await call(s.url, 'POST', '/v1/deliveries', { body: past }), 422, 'validation_failed');
    expect(e2.details).toEqual([{ field: 'desired_pickup_time', message: 'must not be in the past' }]);
    errorOf(await call(s.url, 'POST', '/v1/quotes', { body: past }), 422, 'validation_failed');

    const both = { ...past, is_food: 'yes', destinations: [] };
    const e3 = errorOf(await call(s.url, 'POST', '/v1/deliveries', { body: both }), 422, 'validation_failed');
    expect(e3.details?.map((d) => d.field).sort()).toEqual(['desired_pickup_time', 'destinations', 'is_food']);

    const e4 = errorOf(await call(s.url, 'POST', '/v1/deliveries', { body: [1, 2] }), 422, 'validation_failed');
    expect(e4.details?.[0]?.field).toBe('(body)');
    errorOf(await call(s.url, 'POST', '/v1/deliveries', { body: { ...createBody(), extra: 1 } }), 422, 'validation_failed');
    await stillUp();
  });

  test('400 for malformed or missing JSON', async () => {
    const json = { 'content-type': 'application/json' };
    errorOf(await call(s.url, 'POST', '/v1/deliveries', { raw: '{"desired_pickup_time": ', headers: json }), 400, 'invalid_json');
    errorOf(await call(s.url, 'POST', '/v1/quotes', { raw: '', headers: json }), 400, 'invalid_json');
    errorOf(await call(s.url, 'POST', '/v1/deliveries', {}), 400, 'invalid_json');
    await stillUp();
  });

  test('415 for a body that is not application/json', async () => {
    const body = JSON.stringify(createBody());
    errorOf(await call(s.url, 'POST', '/v1/deliveries', { raw: body, headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    errorOf(await call(s.url, 'POST', '/v1/deliveries', { raw: body }), 415, 'unsupported_media_type');
    // Parameters on the media type are fine.
    expect((await call(s.url, 'POST', '/v1/deliveries', { raw: body, headers: { 'content-type': 'application/json; charset=utf-8' } })).status).toBe(201);
    await stillUp();
  });

  test('413 for a body over 1 MB, by Content-Length and by streamed bytes', async () => {
    const big = JSON.stringify({ ...createBody(), padding: 'x'.repeat(1024 * 1024) });
    errorOf(await call(s.url, 'POST', '/v1/deliveries', { raw: big, headers: { 'content-type': 'application/json' } }), 413, 'payload_too_large');
    async function* chunks() {
      for (let i = 0; i < 40; i++) yield Buffer.alloc(64 * 1024, 0x20);
    }
    const streamed = await call(s.url, 'POST', '/v1/quotes', { raw: chunks(), headers: { 'content-type': 'application/json' } }).catch((e: Error) => e);
    // The server stops reading and closes; the client sees either the 413 or the closed socket.
    if (!(streamed instanceof Error)) errorOf(streamed, 413, 'payload_too_large');
    // Just under the limit is read in full (and then fails validation, not size).
    const under = JSON.stringify({ ...createBody(), padding: 'x'.repeat(1024 * 1024 - 2_000) });
    errorOf(await call(s.url, 'POST', '/v1/deliveries', { raw: under, headers: { 'content-type': 'application/json' } }), 422, 'validation_failed');
    await stillUp();
  });

  test('every error code used is a contract code (405 aside)', async () => {
    const codes = new Set<string>(ERROR_CODES);
    for (const a of [
      await call(s.url, 'GET', '/v1/deliveries/x'),
      await call(s.url, 'GET', '/v1/deliveries', { key: 'nope' }),
      await call(s.url, 'POST', '/v1/quotes', { body: {} }),
    ]) {
      expect(codes.has(ErrorBodySchema.parse(a.json).error.code)).toBe(true);
    }
  });
});

describe('other pages and logs', () => {
  test('tracking page shows status and time window only, escaped', async () => {
    const d = await create(createBody({ destinations: [destination({ location: { ...destination().location, last_name: '<script>x</script>' } })] }));
    const dst = d.destinations[0]!;
    const a = await call(s.url, 'GET', `/track/${dst.id}`, { key: null });
    expect(a.status).toBe(200);
    expect(a.headers['content-type']).toMatch(/text\/html/);
    expect(a.text).toContain('PENDING');
    expect(a.text).toContain(dst.time_window_start);
    expect(a.text).not.toContain('script>x');
    expect(a.text).not.toContain(dst.location.phone);
    expect(a.text).not.toContain(dst.location.address);
    expect((await call(s.url, 'GET', '/track/dst_unknown', { key: null })).status).toBe(404);
  });

  test('dashboard lists deliveries, escaped', async () => {
    await create(createBody({ reference_number: '<b>&"ref' }));
    const a = await call(s.url, 'GET', '/_sim', { key: null });
    expect(a.status).toBe(200);
    expect(a.text).toContain('&lt;b&gt;&amp;&quot;ref');
    expect(a.text).not.toContain('<b>&"ref');
  });

  test('GET /_sim/deliveries lists every key\'s deliveries with key fingerprints', async () => {
    await create();
    await create(createBody(), 'second-key');
    const a = await call(s.url, 'GET', '/_sim/deliveries', { key: null });
    const data = (a.json as { data: { key_fingerprint: string; delivery: unknown }[] }).data;
    expect(data).toHaveLength(2);
    for (const x of data) DeliveryRecordSchema.parse(x.delivery);
    expect(data.map((x) => x.key_fingerprint)).toEqual(expect.arrayContaining([expect.stringMatching(/^[0-9a-f]{12}$/)]));
  });

  test('request log: every /v1 call with fingerprint, never the key; ?since= reads incrementally', async () => {
    await call(s.url, 'GET', '/v1/health/token');
    await call(s.url, 'GET', '/v1/health/token', { key: 'wrong-key' });
    await call(s.url, 'GET', '/v1/health/token', { key: null });
    const a = await call(s.url, 'GET', '/_sim/requests', { key: null });
    const body = a.json as { data: { index: number; method: string; path: string; key_fingerprint: string | null; status: number; time: string; duration_ms: number }[]; next: number };
    expect(body.data.map((r) => r.status)).toEqual([200, 401, 401]);
    expect(body.data[0]).toMatchObject({ index: 0, method: 'GET', path: '/v1/health/token' });
    expect(body.data[0]?.key_fingerprint).toMatch(/^[0-9a-f]{12}$/);
    expect(body.data[2]?.key_fingerprint).toBeNull();
    expect(a.text).not.toContain('sandbox-key');
    expect(a.text).not.toContain('wrong-key');
    expect(body.next).toBe(3);
    await call(s.url, 'GET', '/v1/health/token');
    const more = (await call(s.url, 'GET', `/_sim/requests?since=${body.next}`, { key: null })).json as typeof body;
    expect(more.data.map((r) => r.index)).toEqual([3]);
  });

  test('GET /openapi.json serves the contract document', async () => {
    const a = await call(s.url, 'GET', '/openapi.json', { key: null });
    expect(a.status).toBe(200);
    expect((a.json as { openapi: string }).openapi).toMatch(/^3\./);
    expect(JSON.stringify(a.json)).toContain(s.url);
  });

  test('control API validates its input and 404s unknown ids', async () => {
    errorOf(await call(s.url, 'POST', '/_sim/deliveries/del_x/advance', { key: null }), 404, 'not_found');
    const d = await create();
    errorOf(await call(s.url, 'POST', `/_sim/deliveries/${d.id}/advance`, { key: null, body: { destination_id: 'dst_x' } }), 404, 'not_found');
    errorOf(await call(s.url, 'POST', `/_sim/deliveries/${d.id}/advance`, { key: null, body: { what: 1 } }), 422, 'validation_failed');
    errorOf(await call(s.url, 'POST', '/_sim/faults', { key: null, body: { error_rate: 2 } }), 422, 'validation_failed');
    errorOf(await call(s.url, 'PUT', '/_sim/webhook-endpoint', { key: null, body: { url: 'ftp://x' } }), 422, 'validation_failed');
    errorOf(await call(s.url, 'PUT', '/_sim/webhook-endpoint', { key: null, raw: '{', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
    expect((await call(s.url, 'GET', '/_sim/unknown', { key: null })).status).toBe(404);
    expect((await call(s.url, 'DELETE', '/_sim/faults', { key: null })).status).toBe(405);
  });

  test('reset clears records and logs', async () => {
    await create();
    expect((await call(s.url, 'POST', '/_sim/reset', { key: null })).status).toBe(200);
    expect(s.sim.deliveries()).toEqual([]);
    expect(s.sim.requestLog()).toEqual([]);
  });
});
