/**
 * API faults (error rate, latency, reproducible with a seed) and robustness: odd input of every
 * kind gets an answer and never takes the simulator down.
 */
import { connect } from 'node:net';
import { ErrorBodySchema } from '../../provider/schemas';
import type { Faults } from '../../simulator/faults';
import { call, createBody, startSimulator, type Started } from './simulator-fixtures';

let s: Started;
beforeAll(async () => {
  s = await startSimulator({ clock: () => Date.now() });
});
afterAll(async () => {
  await s.sim.close();
  expect(s.errors).toEqual([]);
});
beforeEach(() => s.sim.reset());

test('GET /_sim/faults shows the defaults; POST merges', async () => {
  const f = (await call(s.url, 'GET', '/_sim/faults', { key: null })).json as Faults;
  expect(f).toEqual({ error_rate: 0, latency_ms: 0, webhook_drop_rate: 0, webhook_duplicate_rate: 0, webhook_reorder_rate: 0, ignore_idempotency_keys: false, reference_faults: {} });
  await call(s.url, 'POST', '/_sim/faults', { key: null, body: { latency_ms: 5 } });
  const g = (await call(s.url, 'POST', '/_sim/faults', { key: null, body: { webhook_drop_rate: 0.5 } })).json as Faults;
  expect(g).toMatchObject({ latency_ms: 5, webhook_drop_rate: 0.5 });
  await call(s.url, 'POST', '/_sim/reset', { key: null });
  expect(((await call(s.url, 'GET', '/_sim/faults', { key: null })).json as Faults).latency_ms).toBe(0);
});

test('error_rate 1: every /v1 call is 503 and none counts against the window', async () => {
  await call(s.url, 'POST', '/_sim/faults', { key: null, body: { error_rate: 1 } });
  for (let i = 0; i < 25; i++) {
    const a = await call(s.url, 'POST', '/v1/deliveries', { body: createBody() });
    expect(a.status).toBe(503);
    expect(ErrorBodySchema.parse(a.json).error.code).toBe('service_unavailable');
  }
  expect(s.sim.deliveries()).toEqual([]);
  await call(s.url, 'POST', '/_sim/faults', { key: null, body: { error_rate: 0 } });
  for (let i = 0; i < 20; i++) expect((await call(s.url, 'POST', '/v1/deliveries', { body: createBody() })).status).toBe(201);
});

test('error_rate 0.5 with a seed: a reproducible share of 503s', async () => {
  const statuses = async () => {
    s.sim.reset();
    s.sim.setFaults({ error_rate: 0.5 });
    const out: number[] = [];
    for (let i = 0; i < 40; i++) out.push((await call(s.url, 'GET', '/v1/health/token')).status);
    return out;
  };
  const a = await statuses();
  const b = await statuses();
  expect(a).toEqual(b);
  const failures = a.filter((x) => x === 503).length;
  expect(failures).toBeGreaterThan(5);
  expect(failures).toBeLessThan(35);
});

test('latency_ms delays every /v1 answer', async () => {
  s.sim.setFaults({ latency_ms: 120 });
  const t0 = performance.now();
  expect((await call(s.url, 'GET', '/v1/health/token')).status).toBe(200);
  expect(performance.now() - t0).toBeGreaterThanOrEqual(115);
  expect(s.sim.requestLog().at(-1)?.duration_ms).toBeGreaterThanOrEqual(115);
});

describe('robustness', () => {
  const json = { 'content-type': 'application/json' };
  const bodies = [
    'null',
    '"text"',
    '123',
    'true',
    '[]',
    '{"__proto__":{"polluted":1}}',
    '{"constructor":{"prototype":{"x":1}}}',
    '[' .repeat(100_000) + ']'.repeat(100_000),
    '{"destinations":' + '['.repeat(50_000) + ']'.repeat(50_000) + '}',
    JSON.stringify({ ...createBody(), destinations: Array.from({ length: 101 }, () => createBody().destinations[0]) }),
    JSON.stringify({ ...createBody(), desired_pickup_time: 'not a time' }),
    JSON.stringify({ ...createBody(), is_food: null }),
    '\u0000\u0001\u0002',
    '\uFEFF{}',
  ];

  test.each(['/v1/deliveries', '/v1/quotes'])('odd bodies to %s all get 4xx answers', async (path) => {
    for (const raw of bodies) {
      const a = await call(s.url, 'POST', path, { raw, headers: { ...json, 'idempotency-key': 'same' } });
      expect(a.status).toBeGreaterThanOrEqual(400);
      expect(a.status).toBeLessThan(500);
      ErrorBodySchema.parse(a.json);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((await call(s.url, 'GET', '/v1/health/token')).status).toBe(200);
  });

  test('odd bodies to PATCH and the control API', async () => {
    const d = (await call(s.url, 'POST', '/v1/deliveries', { body: createBody() })).json as { id: string };
    for (const raw of bodies) {
      const a = await call(s.url, 'PATCH', `/v1/deliveries/${d.id}`, { raw, headers: json });
      expect(a.status).toBeLessThan(500);
      const b = await call(s.url, 'POST', `/_sim/deliveries/${d.id}/advance`, { key: null, raw, headers: json });
      expect(b.status).toBeLessThan(500);
      const c = await call(s.url, 'POST', '/_sim/faults', { key: null, raw, headers: json });
      expect(c.status).toBeLessThan(500);
    }
    expect((await call(s.url, 'GET', `/v1/deliveries/${d.id}`)).status).toBe(200);
  });

  test('odd paths, queries and headers', async () => {
    const paths = ['/v1/deliveries?page=abc', '/v1/deliveries?page_size=-1&page=1e400', '/v1/orders?delivery_id=', '/v1//deliveries', '/v1/deliveries/%', '/v1/deliveries/..%2F..%2Fetc', '/%00', '/v1/deliveries/' + 'a'.repeat(5_000)];
    for (const p of paths) {
      const a = await call(s.url, 'GET', p);
      expect(a.status).toBeLessThan(500);
    }
    expect((await call(s.url, 'GET', '/v1/health/token', { key: null, headers: { authorization: 'Bearer ' } })).status).toBe(401);
    expect((await call(s.url, 'GET', '/v1/health/token', { key: 'x'.repeat(10_000) })).status).toBe(401);
  });

  test('a garbage request line and a client that disconnects mid-body do not hurt', async () => {
    await new Promise<void>((resolve) => {
      const sock = connect(Number(new URL(s.url).port), '127.0.0.1', () => sock.end('GARBAGE \u0001 / HTTP/9\r\n\r\n'));
      sock.on('close', () => resolve());
      sock.on('error', () => resolve());
      sock.resume();
    });
    await new Promise<void>((resolve) => {
      const sock = connect(Number(new URL(s.url).port), '127.0.0.1', () => {
        sock.write('POST /v1/deliveries HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sandbox-key\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"a":');
        setTimeout(() => sock.destroy(), 20);
      });
      sock.on('close', () => resolve());
      sock.on('error', () => resolve());
    });
    expect((await call(s.url, 'GET', '/v1/health/token')).status).toBe(200);
  });
});
