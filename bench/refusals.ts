/** npm run bench -- refusals (docs/accounts.md, "Webhooks"): docs/benchmarks.md, "Refused webhooks per account". Interleaved over one
 * connection, so load on the machine touches both paths alike; that the answers are identical: test/temporal/bridge-accounts.test.ts. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { Agent, request } from 'undici';
import { accountRegistryFromEnv } from '../accounts/registry';
import { registryAccounts } from '../bridge/accounts';
import { accountWebhookPath, createBridge } from '../bridge/server';
import { generateWebhookSecret, signWebhook } from '../provider/webhook-signature';
import { percentile } from './measure';

const REQUESTS = Number(process.env.REFUSALS_BENCH_REQUESTS ?? 3_000);
const WARM = 200;

export async function refusalsBenchmark(): Promise<Record<string, number | string>> {
  const dir = mkdtempSync(join(tmpdir(), 'refusals-bench-'));
  writeFileSync(join(dir, 'key'), 'bench-key');
  writeFileSync(join(dir, 'one'), generateWebhookSecret());
  writeFileSync(join(dir, 'two'), `${generateWebhookSecret()} ${generateWebhookSecret()}`);
  const account = (id: string, secrets: string) => ({ id, baseUrl: 'http://127.0.0.1:4010', apiKey: { file: 'key' }, webhookSecrets: { file: secrets } });
  writeFileSync(join(dir, 'accounts.json'), JSON.stringify({ accounts: [account('one-secret', 'one'), account('two-secrets', 'two')] }));
  const registry = accountRegistryFromEnv({ DELIVERY_ACCOUNTS_FILE: join(dir, 'accounts.json') }, { watch: false });
  const accounts = registryAccounts(registry);
  // A lazy client: no refused webhook reaches Temporal.
  const bridge = createBridge({ temporal: new Client(), accounts, log: () => undefined, rejectedLogLinesPerMinute: 0 });
  const url = await bridge.listen(0, '127.0.0.1');
  const agent = new Agent({ connections: 1 });
  const wrong = generateWebhookSecret();
  const paths = { 'one-secret': accountWebhookPath('one-secret'), 'two-secrets': accountWebhookPath('two-secrets'), unknown: accountWebhookPath('not-served') };
  const times: Record<keyof typeof paths, number[]> = { 'one-secret': [], 'two-secrets': [], unknown: [] };
  try {
    for (let i = 0; i < WARM + REQUESTS; i++) {
      for (const [kind, path] of Object.entries(paths) as [keyof typeof paths, string][]) {
        const evt = { id: `evt_bench${i}`, type: 'delivery.status_changed', created_at: new Date().toISOString(), data: { delivery_id: 'del_bench', status: 'ASSIGNED' } };
        const body = JSON.stringify(evt);
        const started = performance.now();
        const res = await request(url + path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...signWebhook(wrong, evt.id, Math.floor(Date.now() / 1000), body) }, dispatcher: agent });
        await res.body.text();
        if (res.statusCode !== 401) throw new Error(`${kind}: expected 401, got ${res.statusCode}`);
        if (i >= WARM) times[kind].push((performance.now() - started) * 1000);
      }
    }
  } finally {
    await bridge.close();
    await agent.close();
    await accounts.close();
    registry.close();
    rmSync(dir, { recursive: true, force: true });
  }
  const figures: Record<string, number | string> = { requests_each: REQUESTS };
  for (const [kind, list] of Object.entries(times)) for (const p of [10, 50, 90]) figures[`${kind}_p${p}_us`] = percentile(list.sort((a, b) => a - b), p / 100, 0);
  return figures;
}
