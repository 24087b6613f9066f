/**
 * `npm start`'s accounts (scripts/accounts-on-start.ts) against a real simulator: every account of
 * the registry whose base URL is the simulator is registered there with its key, the bridge's
 * URL for it and its first webhook secret (one generated into the data folder when it has none);
 * the worker's and bridge's copy resolves the operator's relative paths; one line per account
 * names its key by fingerprint only; a key rotated in its file reaches the simulator by itself.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseRegistry } from '../../accounts/registry';
import { secretFingerprint, generateWebhookSecret } from '../../provider/webhook-signature';
import { setUpLocalAccounts, type LocalAccounts } from '../../scripts/accounts-on-start';
import { keyFingerprint } from '../../simulator/auth';
import { call, startSimulator, type Started } from './simulator-fixtures';

let dir: string;
let s: Started;
let local: LocalAccounts | undefined;
const secretA = generateWebhookSecret();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'accounts-on-start-'));
  s = await startSimulator();
});
afterAll(async () => {
  local?.stop();
  await s.sim.close();
  rmSync(dir, { recursive: true, force: true });
});

test('registers every local account, makes a secret for one without, writes an absolute copy, and follows a rotated key', async () => {
  const conf = join(dir, 'conf');
  const data = join(dir, 'data');
  mkdirSync(conf);
  writeFileSync(join(conf, 'a.key'), 'local-key-a\n');
  writeFileSync(join(conf, 'b.key'), 'local-key-b\n');
  writeFileSync(join(conf, 'a.secrets'), secretA);
  writeFileSync(
    join(conf, 'accounts.json'),
    JSON.stringify({
      accounts: [
        { id: 'shop-a', baseUrl: s.url, apiKey: { file: 'a.key' }, webhookSecrets: { file: 'a.secrets' }, limits: 'creations=5/60s' },
        { id: 'shop-b', baseUrl: s.url.replace('127.0.0.1', 'localhost'), apiKey: { file: 'b.key' } },
        { id: 'elsewhere', baseUrl: 'https://api.courier.example', apiKey: { file: 'b.key' } },
      ],
    }),
  );
  const lines: string[] = [];
  local = await setUpLocalAccounts({ registryFile: join(conf, 'accounts.json'), dataDir: data, simulatorUrl: s.url, bridgeUrl: 'http://127.0.0.1:8080', log: (l) => lines.push(l) });

  // The copy is a valid registry on its own, wherever it is read from, and B now has a secret in the data folder.
  const copy = parseRegistry(readFileSync(local.file, 'utf8'), join(tmpdir(), 'anywhere.json'));
  const generated = join(data, 'accounts', 'shop-b.webhook-secret');
  expect(statSync(generated).mode & 0o777).toBe(0o600);
  const secretB = readFileSync(generated, 'utf8').trim();
  expect(copy.get('shop-b')!.account.webhookSecrets()).toEqual([secretB]);
  expect(copy.get('shop-a')!.account.apiKey()).toBe('local-key-a');

  const listed = (await call(s.url, 'GET', '/_sim/accounts', { key: null })).json as { data: Record<string, unknown>[] };
  expect(listed.data).toEqual([
    { id: 'shop-a', key_fingerprint: keyFingerprint('local-key-a'), webhook_url: 'http://127.0.0.1:8080/webhooks/delivery/shop-a', secret_fingerprint: secretFingerprint(secretA), limits: 'creations=5/60000ms,quotes=100/600000ms,other=600/60000ms' },
    { id: 'shop-b', key_fingerprint: keyFingerprint('local-key-b'), webhook_url: 'http://127.0.0.1:8080/webhooks/delivery/shop-b', secret_fingerprint: secretFingerprint(secretB), limits: expect.any(String) },
  ]);
  expect(lines).toHaveLength(3);
  expect(lines.join('\n')).toContain(`account shop-a: ${s.url}, key ${keyFingerprint('local-key-a')}`);
  expect(lines.join('\n')).toContain('account elsewhere: https://api.courier.example');
  expect(lines.join('\n')).not.toMatch(/local-key-|whsec_/);

  // A key rotated inside its file (no change to the registry) reaches the simulator: the new key works, the old one no longer.
  writeFileSync(join(conf, 'a.key'), 'local-key-a-2\n');
  const deadline = Date.now() + 10_000;
  while ((await call(s.url, 'GET', '/v1/deliveries', { key: 'local-key-a-2' })).status !== 200) {
    if (Date.now() > deadline) throw new Error('the rotated key never reached the simulator');
    await new Promise((r) => setTimeout(r, 100));
  }
  expect((await call(s.url, 'GET', '/v1/deliveries', { key: 'local-key-a' })).status).toBe(401);
});

test('an invalid registry stops the start, naming the account and the field', async () => {
  const file = join(dir, 'bad.json');
  writeFileSync(file, JSON.stringify({ accounts: [{ id: 'shop-x', baseUrl: s.url, apiKey: { file: 'missing.key' } }] }));
  await expect(setUpLocalAccounts({ registryFile: file, dataDir: join(dir, 'data2'), simulatorUrl: s.url, bridgeUrl: 'http://127.0.0.1:8080', log: () => undefined })).rejects.toThrow(/account shop-x: apiKey/);
});

test("reads a registry's {\"env\": …} references in the environment it is given (npm start's key and secrets for its processes), not only its own shell's", async () => {
  const file = join(dir, 'env-refs.json');
  const secret = generateWebhookSecret();
  writeFileSync(file, JSON.stringify({ accounts: [{ id: 'default', baseUrl: s.url, apiKey: { env: 'DELIVERY_API_KEY' }, webhookSecrets: { env: 'DELIVERY_WEBHOOK_SECRETS' } }] }));
  const { DELIVERY_API_KEY: _k, DELIVERY_WEBHOOK_SECRETS: _w, ...shell } = process.env;
  const lines: string[] = [];
  mkdirSync(join(dir, 'data3'));
  const envLocal = await setUpLocalAccounts({ registryFile: file, dataDir: join(dir, 'data3'), simulatorUrl: s.url, bridgeUrl: 'http://127.0.0.1:8080', log: (l) => lines.push(l), env: { ...shell, DELIVERY_API_KEY: 'env-key-d', DELIVERY_WEBHOOK_SECRETS: secret } });
  try {
    expect(lines).toEqual([expect.stringContaining(`account default: ${s.url}, key ${keyFingerprint('env-key-d')}`)]);
    expect((await call(s.url, 'GET', '/v1/deliveries', { key: 'env-key-d' })).status).toBe(200); // registered with the given key
  } finally {
    envLocal.stop();
  }
  // Without them, the start stops naming the account and the variable.
  await expect(setUpLocalAccounts({ registryFile: file, dataDir: join(dir, 'data4'), simulatorUrl: s.url, bridgeUrl: 'http://127.0.0.1:8080', log: () => undefined, env: shell })).rejects.toThrow(/account default: apiKey: environment variable DELIVERY_API_KEY is not set/);
});
