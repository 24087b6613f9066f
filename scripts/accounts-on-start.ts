/**
 * `npm start` with DELIVERY_ACCOUNTS_FILE (docs/accounts.md): the operator's registry, made ready
 * for the local stack, and every account set up in the local simulator as its holder would set it
 * up in the courier's portal.
 *
 * The worker and the bridge read a copy, `.data/accounts.json`: the operator's file with each
 * file reference made absolute, and, for an account without `webhookSecrets`, a secret generated
 * once into `.data/accounts/<id>.webhook-secret` (0600) — the simulator signs that account's
 * webhooks with it and the bridge verifies them with it; the operator's file is never written.
 * The copy is written again when the operator's file changes (an invalid change is refused, one
 * line, the last valid copy kept), and the worker and bridge re-read it as they re-read any
 * registry.
 *
 * Each account whose base URL is the local simulator is registered there (PUT
 * /_sim/accounts/<id>): its key (read from its reference), its webhook URL (the bridge's
 * /webhooks/delivery/<id>), its first webhook secret and its limits; again whenever one of these
 * changes (a rotated key file included), checked every second. One line per account: id, base
 * URL, key fingerprint; never a key or a secret.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { request } from 'undici';
import { type Account, parseRegistry } from '../accounts/registry';
import type { CallFamily, RateLimit } from '../provider/limits';
import { generateWebhookSecret, secretFingerprint } from '../provider/webhook-signature';
import { keyFingerprint } from '../simulator/auth';

export interface LocalAccounts {
  /** The copy the worker and the bridge read (their DELIVERY_ACCOUNTS_FILE). */
  file: string;
  /** Stops watching the operator's file. */
  stop(): void;
}

type RawRef = { file: string } | { env: string };
interface RawAccount {
  id: string;
  apiKey: RawRef;
  webhookSecrets?: RawRef;
  notify?: Record<string, { url: string; secrets: RawRef }>;
  [field: string]: unknown;
}

const absolute = (ref: RawRef, dir: string): RawRef => ('file' in ref && !isAbsolute(ref.file) ? { file: resolve(dir, ref.file) } : ref);

/** The operator's registry text → the local copy's; throws (naming the account and field) when the registry is not valid. */
function localCopy(text: string, source: string, dataDir: string, env: NodeJS.ProcessEnv): string {
  parseRegistry(text, source, env); // the same checks as the worker's and the bridge's, with their environment
  const dir = dirname(source);
  const accounts = (JSON.parse(text) as { accounts: RawAccount[] }).accounts.map((a) => {
    let webhookSecrets = a.webhookSecrets && absolute(a.webhookSecrets, dir);
    if (!webhookSecrets) {
      const generated = join(dataDir, 'accounts', `${a.id}.webhook-secret`);
      if (!existsSync(generated)) {
        mkdirSync(dirname(generated), { recursive: true });
        writeFileSync(generated, generateWebhookSecret() + '\n', { mode: 0o600 });
      }
      webhookSecrets = { file: generated };
    }
    const notify = a.notify && Object.fromEntries(Object.entries(a.notify).map(([name, e]) => [name, { ...e, secrets: absolute(e.secrets, dir) }]));
    return { ...a, apiKey: absolute(a.apiKey, dir), webhookSecrets, ...(notify ? { notify } : {}) };
  });
  return JSON.stringify({ accounts }, null, 2) + '\n';
}

const limitsText = (limits: Readonly<Record<CallFamily, RateLimit>>) =>
  Object.entries(limits)
    .map(([family, l]) => `${family}=${l.limit}/${l.windowMs}ms`)
    .join(',');

const sameOrigin = (a: string, b: string) => {
  const host = (u: URL) => (u.hostname === 'localhost' ? '127.0.0.1' : u.hostname);
  const [x, y] = [new URL(a), new URL(b)];
  return x.protocol === y.protocol && host(x) === host(y) && x.port === y.port;
};

/**
 * Writes the local copy of `registryFile`, registers its accounts in the simulator at
 * `simulatorUrl` with webhooks to `bridgeUrl`, and keeps both in step with the operator's file.
 * Throws at once if the registry is not valid. `env`: the environment the worker and the bridge
 * get, where the registry's `{"env": …}` references are read (npm start's key and secrets).
 */
export async function setUpLocalAccounts(o: { registryFile: string; dataDir: string; simulatorUrl: string; bridgeUrl: string; log: (line: string) => void; env?: NodeJS.ProcessEnv }): Promise<LocalAccounts> {
  const env = o.env ?? process.env;
  const source = resolve(o.registryFile);
  const file = join(o.dataDir, 'accounts.json');
  let seenText = readFileSync(source, 'utf8');
  writeFileSync(file, localCopy(seenText, source, o.dataDir, env));
  /** Per account: what the simulator was last told, as one comparable line (fingerprints only). */
  const registered = new Map<string, string>();

  const register = async (a: Account, quiet: boolean) => {
    if (!sameOrigin(a.baseUrl, o.simulatorUrl)) {
      if (!registered.has(a.id)) o.log(`account ${a.id}: ${a.baseUrl}, key ${keyFingerprint(a.apiKey())} (not the local simulator: not registered there)`);
      registered.set(a.id, 'elsewhere');
      return;
    }
    const key = a.apiKey();
    const secret = a.webhookSecrets()[0]!;
    const body = { key, webhook: { url: `${o.bridgeUrl}/webhooks/delivery/${a.id}`, secret }, limits: limitsText(a.limits) };
    const seen = [keyFingerprint(key), secretFingerprint(secret), body.webhook.url, body.limits].join(' ');
    if (registered.get(a.id) === seen) return;
    const res = await request(`${o.simulatorUrl}/_sim/accounts/${a.id}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const answer = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`account ${a.id}: the simulator refused it (${res.statusCode} ${answer})`);
    registered.set(a.id, seen);
    if (!quiet) o.log(`account ${a.id}: ${a.baseUrl}, key ${keyFingerprint(key)}, webhooks to ${body.webhook.url} (secret ${secretFingerprint(secret)})`);
  };
  const registerAll = async (quiet = false) => {
    for (const { account } of parseRegistry(readFileSync(file, 'utf8'), file, env).values()) await register(account, quiet);
  };
  await registerAll();

  let busy = false;
  let lastError = '';
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void (async () => {
      const text = readFileSync(source, 'utf8');
      if (text !== seenText) {
        seenText = text;
        try {
          writeFileSync(file, localCopy(text, source, o.dataDir, env));
        } catch (err) {
          throw new Error(`${(err as Error).message} (the last valid registry is kept)`, { cause: err });
        }
        o.log(`accounts: ${source} changed; the worker and the bridge re-read it`);
      }
      await registerAll().catch((err: Error) => {
        // The copy is written: the worker and bridge serve it; only the local courier lacks the account.
        throw new Error(`${err.message} (the worker and the bridge serve the new registry; the simulator does not know this account)`, { cause: err });
      });
      lastError = '';
    })()
      .catch((err: Error) => {
        // Said once per new problem, not every second.
        if (err.message !== lastError) o.log(`accounts: ${err.message}`);
        lastError = err.message;
      })
      .finally(() => {
        busy = false;
      });
  }, 1_000);
  timer.unref();
  return { file, stop: () => clearInterval(timer) };
}
