/**
 * Courier accounts in the simulator over real HTTP: registered through PUT /_sim/accounts/<id>,
 * each account's deliveries send their webhooks to its own URL signed with its own secret (the
 * default key's still go to the simulator's endpoint), each key has its own rate windows and
 * limits, a replaced key is refused while the new one sees the account's deliveries, the control
 * API's guards hold, no answer carries a key or a secret, and accounts survive a restart.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { WebhookEventSchema } from '../../provider/schemas';
import { generateWebhookSecret } from '../../provider/webhook-signature';
import { keyFingerprint } from '../../simulator/auth';
import { call, createBody, KEY, startReceiver, startSimulator, type Receiver, type Started } from './simulator-fixtures';

const A = { key: 'key-of-account-a', secret: generateWebhookSecret() };
const B = { key: 'key-of-account-b', secret: generateWebhookSecret() };
const defaultSecret = generateWebhookSecret();
let rxA: Receiver;
let rxB: Receiver;
let rxDefault: Receiver;
const started: Started[] = [];

beforeAll(async () => {
  [rxA, rxB, rxDefault] = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
});
afterAll(async () => {
  for (const s of started) {
    await s.sim.close();
    expect(s.errors).toEqual([]);
  }
  await Promise.all([rxA, rxB, rxDefault].map((r) => r.close()));
});
beforeEach(() => {
  for (const r of [rxA, rxB, rxDefault]) r.received.length = 0;
});

async function simulator(options: Parameters<typeof startSimulator>[0] = {}): Promise<Started> {
  const s = await startSimulator({ timeScale: 10_000, ...options });
  started.push(s);
  return s;
}

const register = (s: Started, id: string, body: unknown, headers: Record<string, string> = {}) => call(s.url, 'PUT', `/_sim/accounts/${id}`, { key: null, body, headers });

async function create(s: Started, key: string, reference: string): Promise<{ status: number; id?: string }> {
  const a = await call(s.url, 'POST', '/v1/deliveries', { key, body: createBody({ reference_number: reference }) });
  return { status: a.status, id: (a.json as { id?: string } | undefined)?.id };
}

/** The delivery ids of the events a receiver got, each verified with `secret` (throws on a wrong signature). */
function deliveriesSeen(rx: Receiver, secret: string): string[] {
  const wh = new Webhook(secret);
  return rx.received.map((r) => {
    wh.verify(r.body, r.headers);
    return WebhookEventSchema.parse(JSON.parse(r.body)).data.delivery_id;
  });
}

test("each account's webhooks go to its own URL signed with its own secret; the default key's to the simulator's endpoint", async () => {
  const s = await simulator({ webhook: { url: rxDefault.url, secret: defaultSecret } });
  expect((await register(s, 'shop-a', { key: A.key, webhook: { url: rxA.url, secret: A.secret } })).status).toBe(201);
  expect((await register(s, 'shop-b', { key: B.key, webhook: { url: rxB.url, secret: B.secret } })).status).toBe(201);

  const a = await create(s, A.key, 'A-1');
  const b = await create(s, B.key, 'B-1');
  const d = await create(s, KEY, 'D-1');
  for (const x of [a, b, d]) {
    expect(x.status).toBe(201);
    await call(s.url, 'POST', `/_sim/deliveries/${x.id}/advance`, { key: null });
  }
  await Promise.all([rxA.waitFor(1), rxB.waitFor(1), rxDefault.waitFor(1)]);
  await s.sim.webhooksIdle();
  expect(deliveriesSeen(rxA, A.secret)).toEqual([a.id]);
  expect(deliveriesSeen(rxB, B.secret)).toEqual([b.id]);
  expect(deliveriesSeen(rxDefault, defaultSecret)).toEqual([d.id]);
  // Signed with its own account's secret only: B's secret does not verify A's event.
  expect(() => deliveriesSeen(rxA, B.secret)).toThrow();

  // Data stays scoped per account: B cannot read A's delivery.
  expect((await call(s.url, 'GET', `/v1/deliveries/${a.id}`, { key: B.key })).status).toBe(404);
  expect((await call(s.url, 'GET', `/v1/deliveries/${a.id}`, { key: A.key })).status).toBe(200);
  const listed = (await call(s.url, 'GET', '/_sim/deliveries', { key: null })).json as { data: { account: string | null; delivery: { id: string } }[] };
  expect(Object.fromEntries(listed.data.map((x) => [x.delivery.id, x.account]))).toEqual({ [a.id!]: 'shop-a', [b.id!]: 'shop-b', [d.id!]: null });
});

test('an account without a webhook endpoint gets none (not the default one)', async () => {
  const s = await simulator({ webhook: { url: rxDefault.url, secret: defaultSecret } });
  await register(s, 'quiet', { key: A.key });
  const a = await create(s, A.key, 'Q-1');
  await call(s.url, 'POST', `/_sim/deliveries/${a.id}/advance`, { key: null });
  await s.sim.webhooksIdle();
  expect(rxDefault.received).toHaveLength(0);
  expect(s.sim.webhookEvents().map((e) => e.state)).toEqual(['no_endpoint']);
});

test("each key has its own windows and an account its own limits; one account's 429 leaves the others alone", async () => {
  const s = await simulator({ timeScale: 1 });
  await register(s, 'small', { key: A.key, limits: 'creations=2/60s' });
  await register(s, 'large', { key: B.key });
  const small = [await create(s, A.key, 'S-1'), await create(s, A.key, 'S-2'), await create(s, A.key, 'S-3')];
  expect(small.map((x) => x.status)).toEqual([201, 201, 429]);
  // The contract's 20 a minute for the other account and for the default key, untouched by the first.
  for (let i = 0; i < 20; i++) expect((await create(s, B.key, `L-${i}`)).status).toBe(201);
  expect((await create(s, B.key, 'L-20')).status).toBe(429);
  expect((await create(s, KEY, 'D-1')).status).toBe(201);
  // Raising the account's limit takes effect at once; its calls already in the window still count.
  await register(s, 'small', { key: A.key, limits: 'creations=3/60s' });
  expect((await create(s, A.key, 'S-4')).status).toBe(201);
  expect((await create(s, A.key, 'S-5')).status).toBe(429);
});

test("a replaced key is refused at once; the new key sees the account's deliveries; a key belongs to one account", async () => {
  const s = await simulator();
  await register(s, 'rotating', { key: A.key });
  const a = await create(s, A.key, 'R-1');
  const replaced = await register(s, 'rotating', { key: 'key-of-account-a-2' });
  expect(replaced.status).toBe(200);
  expect(replaced.json).toMatchObject({ id: 'rotating', key_fingerprint: keyFingerprint('key-of-account-a-2') });
  expect((await call(s.url, 'GET', `/v1/deliveries/${a.id}`, { key: A.key })).status).toBe(401);
  expect((await call(s.url, 'GET', `/v1/deliveries/${a.id}`, { key: 'key-of-account-a-2' })).status).toBe(200);

  // Neither its current key nor its first one can be given to another account.
  for (const key of ['key-of-account-a-2', A.key]) {
    const taken = await register(s, 'other', { key });
    expect(taken.status).toBe(409);
    expect(taken.json).toMatchObject({ error: { code: 'conflict' } });
  }
  // Removed: its key is refused.
  expect((await call(s.url, 'DELETE', '/_sim/accounts/rotating', { key: null })).status).toBe(200);
  expect((await call(s.url, 'GET', `/v1/deliveries/${a.id}`, { key: 'key-of-account-a-2' })).status).toBe(401);
  expect((await call(s.url, 'GET', '/_sim/accounts/rotating', { key: null })).status).toBe(404);
});

test('the control API validates by field, keeps its guards, and never shows a key or a secret', async () => {
  const s = await simulator();
  const bad = await register(s, 'Not_An_Id', { key: A.key });
  expect(bad.status).toBe(422);
  expect(bad.json).toMatchObject({ error: { details: [{ field: 'id' }] } });
  const fields = await register(s, 'shop', { key: '', webhook: { url: 'ftp://x', secret: 'short' }, limits: 'creations=lots', extra: 1 });
  expect(fields.status).toBe(422);
  const details = (fields.json as { error: { details: { field: string; message: string }[] } }).error.details;
  expect(details.map((d) => d.field)).toEqual(expect.arrayContaining(['key', 'webhook.url', 'webhook.secret', 'limits']));
  expect(details.some((d) => d.message.includes('extra'))).toBe(true);
  // Plain-text PUT (a form) and a foreign page are refused before anything changes.
  expect((await register(s, 'shop', { key: A.key }, { 'content-type': 'text/plain' })).status).toBe(415);
  expect((await register(s, 'shop', { key: A.key }, { origin: 'http://evil.example' })).status).toBe(403);
  expect((await call(s.url, 'GET', '/_sim/accounts', { key: null })).json).toEqual({ data: [] });

  await register(s, 'shop', { key: A.key, webhook: { url: rxA.url, secret: A.secret }, limits: 'quotes=10/10m' });
  for (const path of ['/_sim/accounts', '/_sim/accounts/shop', '/_sim/overview', '/_sim']) {
    const a = await call(s.url, 'GET', path, { key: null });
    expect(a.status).toBe(200);
    expect(a.text).not.toContain(A.key);
    expect(a.text).not.toContain(A.secret.slice(6, 20));
  }
  expect((await call(s.url, 'GET', '/_sim/accounts', { key: null })).json).toEqual({
    data: [{ id: 'shop', key_fingerprint: keyFingerprint(A.key), webhook_url: rxA.url, secret_fingerprint: expect.stringMatching(/^sha256:[0-9a-f]{12}$/), limits: 'quotes=10/10m' }],
  });
  expect(((await call(s.url, 'GET', '/_sim/overview', { key: null })).json as { keys: { label: string }[] }).keys.map((k) => k.label)).toContain('account shop');
});

test('accounts survive a restart on the same state file: key, webhook endpoint and limits; the file holds no key', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sim-accounts-'));
  try {
    const stateFile = join(dir, 'state.json');
    const first = await startSimulator({ timeScale: 1, stateFile });
    await register(first, 'kept', { key: A.key, webhook: { url: rxA.url, secret: A.secret }, limits: 'creations=1/60s' });
    const a = await create(first, A.key, 'K-1');
    expect(a.status).toBe(201);
    await first.sim.close();
    expect(readFileSync(stateFile, 'utf8')).not.toContain(A.key);

    const second = await simulator({ timeScale: 1, stateFile });
    expect(((await call(second.url, 'GET', '/_sim/accounts/kept', { key: null })).json as { limits: string }).limits).toBe('creations=1/60s');
    // The key still works and still sees its delivery; the window starts afresh (not kept), the limit is the account's.
    expect((await call(second.url, 'GET', `/v1/deliveries/${a.id}`, { key: A.key })).status).toBe(200);
    expect((await create(second, A.key, 'K-2')).status).toBe(201);
    expect((await create(second, A.key, 'K-3')).status).toBe(429);
    await call(second.url, 'POST', `/_sim/deliveries/${a.id}/advance`, { key: null });
    await rxA.waitFor(1);
    expect(deliveriesSeen(rxA, A.secret)).toEqual([a.id]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
