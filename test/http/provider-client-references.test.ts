/**
 * References that cannot poison the pipeline, over real HTTP against the simulator: Unicode
 * references are created, replayed by their Idempotency-Key and found by reference (also across
 * a simulator restart from its state file); references with control characters are refused
 * before anything is sent; a request that cannot be built is a non-retryable validation error
 * naming the part, never a retryable "unavailable".
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toApplicationFailure } from '../../activities/failures';
import { ProviderClient } from '../../provider/client';
import { ValidationError } from '../../provider/errors';
import { idempotencyKeyHeader } from '../../provider/idempotency';
import { DeliveryListSchema, ErrorBodySchema } from '../../provider/schemas';
import { deliveryRequest } from '../fixtures/orders';
import { rejectionOf } from '../helpers/rejection';
import { call, KEY, startSimulator, type Started } from './simulator-fixtures';

const UNICODE_REFERENCES = ['ORD-€42', '注文-1001', '📦-Müller-7'];

let s: Started;
let client: ProviderClient;
beforeAll(async () => {
  s = await startSimulator();
  client = new ProviderClient({ baseUrl: s.url, apiKey: KEY, timeoutMs: 5_000 });
});
afterAll(async () => {
  await client.close();
  await s.sim.close();
  expect(s.errors).toEqual([]);
});
beforeEach(() => s.sim.reset());

async function validationError(p: Promise<unknown>): Promise<ValidationError> {
  const e = await rejectionOf(p);
  expect(e).toBeInstanceOf(ValidationError);
  return e as ValidationError;
}

describe('a Unicode reference', () => {
  test.each(UNICODE_REFERENCES)('%s is created once with the workflow ID as key, replayed by it, and found by reference', async (reference) => {
    const body = deliveryRequest({ reference_number: reference });
    const key = `delivery:${reference}`;
    const first = await client.createDelivery(body, { idempotencyKey: key });
    expect(first.replayed).toBe(false);
    expect(first.delivery.reference_number).toBe(reference);

    // The retry of an unclear creation: same key, same body → the first delivery, nothing new.
    const again = await client.createDelivery(structuredClone(body), { idempotencyKey: key });
    expect(again).toMatchObject({ replayed: true, delivery: { id: first.delivery.id } });
    expect(s.sim.deliveries()).toHaveLength(1);

    // What reached the provider is the derived, header-safe key, not the reference.
    const keys = s.sim.context.store.idempotencyEntries(Date.now()).map((e) => e.key);
    expect(keys).toEqual([idempotencyKeyHeader(key)]);
    expect(keys[0]).toMatch(/^dk_[A-Za-z0-9_-]{43}$/);

    // The look-up by reference a retried creation makes: the query is percent-encoded UTF-8.
    expect((await client.findDeliveryByReference(reference))?.id).toBe(first.delivery.id);
    expect((await client.listDeliveries({ referenceNumber: reference })).data.map((d) => d.id)).toEqual([first.delivery.id]);
    const logged = s.sim.requestLog().filter((r) => r.method === 'GET' && r.path === '/v1/deliveries').at(-1)!;
    expect(new URLSearchParams(logged.query).get('reference_number')).toBe(reference);
    expect(logged.query).toContain(encodeURIComponent(reference));
  });

  test('is matched exactly: a prefix, another normalization or another case finds nothing', async () => {
    const made = await client.createDelivery(deliveryRequest({ reference_number: 'Café-1' }), { idempotencyKey: 'delivery:Café-1' });
    expect((await client.findDeliveryByReference('Café-1'))?.id).toBe(made.delivery.id);
    for (const other of ['Café-', 'Cafe\u0301-1', 'CAFÉ-1', 'Cafe-1']) expect(await client.findDeliveryByReference(other)).toBeUndefined();
  });

  test('raw HTTP: the simulator filters by a percent-encoded UTF-8 reference and keeps idempotency by the derived key', async () => {
    const body = deliveryRequest({ reference_number: '注文-1001' });
    const headers = { 'idempotency-key': idempotencyKeyHeader('delivery:注文-1001') };
    const first = await call(s.url, 'POST', '/v1/deliveries', { body, headers });
    expect(first.status).toBe(201);
    const replay = await call(s.url, 'POST', '/v1/deliveries', { body, headers });
    expect(replay.status).toBe(200);
    expect((replay.json as { id: string }).id).toBe((first.json as { id: string }).id);
    const listed = DeliveryListSchema.parse((await call(s.url, 'GET', `/v1/deliveries?reference_number=${encodeURIComponent('注文-1001')}`)).json);
    expect(listed.data.map((d) => d.reference_number)).toEqual(['注文-1001']);
  });

  test('survives a simulator restart from its state file: replay and look-up still find the first delivery', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-unicode-'));
    const stateFile = join(dir, 'state.json');
    const reference = 'ORD-€42';
    const body = deliveryRequest({ reference_number: reference });
    try {
      const before = await startSimulator({ stateFile });
      const c1 = new ProviderClient({ baseUrl: before.url, apiKey: KEY });
      const first = await c1.createDelivery(body, { idempotencyKey: `delivery:${reference}` });
      await c1.close();
      await before.sim.close();

      const after = await startSimulator({ stateFile });
      const c2 = new ProviderClient({ baseUrl: after.url, apiKey: KEY });
      try {
        expect((await c2.createDelivery(body, { idempotencyKey: `delivery:${reference}` })).delivery.id).toBe(first.delivery.id);
        expect((await c2.findDeliveryByReference(reference))?.id).toBe(first.delivery.id);
        expect(after.sim.deliveries()).toHaveLength(1);
      } finally {
        await c2.close();
        await after.sim.close();
      }
      expect([...before.errors, ...after.errors]).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a reference with a control character', () => {
  test.each([
    ['a newline', 'ORD-1\n2', 'U+000A'],
    ['NUL', 'ORD-\u00001', 'U+0000'],
    ['DEL', 'ORD-\u007f1', 'U+007F'],
    ['the line separator', 'ORD-\u20281', 'U+2028'],
  ])('(%s) is refused by the client before anything is sent, naming the field and the character', async (_what, reference, codePoint) => {
    const body = deliveryRequest({ reference_number: reference });
    const created = await validationError(client.createDelivery(body, { idempotencyKey: `delivery:${reference}` }));
    expect(created.details.map((d) => d.field)).toEqual(['reference_number']);
    expect(created.message).toContain(codePoint);
    expect(created.retryable).toBe(false);
    const found = await validationError(client.findDeliveryByReference(reference));
    expect(found.details.map((d) => d.field)).toEqual(['reference_number']);
    expect(found.message).toContain(`invalid reference number: reference_number: must not contain`);
    await validationError(client.quote(body));
    expect(s.sim.requestLog()).toEqual([]);
  });

  test('is refused by the simulator too (422 naming the field), for a client that sends it anyway', async () => {
    const res = await call(s.url, 'POST', '/v1/deliveries', { body: deliveryRequest({ reference_number: 'ORD-1\n2' }), headers: { 'idempotency-key': 'k1' } });
    expect(res.status).toBe(422);
    expect(ErrorBodySchema.parse(res.json).error.details?.map((d) => d.field)).toEqual(['reference_number']);
    expect(s.sim.deliveries()).toEqual([]);
  });
});

describe('a request that cannot be built', () => {
  test('an API key that cannot go in a header: a non-retryable validation failure naming the header, never the key', async () => {
    const bad = new ProviderClient({ baseUrl: s.url, apiKey: 'sandbox-kéy-€', timeoutMs: 5_000 });
    try {
      const e = await validationError(bad.checkKey());
      expect(e.details).toEqual([{ field: 'authorization header', message: 'cannot be sent over HTTP (invalid authorization header)' }]);
      expect(JSON.stringify({ m: e.message, s: e.stack, d: e.details })).not.toContain('kéy');
      const failure = toApplicationFailure(e) as { type: string; nonRetryable: boolean };
      expect(failure).toMatchObject({ type: 'ProviderValidation', nonRetryable: true });
    } finally {
      await bad.close();
    }
    expect(s.sim.requestLog()).toEqual([]);
  });

  test('an id that cannot be URL-encoded, a cyclic body and an ill-formed key: validation failures naming the part, nothing sent', async () => {
    const id = await validationError(client.getDelivery('del_\ud800'));
    expect(id.details.map((d) => d.field)).toEqual(['delivery id']);
    const cyclic: Record<string, unknown> = { destinations: [] };
    cyclic.self = cyclic;
    // The contract check runs first and names the wrong fields; nothing reaches the network.
    await validationError(client.updateDelivery('del_1', cyclic as never));
    const key = await validationError(client.createDelivery(deliveryRequest({ reference_number: 'R-1' }), { idempotencyKey: 'delivery:\udc00' }));
    expect(key.details.map((d) => d.field)).toEqual(['Idempotency-Key']);
    expect(s.sim.requestLog()).toEqual([]);
  });
});
