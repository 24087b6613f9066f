/**
 * Rate limits over HTTP: 429 with Retry-After right to the second (injected clock at scale 1,
 * so no test waits a minute), the Retry-After-Ms extension, families and keys counted apart,
 * and real waiting at time scale 60 (a one-second creation window).
 */
import { ErrorBodySchema } from '../../provider/schemas';
import { call, createBody, sleep, startSimulator, type Answer, type Started } from './simulator-fixtures';

function expect429(a: Answer, retryAfterMs: number) {
  expect(a.status).toBe(429);
  expect(ErrorBodySchema.parse(a.json).error.code).toBe('rate_limited');
  expect(a.headers['retry-after-ms']).toBe(String(retryAfterMs));
  expect(a.headers['retry-after']).toBe(String(Math.ceil(retryAfterMs / 1000)));
}

describe('at scale 1 with an injected clock', () => {
  let s: Started;
  let t = 0;
  beforeAll(async () => {
    s = await startSimulator({ apiKeys: ['other-key'], clock: () => t });
  });
  afterAll(async () => {
  await s.sim.close();
  expect(s.errors).toEqual([]);
});
  beforeEach(() => {
    s.sim.reset();
    t = Date.now();
  });

  test('the 21st creation inside a rolling minute gets 429 with exact Retry-After', async () => {
    const first = t + 100;
    for (let i = 1; i <= 20; i++) {
      t = first + (i - 1) * 100;
      expect((await call(s.url, 'POST', '/v1/deliveries', { body: createBody() })).status).toBe(201);
    }
    t = first + 12_345;
    expect429(await call(s.url, 'POST', '/v1/deliveries', { body: createBody() }), 60_000 - 12_345);
    // Seconds are rounded up: 47 655 ms is 48 s.
    expect(s.sim.requestLog().at(-1)?.status).toBe(429);

    // A 429 takes no slot; one millisecond before the first call leaves, still 429.
    t = first + 59_999;
    expect429(await call(s.url, 'POST', '/v1/deliveries', { body: createBody() }), 1);
    t = first + 60_000;
    expect((await call(s.url, 'POST', '/v1/deliveries', { body: createBody() })).status).toBe(201);
    // Now the second call (first + 100) is the oldest in the window.
    expect429(await call(s.url, 'POST', '/v1/deliveries', { body: createBody() }), 100);
  });

  test('validation failures and idempotent replays count; other families and other keys do not', async () => {
    for (let i = 0; i < 10; i++) expect((await call(s.url, 'POST', '/v1/deliveries', { body: {} })).status).toBe(422);
    const body = createBody();
    for (let i = 0; i < 10; i++) {
      const a = await call(s.url, 'POST', '/v1/deliveries', { body, headers: { 'idempotency-key': 'k1' } });
      expect(a.status).toBe(i === 0 ? 201 : 200);
    }
    expect429(await call(s.url, 'POST', '/v1/deliveries', { body }), 60_000);
    expect((await call(s.url, 'GET', '/v1/deliveries')).status).toBe(200);
    expect((await call(s.url, 'POST', '/v1/quotes', { body })).status).toBe(200);
    expect((await call(s.url, 'POST', '/v1/deliveries', { body, key: 'other-key' })).status).toBe(201);
  });

  test('the 101st quote inside ten rolling minutes gets 429 with exact Retry-After', async () => {
    const body = createBody();
    const first = t;
    for (let i = 0; i < 100; i++) {
      t = first + i * 10;
      expect((await call(s.url, 'POST', '/v1/quotes', { body })).status).toBe(200);
    }
    t = first + 1_000;
    expect429(await call(s.url, 'POST', '/v1/quotes', { body }), 599_000);
    t = first + 600_000;
    expect((await call(s.url, 'POST', '/v1/quotes', { body })).status).toBe(200);
    expect429(await call(s.url, 'POST', '/v1/quotes', { body }), 10);
  });

  test('other calls: 600 per minute, counting 404s too', async () => {
    for (let i = 0; i < 599; i++) expect((await call(s.url, 'GET', '/v1/health/token')).status).toBe(200);
    expect((await call(s.url, 'GET', '/v1/deliveries/del_missing')).status).toBe(404);
    expect429(await call(s.url, 'GET', '/v1/health/token'), 60_000);
    // Auth failures are answered before the window and do not count.
    expect((await call(s.url, 'GET', '/v1/health/token', { key: 'bad' })).status).toBe(401);
  });

  test('reset clears the windows', async () => {
    for (let i = 0; i < 20; i++) await call(s.url, 'POST', '/v1/deliveries', { body: {} });
    expect((await call(s.url, 'POST', '/v1/deliveries', { body: {} })).status).toBe(429);
    await call(s.url, 'POST', '/_sim/reset', { key: null });
    expect((await call(s.url, 'POST', '/v1/deliveries', { body: {} })).status).toBe(422);
  });

  test('limits can be raised through options', async () => {
    const raised = await startSimulator({ clock: () => t, rateLimits: { creations: { limit: 25 } } });
    try {
      for (let i = 0; i < 25; i++) expect((await call(raised.url, 'POST', '/v1/deliveries', { body: {} })).status).toBe(422);
      expect((await call(raised.url, 'POST', '/v1/deliveries', { body: {} })).status).toBe(429);
    } finally {
      await raised.sim.close();
    }
  });
});

describe('at time scale 60 in real time (creation window 1 s)', () => {
  let s: Started;
  beforeAll(async () => {
    s = await startSimulator({ timeScale: 60 });
  });
  afterAll(async () => {
  await s.sim.close();
  expect(s.errors).toEqual([]);
});

  test('a call before Retry-After-Ms is refused, one after it succeeds', async () => {
    for (let i = 0; i < 20; i++) expect((await call(s.url, 'POST', '/v1/deliveries', { body: createBody() })).status).toBe(201);
    const refused = await call(s.url, 'POST', '/v1/deliveries', { body: createBody() });
    expect(refused.status).toBe(429);
    const ms = Number(refused.headers['retry-after-ms']);
    expect(ms).toBeGreaterThan(150);
    expect(ms).toBeLessThanOrEqual(1_000);
    expect(refused.headers['retry-after']).toBe('1');

    await sleep(ms - 150);
    const early = await call(s.url, 'POST', '/v1/deliveries', { body: createBody() });
    expect(early.status).toBe(429);
    await sleep(Number(early.headers['retry-after-ms']) + 5);
    expect((await call(s.url, 'POST', '/v1/deliveries', { body: createBody() })).status).toBe(201);
  });
});
