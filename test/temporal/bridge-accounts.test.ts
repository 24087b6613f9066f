/**
 * The bridge with many courier accounts, every part real: a registry file with two accounts
 * (keys and webhook secrets in files), the simulator holding both accounts' keys, the dev server.
 * Each account's webhooks are verified with its own secrets only, routed to its own workflow ID,
 * and looked up with its own key; an unknown account, and an account whose secrets cannot be read,
 * are answered exactly like a bad signature; a rotated secret or key is used from the next webhook,
 * a new account from the next reload.
 */
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import { request } from 'undici';
import { accountRegistryFromEnv, type AccountRegistry } from '../../accounts/registry';
import { registryAccounts, type BridgeAccounts } from '../../bridge/accounts';
import { accountWebhookPath, createBridge, UNKNOWN_ACCOUNT_LABEL, WEBHOOK_PATH, type Bridge } from '../../bridge/server';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { generateWebhookSecret, signWebhook } from '../../provider/webhook-signature';
import { createSimulator, type Simulator } from '../../simulator/server';
import { createBody } from '../http/simulator-fixtures';
import { parsePrometheusText } from '../helpers/prometheus';
import { testClient, uniqueTaskQueue } from '../helpers/temporal';

const A = { id: 'shop-a', key: 'bridge-key-a', secret: generateWebhookSecret() };
const B = { id: 'shop-b', key: 'bridge-key-b', secret: generateWebhookSecret() };
let dir: string;
let sim: Simulator;
let simUrl: string;
let temporal: Client;
let connection: Connection;
let registry: AccountRegistry;
let accounts: BridgeAccounts;
let bridge: Bridge;
let bridgeUrl: string;
let adminUrl: string;
const taskQueue = uniqueTaskQueue('bridge-accounts');
const started: string[] = [];
const logged: Record<string, unknown>[] = [];
let seq = 0;

const file = (name: string, text: string) => writeFileSync(join(dir, name), `${text}\n`);

function writeRegistry(ids: string[]): void {
  const accounts = ids.map((id) => ({ id, baseUrl: simUrl, apiKey: { file: `${id}.key` }, webhookSecrets: { file: `${id}.secrets` } }));
  file('accounts.json', JSON.stringify({ accounts }));
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bridge-accounts-'));
  sim = createSimulator({ onError: (m) => console.error(`simulator: ${m}`) });
  simUrl = (await sim.listen(0, '127.0.0.1')).url;
  for (const x of [A, B]) {
    sim.context.registerAccount(x.id, { key: x.key, webhook: null });
    file(`${x.id}.key`, x.key);
    file(`${x.id}.secrets`, x.secret);
  }
  writeRegistry([A.id, B.id]);
  registry = accountRegistryFromEnv({ DELIVERY_ACCOUNTS_FILE: join(dir, 'accounts.json'), DELIVERY_ACCOUNTS_RELOAD_MS: '50' });
  accounts = registryAccounts(registry, { timeoutMs: 5_000 });
  ({ client: temporal, connection } = await testClient());
  bridge = createBridge({ temporal, accounts, retryAfterSeconds: 1, log: (entry) => void logged.push(entry) });
  bridgeUrl = await bridge.listen(0, '127.0.0.1');
  adminUrl = await bridge.listenAdmin(0, '127.0.0.1');
});

afterAll(async () => {
  for (const id of started) await temporal.workflow.getHandle(id).terminate('test over').catch(() => undefined);
  await bridge.close();
  await accounts.close();
  registry.close();
  await connection.close();
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A delivery in the simulator made with this key, and (when `open`) a running workflow of its ID to signal: no worker needed for a signal to land. */
async function deliveryOf(account: { id: string; key: string }, open = true): Promise<{ deliveryId: string; workflowId: string }> {
  const reference = `BA-${Date.now().toString(36)}-${++seq}`;
  const res = await request(`${simUrl}/v1/deliveries`, { method: 'POST', headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' }, body: JSON.stringify(createBody({ reference_number: reference })) });
  expect(res.statusCode).toBe(201);
  const { id } = (await res.body.json()) as { id: string };
  const workflowId = deliveryWorkflowId(reference, account.id);
  if (open) {
    await temporal.workflow.start('delivery', { taskQueue, workflowId, args: [] });
    started.push(workflowId);
  }
  return { deliveryId: id, workflowId };
}

function event(deliveryId: string, status = 'ASSIGNED') {
  return { id: `evt_ba${Date.now()}${++seq}`, type: 'delivery.status_changed', created_at: new Date().toISOString(), data: { delivery_id: deliveryId, status } };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

async function post(path: string, evt: { id: string }, secret: string | null, at = Date.now()): Promise<Answer> {
  const body = JSON.stringify(evt);
  const signed = secret === null ? {} : signWebhook(secret, evt.id, Math.floor(at / 1000), body);
  const res = await request(bridgeUrl + path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...signed } });
  return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
}

/** What a caller sees of an answer: status, body and headers (but the date). */
const shape = (x: Answer) => ({ status: x.status, text: x.text, headers: Object.fromEntries(Object.entries(x.headers).filter(([k]) => k !== 'date')) });

async function signals(workflowId: string): Promise<number> {
  const history = await temporal.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'statusChanged').length;
}

async function counted(account: string, outcome: string, reason: string): Promise<number> {
  const res = await request(`${adminUrl}/metrics`);
  return parsePrometheusText(await res.body.text()).value('bridge_webhooks_total', { account, outcome, reason });
}

test("an account's webhook is verified with its secrets, looked up with its key and signalled to its workflow; another account's secret is refused 401 and counted for the account", async () => {
  const b = await deliveryOf(B);
  const refusedBefore = await counted(B.id, 'rejected', 'no_matching_signature');

  const crossed = await post(accountWebhookPath(B.id), event(b.deliveryId), A.secret);
  expect(crossed.status).toBe(401);
  expect(JSON.parse(crossed.text)).toEqual({ outcome: 'rejected', reason: 'signature not accepted: no_matching_signature' });
  expect(await counted(B.id, 'rejected', 'no_matching_signature')).toBe(refusedBefore + 1);
  // Nor at the default URL: with a registry that has no `default` account, it is an unknown one.
  expect((await post(WEBHOOK_PATH, event(b.deliveryId), B.secret)).status).toBe(401);
  expect(await signals(b.workflowId)).toBe(0);

  // A's own URL and secret, but B's delivery: A's key cannot see it (the look-up stays in A).
  const fromA = await post(accountWebhookPath(A.id), event(b.deliveryId), A.secret);
  expect(fromA.status).toBe(503);
  expect(JSON.parse(fromA.text)).toMatchObject({ outcome: 'retry_later', reason: 'unknown delivery' });
  // …and A's negative cache is A's: B's own webhook for that id is looked up and delivered.
  const own = await post(accountWebhookPath(B.id), event(b.deliveryId), B.secret);
  expect(own.status).toBe(200);
  expect(JSON.parse(own.text)).toEqual({ outcome: 'accepted', workflow_id: b.workflowId });
  expect(await signals(b.workflowId)).toBe(1);
  expect(await counted(B.id, 'accepted', 'signal_delivered')).toBeGreaterThanOrEqual(1);
});

test('an unknown account gets exactly the answer of a bad signature, counted under one label', async () => {
  const a = await deliveryOf(A, false);
  const unknownBefore = await counted(UNKNOWN_ACCOUNT_LABEL, 'rejected', 'no_matching_signature');
  const stale = Date.now() - 3_600_000;
  for (const [secret, at] of [
    [B.secret, Date.now()],
    [null, Date.now()],
    [A.secret, stale],
  ] as const) {
    const known = await post(accountWebhookPath(A.id), event(a.deliveryId), secret, at);
    if (secret === A.secret) expect(known.status).toBe(401); // out of tolerance, even with A's own secret
    for (const path of [accountWebhookPath('nobody'), accountWebhookPath('Not-An-Id'), accountWebhookPath('x'.repeat(300))]) {
      const unknown = await post(path, event(a.deliveryId), secret, at);
      expect(shape(unknown)).toEqual(shape(known));
    }
  }
  // A correctly signed webhook (by any secret) to an unknown account is refused the same way.
  const signedByA = await post(accountWebhookPath('nobody'), event(a.deliveryId), A.secret);
  expect(signedByA.status).toBe(401);
  expect(JSON.parse(signedByA.text)).toEqual({ outcome: 'rejected', reason: 'signature not accepted: no_matching_signature' });
  // Three unknown paths × one bad signature, plus the signed one: one label, never the path's text.
  expect(await counted(UNKNOWN_ACCOUNT_LABEL, 'rejected', 'no_matching_signature')).toBe(unknownBefore + 4);
  const text = await (await request(`${adminUrl}/metrics`)).body.text();
  expect(text).not.toContain('nobody');
  expect(text).not.toContain('Not-An-Id');
});

test("an account whose secrets cannot be read is answered as an unknown account (nothing tells that it exists), recorded for the operator as secrets_unreadable; the courier's next attempt is delivered once they can", async () => {
  const a = await deliveryOf(A);
  const evt = event(a.deliveryId);
  const before = await counted(A.id, 'rejected', 'secrets_unreadable');
  renameSync(join(dir, `${A.id}.secrets`), join(dir, `${A.id}.secrets.away`)); // a secret mount gone for a moment
  const unreadable = await post(accountWebhookPath(A.id), evt, A.secret);
  expect(shape(unreadable)).toEqual(shape(await post(accountWebhookPath('nobody'), evt, A.secret)));
  expect(unreadable.status).toBe(401);
  // The operator sees the real cause, naming the account: a count and a log line.
  expect(await counted(A.id, 'rejected', 'secrets_unreadable')).toBe(before + 1);
  expect(logged).toContainEqual(expect.objectContaining({ msg: 'webhook secrets cannot be read', account: A.id }));
  expect(await signals(a.workflowId)).toBe(0);

  // The courier retries a refused webhook (any answer but a 2xx): the same event, once the secrets are back.
  renameSync(join(dir, `${A.id}.secrets.away`), join(dir, `${A.id}.secrets`));
  const retried = await post(accountWebhookPath(A.id), evt, A.secret);
  expect(JSON.parse(retried.text)).toEqual({ outcome: 'accepted', workflow_id: a.workflowId });
  expect(await signals(a.workflowId)).toBe(1);
});

test("a rotated webhook secret and a rotated key are used from the next webhook; a new account from the next reload, all without a restart", async () => {
  const b = await deliveryOf(B);
  const next = generateWebhookSecret();
  file(`${B.id}.secrets`, `${next} ${B.secret}`);
  expect((await post(accountWebhookPath(B.id), event(b.deliveryId), next)).status).toBe(200);
  file(`${B.id}.secrets`, next);
  expect((await post(accountWebhookPath(B.id), event(b.deliveryId, 'UPCOMING'), B.secret)).status).toBe(401);
  expect(await signals(b.workflowId)).toBe(1);

  // The courier replaces B's key: the old one is refused there; once the key file holds the new one, look-ups work again.
  const fresh = await deliveryOf(B);
  sim.context.registerAccount(B.id, { key: 'bridge-key-b-2', webhook: null });
  const refused = await post(accountWebhookPath(B.id), event(fresh.deliveryId), next);
  expect(refused.status).toBe(503);
  expect(JSON.parse(refused.text)).toMatchObject({ reason: 'the provider rejected our API key while looking up the delivery' });
  file(`${B.id}.key`, 'bridge-key-b-2');
  expect((await post(accountWebhookPath(B.id), event(fresh.deliveryId), next)).status).toBe(200);

  // A new account in the registry file serves once the file is re-read.
  const C = { id: 'shop-c', key: 'bridge-key-c', secret: generateWebhookSecret() };
  sim.context.registerAccount(C.id, { key: C.key, webhook: null });
  file(`${C.id}.key`, C.key);
  file(`${C.id}.secrets`, C.secret);
  const c = await deliveryOf(C);
  writeRegistry([A.id, B.id, C.id]);
  const deadline = Date.now() + 10_000;
  let answer = await post(accountWebhookPath(C.id), event(c.deliveryId), C.secret);
  while (answer.status === 401 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    answer = await post(accountWebhookPath(C.id), event(c.deliveryId), C.secret);
  }
  expect(answer.status).toBe(200);
  expect(JSON.parse(answer.text)).toEqual({ outcome: 'accepted', workflow_id: c.workflowId });
});
