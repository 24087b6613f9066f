/**
 * The API client (ProviderClient) against a real running simulator: every call family, every
 * error class the client can raise from a real provider answer (or before sending), the caller's
 * AbortSignal, and keep-alive. Hand-made misbehaving servers are covered in
 * provider-client-faults.test.ts and not repeated here.
 */
import { ProviderClient, providerPool } from '../../provider/client';
import {
  ConflictError,
  NotFoundError,
  ProviderUnavailableError,
  RateLimitedError,
  UnauthorizedError,
  ValidationError,
  type ProviderError,
} from '../../provider/errors';
import type { CreateDeliveryRequest, DeliveryRecord } from '../../provider/schemas';
import { deliveryRequest, destination } from '../fixtures/orders';
import { KEY, sleep, startSimulator, type Started } from './simulator-fixtures';
import { rejectionOf } from '../helpers/rejection';

const OTHER_KEY = 'other-accepted-key';
const MINUTE = 60_000;

/** The rejection of `p`, which must be an instance of `type`. */
async function rejects<E extends ProviderError>(p: Promise<unknown>, type: abstract new (...args: never[]) => E): Promise<E> {
  const e = await rejectionOf(p);
  expect(e).toBeInstanceOf(type);
  return e as E;
}

function everythingSaid(e: Error): string {
  return JSON.stringify({ message: e.message, stack: e.stack, cause: String((e as { cause?: unknown }).cause), own: { ...e } });
}

let n = 0;
const idemKey = () => `idem-${process.pid}-${++n}`;

describe('ProviderClient against the simulator', () => {
  let s: Started;
  let client: ProviderClient;
  const extraClients: ProviderClient[] = [];
  const clientWith = (apiKey: string) => {
    const c = new ProviderClient({ baseUrl: s.url, apiKey, timeoutMs: 5_000 });
    extraClients.push(c);
    return c;
  };

  beforeAll(async () => {
    s = await startSimulator({ apiKeys: [OTHER_KEY] });
    client = new ProviderClient({ baseUrl: s.url, apiKey: KEY, timeoutMs: 5_000 });
  });
  afterAll(async () => {
    await Promise.all([client, ...extraClients].map((c) => c.close()));
    await s.sim.close();
    expect(s.errors).toEqual([]);
  });
  beforeEach(() => s.sim.reset());

  async function create(body: CreateDeliveryRequest = deliveryRequest()): Promise<DeliveryRecord> {
    const r = await client.createDelivery(body, { idempotencyKey: idemKey() });
    expect(r.replayed).toBe(false);
    return r.delivery;
  }

  describe('createDelivery', () => {
    test('201 gives the new record, not a replay', async () => {
      const body = deliveryRequest({ reference_number: 'ORD-1001', is_food: true }, 2);
      const { delivery, replayed } = await client.createDelivery(body, { idempotencyKey: idemKey() });
      expect(replayed).toBe(false);
      expect(delivery).toMatchObject({ status: 'CREATED', reference_number: 'ORD-1001', is_food: true, desired_pickup_time: body.desired_pickup_time });
      expect(delivery.destinations.map((d) => [d.status, d.location.phone])).toEqual(body.destinations.map((d) => ['PENDING', d.location.phone]));
      expect(new Set(delivery.destinations.map((d) => d.tracking_url)).size).toBe(2);
      expect(s.sim.deliveries().map((x) => x.delivery.id)).toEqual([delivery.id]);
      expect(s.sim.requestLog().map((r) => [r.method, r.path, r.status])).toEqual([['POST', '/v1/deliveries', 201]]);
    });

    test('the same key with the same body replays the first delivery instead of creating a second', async () => {
      const body = deliveryRequest({ reference_number: 'ORD-1002' });
      const key = idemKey();
      const first = await client.createDelivery(body, { idempotencyKey: key });
      const again = await client.createDelivery(structuredClone(body), { idempotencyKey: key });
      expect(first.replayed).toBe(false);
      expect(again.replayed).toBe(true);
      expect(again.delivery.id).toBe(first.delivery.id);
      expect(again.delivery).toEqual(first.delivery);
      expect(s.sim.deliveries()).toHaveLength(1);
      expect(s.sim.requestLog().map((r) => r.status)).toEqual([201, 200]);
    });

    test('the same key with a different body is a ConflictError (idempotency_conflict) and creates nothing', async () => {
      const key = idemKey();
      const first = await client.createDelivery(deliveryRequest({ reference_number: 'ORD-1003' }), { idempotencyKey: key });
      const e = await rejects(client.createDelivery(deliveryRequest({ reference_number: 'ORD-1004' }), { idempotencyKey: key }), ConflictError);
      expect(e).toMatchObject({ kind: 'conflict', retryable: false, status: 409, code: 'idempotency_conflict' });
      expect(s.sim.deliveries().map((x) => x.delivery.id)).toEqual([first.delivery.id]);
      // Another key with that second body is a normal creation.
      await create(deliveryRequest({ reference_number: 'ORD-1004' }));
      expect(s.sim.deliveries()).toHaveLength(2);
    });
  });

  describe('getDelivery', () => {
    test('returns the stored record, with status changes made by the provider', async () => {
      const created = await create(deliveryRequest({ reference_number: 'ORD-2001' }));
      expect(await client.getDelivery(created.id)).toEqual(created);
      s.sim.advance(created.id);
      const later = await client.getDelivery(created.id);
      expect(later.status).toBe('ASSIGNED');
      expect(later.id).toBe(created.id);
    });

    test('an unknown id, or another key’s delivery, is a NotFoundError', async () => {
      const e = await rejects(client.getDelivery('del_doesnotexist'), NotFoundError);
      expect(e).toMatchObject({ kind: 'not_found', retryable: false, status: 404, code: 'not_found' });
      const theirs = (await clientWith(OTHER_KEY).createDelivery(deliveryRequest(), { idempotencyKey: idemKey() })).delivery;
      await rejects(client.getDelivery(theirs.id), NotFoundError);
      // Ids are path-encoded: a slash cannot reach another route.
      await rejects(client.getDelivery(`${theirs.id}/actions/cancel`), NotFoundError);
      expect(s.sim.deliveries()[0]?.delivery.status).toBe('CREATED');
    });
  });

  describe('listDeliveries and findDeliveryByReference', () => {
    test('pages newest first, every delivery exactly once', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await create(deliveryRequest({ reference_number: `ORD-30${i}` }))).id);
      const newestFirst = [...ids].reverse();

      const p1 = await client.listDeliveries({ pageSize: 2 });
      expect(p1).toMatchObject({ page: 1, page_size: 2, has_more: true });
      expect(p1.data.map((d) => d.id)).toEqual(newestFirst.slice(0, 2));
      const p2 = await client.listDeliveries({ page: 2, pageSize: 2 });
      expect(p2.data.map((d) => d.id)).toEqual(newestFirst.slice(2, 4));
      expect(p2.has_more).toBe(true);
      const p3 = await client.listDeliveries({ page: 3, pageSize: 2 });
      expect(p3.data.map((d) => d.id)).toEqual(newestFirst.slice(4));
      expect(p3.has_more).toBe(false);
      expect((await client.listDeliveries({ page: 4, pageSize: 2 })).data).toEqual([]);
      expect((await client.listDeliveries()).data.map((d) => d.id)).toEqual(newestFirst);
    });

    test('filters by status and by reference number', async () => {
      const a = await create(deliveryRequest({ reference_number: 'ORD 40/1 & co #x' }));
      const b = await create(deliveryRequest({ reference_number: 'ORD-402' }));
      const c = await create(deliveryRequest({ reference_number: 'ORD-403' }));
      s.sim.advance(a.id);
      s.sim.advance(c.id);

      const assigned = await client.listDeliveries({ status: 'ASSIGNED' });
      expect(assigned.data.map((d) => d.id)).toEqual([c.id, a.id]);
      expect(assigned.data.every((d) => d.status === 'ASSIGNED')).toBe(true);
      expect((await client.listDeliveries({ status: 'CREATED' })).data.map((d) => d.id)).toEqual([b.id]);
      expect((await client.listDeliveries({ status: 'DELIVERED' })).data).toEqual([]);

      const byRef = await client.listDeliveries({ referenceNumber: 'ORD 40/1 & co #x' });
      expect(byRef.data.map((d) => d.id)).toEqual([a.id]);
      expect((await client.listDeliveries({ referenceNumber: 'ORD-402', status: 'ASSIGNED' })).data).toEqual([]);
    });

    test('findDeliveryByReference finds the delivery to reconcile with, or nothing', async () => {
      const a = await create(deliveryRequest({ reference_number: 'ORD-501' }));
      await create(deliveryRequest({ reference_number: 'ORD-502' }));
      const found = await client.findDeliveryByReference('ORD-501');
      expect(found?.id).toBe(a.id);
      expect(found?.reference_number).toBe('ORD-501');
      expect(await client.findDeliveryByReference('ORD-5')).toBeUndefined();
      // An empty reference would be no filter at all (and "find" the newest delivery of any
      // reference): it is refused before anything is sent.
      const logged = s.sim.requestLog().length;
      const e = await rejects(client.findDeliveryByReference(''), ValidationError);
      expect(e.status).toBeUndefined();
      expect(s.sim.requestLog()).toHaveLength(logged);
      // Another key's delivery with that reference is not ours.
      await clientWith(OTHER_KEY).createDelivery(deliveryRequest({ reference_number: 'ORD-503' }), { idempotencyKey: idemKey() });
      expect(await client.findDeliveryByReference('ORD-503')).toBeUndefined();
    });
  });

  describe('updateDelivery', () => {
    test('changes the delivery and its price (and the order amount) while CREATED or ASSIGNED', async () => {
      const created = await create();
      const dst = created.destinations[0]!;

      const bigger = await client.updateDelivery(created.id, { destinations: [{ id: dst.id, package_type: 'XLARGE' }] });
      expect(bigger.destinations[0]?.package_type).toBe('XLARGE');
      expect(bigger.price.amount).toBeGreaterThan(created.price.amount);
      // The new price is what a quote for the changed content costs.
      const changedBody = deliveryRequest({}, 1);
      changedBody.destinations[0]!.package_type = 'XLARGE';
      expect((await client.quote(changedBody)).price).toEqual(bigger.price);

      s.sim.advance(created.id); // ASSIGNED: still allowed
      const food = await client.updateDelivery(created.id, { is_food: true });
      expect(food.is_food).toBe(true);
      expect(food.price.amount).toBeGreaterThan(bigger.price.amount);

      expect(await client.getDelivery(created.id)).toMatchObject({ is_food: true, price: food.price });
      const [order] = (await client.listOrders({ deliveryId: created.id })).data;
      expect(order).toMatchObject({ amount: food.price.amount, currency: food.price.currency });
    });

    test('after the provider advanced the delivery to PICKED_UP, an update is a ConflictError and changes nothing', async () => {
      const created = await create();
      for (let i = 0; i < 3; i++) s.sim.advance(created.id);
      expect((await client.getDelivery(created.id)).status).toBe('PICKED_UP');

      const e = await rejects(client.updateDelivery(created.id, { is_food: true }), ConflictError);
      expect(e).toMatchObject({ kind: 'conflict', status: 409, code: 'conflict', retryable: false });
      expect(e.message).toContain('PICKED_UP');
      expect(await client.getDelivery(created.id)).toMatchObject({ is_food: false, price: created.price });
    });

    test('an unknown id is a NotFoundError', async () => {
      await rejects(client.updateDelivery('del_unknown', { is_food: true }), NotFoundError);
    });
  });

  describe('cancelDelivery', () => {
    test('cancels the delivery, its destinations and its order', async () => {
      const created = await create(deliveryRequest({}, 3));
      const canceled = await client.cancelDelivery(created.id);
      expect(canceled.id).toBe(created.id);
      expect(canceled.status).toBe('CANCELED');
      expect(canceled.destinations.map((d) => d.status)).toEqual(['CANCELED', 'CANCELED', 'CANCELED']);
      expect((await client.getDelivery(created.id)).status).toBe('CANCELED');
      expect((await client.listOrders({ deliveryId: created.id })).data.map((o) => o.status)).toEqual(['CANCELED']);
    });

    test('after pickup, a cancel is a ConflictError and the delivery goes on', async () => {
      const created = await create(deliveryRequest({}, 2));
      s.sim.advance(created.id, { status: 'PICKED_UP' });
      const e = await rejects(client.cancelDelivery(created.id), ConflictError);
      expect(e).toMatchObject({ status: 409, code: 'conflict' });
      const now = await client.getDelivery(created.id);
      expect(now.status).toBe('PICKED_UP');
      expect(now.destinations.map((d) => d.status)).toEqual(['IN_TRANSIT', 'IN_TRANSIT']);
    });

    test('an unknown id is a NotFoundError', async () => {
      await rejects(client.cancelDelivery('del_unknown'), NotFoundError);
    });
  });

  describe('quote', () => {
    test('prices the same body as the delivery created from it, valid for about 15 minutes', async () => {
      const body = deliveryRequest({ is_food: true }, 2);
      const before = Date.now();
      const quote = await client.quote(body);
      const after = Date.now();
      const expiresAt = Date.parse(quote.expires_at);
      expect(expiresAt).toBeGreaterThanOrEqual(before + 15 * MINUTE);
      expect(expiresAt).toBeLessThanOrEqual(after + 15 * MINUTE);

      const created = await create(body);
      expect(quote.price).toEqual(created.price);
      // A quote creates nothing.
      expect(s.sim.deliveries()).toHaveLength(1);
      // And it depends on the body: a smaller delivery costs less.
      expect((await client.quote(deliveryRequest({}, 1))).price.amount).toBeLessThan(quote.price.amount);
    });
  });

  describe('listOrders and getOrder', () => {
    test('one order per delivery, with its price; by delivery id and by order id', async () => {
      const a = await create(deliveryRequest({}, 1));
      const b = await create(deliveryRequest({ is_food: true }, 2));

      const forA = await client.listOrders({ deliveryId: a.id });
      expect(forA.data).toHaveLength(1);
      const order = forA.data[0]!;
      expect(order).toMatchObject({ delivery_id: a.id, amount: a.price.amount, currency: a.price.currency, status: 'OPEN' });
      expect(await client.getOrder(order.id)).toEqual(order);

      const all = await client.listOrders();
      expect(all.data.map((o) => o.delivery_id)).toEqual([b.id, a.id]);
      expect(all.data[0]?.amount).toBe(b.price.amount);
      expect((await client.listOrders({ deliveryId: 'del_unknown' })).data).toEqual([]);
    });

    test('an unknown order id is a NotFoundError', async () => {
      const e = await rejects(client.getOrder('ord_unknown'), NotFoundError);
      expect(e.status).toBe(404);
    });
  });

  describe('checkKey and UnauthorizedError', () => {
    test('a valid key checks out', async () => {
      await expect(client.checkKey()).resolves.toEqual({ valid: true });
      await expect(clientWith(OTHER_KEY).checkKey()).resolves.toEqual({ valid: true });
    });

    test('a wrong key is an UnauthorizedError on every call, and nothing thrown contains the key', async () => {
      const wrongKey = 'sk_live_wrong_but_secret_4f9a7c21d0e3';
      const bad = clientWith(wrongKey);
      const existing = await create();
      const calls: [string, () => Promise<unknown>][] = [
        ['checkKey', () => bad.checkKey()],
        ['createDelivery', () => bad.createDelivery(deliveryRequest(), { idempotencyKey: idemKey() })],
        ['getDelivery', () => bad.getDelivery(existing.id)],
        ['listDeliveries', () => bad.listDeliveries()],
        ['updateDelivery', () => bad.updateDelivery(existing.id, { is_food: true })],
        ['cancelDelivery', () => bad.cancelDelivery(existing.id)],
        ['quote', () => bad.quote(deliveryRequest())],
        ['getOrder', () => bad.getOrder('ord_x')],
      ];
      for (const [name, run] of calls) {
        const e = await rejects(run(), UnauthorizedError);
        expect({ name, kind: e.kind, status: e.status, retryable: e.retryable }).toEqual({ name, kind: 'unauthorized', status: 401, retryable: false });
        expect(everythingSaid(e)).not.toContain(wrongKey);
        expect(everythingSaid(e)).not.toContain(wrongKey.slice(8));
      }
      // Nothing changed on the provider's side.
      expect(await client.getDelivery(existing.id)).toEqual(existing);
      expect(s.sim.deliveries()).toHaveLength(1);
    });
  });

  describe('ValidationError', () => {
    test('from the provider: a pickup time in the past passes our schema but gets 422 naming desired_pickup_time', async () => {
      const past = new Date(Date.now() - 10 * MINUTE).toISOString();
      const body = deliveryRequest({ desired_pickup_time: past });

      const e = await rejects(client.createDelivery(body, { idempotencyKey: idemKey() }), ValidationError);
      expect(e).toMatchObject({ kind: 'validation', retryable: false, status: 422, code: 'validation_failed' });
      expect(e.details.map((d) => d.field)).toEqual(['desired_pickup_time']);
      expect(e.message).toContain('desired_pickup_time');
      expect(s.sim.deliveries()).toEqual([]);

      const q = await rejects(client.quote(body), ValidationError);
      expect(q.details.map((d) => d.field)).toEqual(['desired_pickup_time']);

      const existing = await create();
      const u = await rejects(client.updateDelivery(existing.id, { desired_pickup_time: past }), ValidationError);
      expect(u.details.map((d) => d.field)).toEqual(['desired_pickup_time']);
      expect((await client.getDelivery(existing.id)).desired_pickup_time).toBe(existing.desired_pickup_time);

      // All three reached the provider (the 422s) before the one good creation.
      expect(s.sim.requestLog().map((r) => r.status)).toEqual([422, 422, 201, 422, 200]);
    });

    test('client-side: a request off the contract is refused before anything is sent', async () => {
      const badPhone = deliveryRequest();
      badPhone.destinations[0]!.location.phone = '0151 1234567';

      const e = await rejects(client.createDelivery(badPhone, { idempotencyKey: idemKey() }), ValidationError);
      expect(e).toMatchObject({ kind: 'validation', status: undefined });
      expect(e.details.map((d) => d.field)).toEqual(['destinations[0].location.phone']);
      expect(e.message).toContain('destinations[0].location.phone');

      const q = await rejects(client.quote(badPhone), ValidationError);
      expect(q.details.map((d) => d.field)).toEqual(['destinations[0].location.phone']);

      const window = await rejects(
        client.quote(deliveryRequest({ destinations: [destination(0, { time_window_start: '2030-01-01T12:00:00Z', time_window_end: '2030-01-01T11:00:00Z' })] })),
        ValidationError,
      );
      expect(window.details.map((d) => d.field)).toEqual(['destinations[0].time_window_end']);

      await rejects(client.updateDelivery('del_any', {}), ValidationError);
      await rejects(client.updateDelivery('del_any', { destinations: [{ id: 'dst_x', location: { ...badPhone.destinations[0]!.location } }] }), ValidationError);
      await rejects(client.createDelivery(deliveryRequest(), { idempotencyKey: '' }), ValidationError);

      expect(s.sim.requestLog()).toEqual([]);
      expect(s.sim.deliveries()).toEqual([]);
    });
  });

  describe('ProviderUnavailableError', () => {
    test('injected 503s are unavailable (retryable), and the same call succeeds once the provider is back', async () => {
      s.sim.setFaults({ error_rate: 1 });
      const body = deliveryRequest({ reference_number: 'ORD-601' });
      const key = idemKey();
      for (const run of [() => client.checkKey(), () => client.createDelivery(body, { idempotencyKey: key }), () => client.listOrders()]) {
        const e = await rejects(run(), ProviderUnavailableError);
        expect(e).toMatchObject({ kind: 'unavailable', retryable: true, status: 503, code: 'service_unavailable' });
      }
      expect(s.sim.deliveries()).toEqual([]);

      s.sim.setFaults({ error_rate: 0 });
      const retried = await client.createDelivery(body, { idempotencyKey: key });
      expect(retried.replayed).toBe(false);
      expect(s.sim.deliveries()).toHaveLength(1);
    });
  });

  describe('AbortSignal', () => {
    test("a slow call aborted by the caller rejects promptly with the caller's reason", async () => {
      const existing = await create();
      s.sim.setFaults({ latency_ms: 2_000 });
      const controller = new AbortController();
      const reason = new Error('caller gave up');
      setTimeout(() => controller.abort(reason), 50);
      const started = performance.now();
      const e = await rejectionOf(client.getDelivery(existing.id, { signal: controller.signal }));
      const elapsed = performance.now() - started;
      expect(e).toBe(reason);
      expect(elapsed).toBeGreaterThanOrEqual(40);
      expect(elapsed).toBeLessThan(1_000);

      // An already-aborted signal fails the same way, at once.
      const early = new AbortController();
      early.abort(reason);
      expect(await rejectionOf(client.checkKey({ signal: early.signal }))).toBe(reason);

      // The client stays usable.
      s.sim.setFaults({ latency_ms: 0 });
      await expect(client.checkKey()).resolves.toEqual({ valid: true });

      // Let the simulator finish the abandoned request, so no timer outlives this file.
      const deadline = Date.now() + 5_000;
      while (!s.sim.requestLog().some((r) => r.path === `/v1/deliveries/${existing.id}`)) {
        if (Date.now() > deadline) throw new Error('the abandoned request never finished');
        await sleep(20);
      }
    });
  });

  describe('keep-alive', () => {
    test('many sequential calls reuse a connection', async () => {
      const fresh = clientWith(KEY);
      let opened = 0;
      const onConnection = () => opened++;
      s.sim.server.on('connection', onConnection);
      try {
        const d = (await fresh.createDelivery(deliveryRequest(), { idempotencyKey: idemKey() })).delivery;
        for (let i = 0; i < 30; i++) {
          if (i % 3 === 0) expect((await fresh.getDelivery(d.id)).id).toBe(d.id);
          else if (i % 3 === 1) expect((await fresh.checkKey()).valid).toBe(true);
          else expect((await fresh.listDeliveries()).data).toHaveLength(1);
        }
      } finally {
        s.sim.server.off('connection', onConnection);
      }
      expect(s.sim.requestLog()).toHaveLength(31);
      // undici may alternate between two sockets for back-to-back calls; without keep-alive
      // there would be one connection per call (31).
      expect(opened).toBeGreaterThanOrEqual(1);
      expect(opened).toBeLessThanOrEqual(4);
    });
  });

  describe('keys read at each call (accounts)', () => {
    test('a rotated key is used from the next call; a key rotated away is refused, and never named in the error', async () => {
      let current = KEY;
      const rotating = new ProviderClient({ baseUrl: s.url, apiKey: () => current, timeoutMs: 5_000 });
      extraClients.push(rotating);
      const mine = await rotating.createDelivery(deliveryRequest(), { idempotencyKey: idemKey() });
      current = OTHER_KEY; // the other key's scope: the first delivery is not visible any more
      await rejects(rotating.getDelivery(mine.delivery.id), NotFoundError);
      current = 'revoked-key';
      const e = await rejects(rotating.checkKey(), UnauthorizedError);
      expect(everythingSaid(e)).not.toContain('revoked-key');
      current = KEY;
      expect((await rotating.getDelivery(mine.delivery.id)).id).toBe(mine.delivery.id);
    });

    test('clients of two accounts on one courier host share one connection pool, and closing one leaves the other working', async () => {
      const pool = providerPool(new URL(s.url).origin, { connections: 2, timeoutMs: 5_000 });
      const a = new ProviderClient({ baseUrl: s.url, apiKey: () => KEY, dispatcher: pool });
      const b = new ProviderClient({ baseUrl: s.url, apiKey: () => OTHER_KEY, dispatcher: pool });
      await Promise.all([a.checkKey(), b.checkKey()]);
      await a.close();
      expect(await b.checkKey()).toEqual({ valid: true });
      // Each call carried its own client's key: each key's scope holds only its own delivery.
      const [da, db] = await Promise.all([a.createDelivery(deliveryRequest(), { idempotencyKey: idemKey() }), b.createDelivery(deliveryRequest(), { idempotencyKey: idemKey() })]);
      await rejects(b.getDelivery(da.delivery.id), NotFoundError);
      await rejects(a.getDelivery(db.delivery.id), NotFoundError);
      await pool.close();
    });
  });
});

describe('RateLimitedError (simulator at time scale 60: the 20-creation window is 1 s)', () => {
  let s: Started;
  let client: ProviderClient;
  beforeAll(async () => {
    s = await startSimulator({ timeScale: 60 });
    client = new ProviderClient({ baseUrl: s.url, apiKey: KEY, timeoutMs: 5_000 });
  });
  afterAll(async () => {
    await client.close();
    await s.sim.close();
    expect(s.errors).toEqual([]);
  });

  test('the 21st creation in the window is refused with retryAfterMs; waiting that long, it succeeds', async () => {
    const firstStart = Date.now();
    let firstEnd = 0;
    for (let i = 0; i < 20; i++) {
      await client.createDelivery(deliveryRequest(), { idempotencyKey: idemKey() });
      if (i === 0) firstEnd = Date.now();
    }
    const body = deliveryRequest({ reference_number: 'ORD-RL-21' });
    const key = idemKey();
    const refusedStart = Date.now();
    const e = await rejects(client.createDelivery(body, { idempotencyKey: key }), RateLimitedError);
    const refusedEnd = Date.now();
    expect(e).toMatchObject({ kind: 'rate_limited', retryable: true, status: 429, code: 'rate_limited' });
    expect(e.retryAfterMs).toBeGreaterThanOrEqual(1);
    expect(e.retryAfterMs).toBeLessThanOrEqual(1_000);
    // It is the time until the first creation leaves the window, as seen from our side.
    expect(e.retryAfterMs).toBeGreaterThanOrEqual(firstStart + 1_000 - refusedEnd);
    expect(e.retryAfterMs).toBeLessThanOrEqual(firstEnd + 1_000 - refusedStart + 1);
    expect(s.sim.deliveries()).toHaveLength(20);

    // Timers and Date.now() may disagree by a millisecond; a few more cover that.
    await sleep(e.retryAfterMs + 5);
    const after = await client.createDelivery(body, { idempotencyKey: key });
    expect(after.replayed).toBe(false);
    expect(after.delivery.reference_number).toBe('ORD-RL-21');
    expect(s.sim.deliveries()).toHaveLength(21);
  });
});
