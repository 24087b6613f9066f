// accounts/: the courier accounts this deployment serves (docs/accounts.md), worker- and bridge-side only.
/**
 * The account registry: every courier account, its base URL, limits, and where its secrets are.
 *
 * `DELIVERY_ACCOUNTS_FILE` names a JSON file (a config map, say); secrets stay out of it: the API
 * key, webhook secrets and notification secrets are references to a file (a mounted secret) or an
 * environment variable, read at each use, so a rotated key or secret is used from the next call.
 * The file itself is watched and re-read when it changes: a new account serves at once. A file
 * that stops being valid while running is refused and the last valid registry kept (one error
 * line per change); at start, the error stops the process. Every error names the account and the
 * field, never a secret's value. A reload checks only the entries that are new or changed: one
 * account edited among 10,000 costs one entry's checks, not 10,000.
 *
 * With no file, the environment defines one account, `default`, exactly as before accounts:
 * DELIVERY_API_URL, DELIVERY_API_KEY, PROVIDER_RATE_LIMITS, DELIVERY_WEBHOOK_SECRETS,
 * DELIVERY_NOTIFY_ENDPOINTS / _SECRETS.
 */
import { type FSWatcher, readFileSync, statSync, watch as watchFolder } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import { ACCOUNT_ID, ACCOUNT_ID_RULE, DEFAULT_ACCOUNT } from '../contract/accounts';
import { isSafeApiUrl, LOCAL_SANDBOX_KEY, LOCAL_SANDBOX_URL } from '../provider/config';
import { parseRateLimits, PROVIDER_RATE_LIMITS, type CallFamily, type RateLimit } from '../provider/limits';
import { fieldPath } from '../provider/validation';
import { notifyConfigFromEnv } from '../notifications/config';
import { secretKey } from '../provider/webhook-signature';

/** Where a secret is: a file (relative to the registry file's folder) or an environment variable. */
const SecretRefSchema = z.union([
  z.strictObject({ file: z.string().min(1, { message: 'must name a file' }) }),
  z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: 'must name an environment variable' }) }),
], { message: 'must be {"file": "<path>"} or {"env": "<VARIABLE>"} (never the secret itself)' });
export type SecretRef = z.output<typeof SecretRefSchema>;

const ENDPOINT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

const LimitsSchema = z.string().transform((text, ctx) => {
  try {
    return parseRateLimits(text);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
    return z.NEVER;
  }
});

const EndpointSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).refine((u) => isSafeApiUrl(u), { message: 'must be https:// (http:// only to loopback)' }).refine((u) => !new URL(u).username && !new URL(u).password, { message: 'credentials do not belong in the URL (requests are signed)' }),
  secrets: SecretRefSchema,
});

const AccountSchema = z
  .strictObject({
    id: z.string().regex(ACCOUNT_ID, { message: ACCOUNT_ID_RULE }),
    /** The courier API this account's key belongs to: sandbox or production. */
    baseUrl: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL such as https://api.example.com' }),
    /** Plain http to a host that is not loopback: only for a sandbox on a private network. */
    allowHttp: z.boolean().default(false),
    apiKey: SecretRefSchema,
    /** `creations=20/60s,quotes=100/10m,other=600/60s`; families left out keep the contract's limits. Lower than the key's own where a courier counts per merchant group. */
    limits: LimitsSchema.default(() => ({ ...PROVIDER_RATE_LIMITS })),
    /** The secrets the courier signs this account's webhooks with; a file or variable may hold several (rotation), separated by white space or commas. */
    webhookSecrets: SecretRefSchema.optional(),
    /** Notification endpoints by name, this account's own. */
    notify: z.record(z.string().regex(ENDPOINT_NAME, { message: 'an endpoint name is 1 to 63 of letters, digits, _ . -' }), EndpointSchema).default({}),
  })
  .refine((a) => a.allowHttp || isSafeApiUrl(a.baseUrl), { message: 'must be https:// (the API key would travel in clear); http:// only to loopback, or with "allowHttp": true for a sandbox on a private network', path: ['baseUrl'] });

/** The file's shape; each entry is checked on its own by AccountSchema (registryEntries), so that a reload skips the unchanged ones. */
const RegistryFileSchema = z.strictObject({ accounts: z.array(z.unknown()) });

export interface AccountEndpoint {
  name: string;
  url: URL;
  /** Read at each use (rotation without a restart); every secret signs. */
  secrets(): string[];
}

export interface Account {
  readonly id: string;
  readonly baseUrl: string;
  readonly allowHttp: boolean;
  readonly limits: Readonly<Record<CallFamily, RateLimit>>;
  /** Read at each call: a rotated key is used from the next one. Throws naming the account, never the key. */
  apiKey(): string;
  /** Read at each use; empty when the account has none configured. */
  webhookSecrets(): string[];
  readonly endpoints: ReadonlyMap<string, AccountEndpoint>;
}

export interface RegistryChange {
  added: string[];
  removed: string[];
  /** Accounts whose entry in the file changed, its JSON (a new key file path, new limits, even a default written out); a secret rotated inside its file is not a change here: it is read at its next use anyway. */
  changed: string[];
  /** The accounts' order in the file changed (the first DELIVERY_METRICS_ACCOUNTS by it are named in metrics). */
  reordered?: true;
}

export class UnknownAccountError extends Error {
  constructor(readonly account: string) {
    super(`unknown courier account "${account}"`);
    this.name = 'UnknownAccountError';
  }
}

export interface AccountRegistry {
  /** The registry file's path, or `environment`. */
  readonly source: string;
  get(id: string): Account | undefined;
  /** Throws UnknownAccountError. */
  require(id: string): Account;
  ids(): string[];
  readonly size: number;
  /** Re-reads the file now (it is also re-read when it changes); throws and keeps the registry as it was if the file is not valid. */
  reload(): RegistryChange;
  /** Called after each reload that changed something, or with the error of one that was refused. */
  onChange(listener: (change: RegistryChange | Error) => void): () => void;
  /** Stops watching the file. */
  close(): void;
}

const EnvSchema = z.object({
  DELIVERY_ACCOUNTS_FILE: z.string().min(1).optional(),
  /** How often the registry file's stat is checked for changes (the fallback: a watch on its folder checks at once). */
  DELIVERY_ACCOUNTS_RELOAD_MS: z.coerce.number().int().min(50).max(60_000).default(500),
});

/** The registry from DELIVERY_ACCOUNTS_FILE, or the one `default` account the environment defines. Throws naming the account and field. */
export function accountRegistryFromEnv(env: NodeJS.ProcessEnv = process.env, o: { watch?: boolean } = {}): AccountRegistry {
  const parsed = EnvSchema.safeParse({ DELIVERY_ACCOUNTS_FILE: env.DELIVERY_ACCOUNTS_FILE || undefined, DELIVERY_ACCOUNTS_RELOAD_MS: env.DELIVERY_ACCOUNTS_RELOAD_MS || undefined });
  if (!parsed.success) throw new Error(`invalid account registry settings: ${parsed.error.issues.map((i) => `${fieldPath(i.path)}: ${i.message}`).join('; ')}`);
  const { DELIVERY_ACCOUNTS_FILE: file, DELIVERY_ACCOUNTS_RELOAD_MS: reloadMs } = parsed.data;
  return file ? fileRegistry(resolve(file), env, reloadMs, o.watch ?? true) : environmentRegistry(env);
}

type ReadText = (path: string) => string;
const readText: ReadText = (path) => readFileSync(path, 'utf8');

/** `read`, each path read once however often it is asked for: 10,000 accounts sharing one key file read it once per registry read. */
function readingEachOnce(read: ReadText): ReadText {
  const seen = new Map<string, { text: string } | { err: unknown }>();
  return (path) => {
    let known = seen.get(path);
    if (!known) {
      try {
        known = { text: read(path) };
      } catch (err) {
        known = { err };
      }
      seen.set(path, known);
    }
    if ('err' in known) throw known.err;
    return known.text;
  };
}

/** Reads a secret reference: the file's or variable's text, trimmed; throws naming the account and field. */
function readSecret(ref: SecretRef, where: string, env: NodeJS.ProcessEnv, baseDir: string, read: ReadText): string {
  if ('env' in ref) {
    const value = env[ref.env]?.trim();
    if (!value) throw new Error(`${where}: environment variable ${ref.env} is not set`);
    return value;
  }
  const path = resolve(baseDir, ref.file);
  let text: string;
  try {
    text = read(path).trim();
  } catch (err) {
    throw new Error(`${where}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
  }
  if (!text) throw new Error(`${where}: ${path} is empty`);
  return text;
}

const secretList = (text: string) => text.split(/[\s,]+/).filter(Boolean);

/** Checks each webhook secret's form; the error names the field, never the secret. */
function checkedSecrets(text: string, where: string): string[] {
  return secretList(text).map((s, i) => {
    try {
      secretKey(s);
      return s;
    } catch (err) {
      throw new Error(`${where}: secret ${i + 1}: ${(err as Error).message}`, { cause: err });
    }
  });
}

type AccountEntry = z.output<typeof AccountSchema>;

/** How an account reads its key and secrets: plain readText at each use, or, while a registry read checks them, that read's read-once. */
interface Reading {
  read: ReadText;
}

function accountFrom(entry: AccountEntry, env: NodeJS.ProcessEnv, baseDir: string, via: Reading): Account {
  const read: ReadText = (path) => via.read(path);
  const at = (field: string) => `account ${entry.id}: ${field}`;
  const endpoints = new Map<string, AccountEndpoint>();
  for (const [name, e] of Object.entries(entry.notify)) {
    endpoints.set(name, { name, url: new URL(e.url), secrets: () => checkedSecrets(readSecret(e.secrets, at(`notify.${name}.secrets`), env, baseDir, read), at(`notify.${name}.secrets`)) });
  }
  const webhookSecrets = entry.webhookSecrets;
  return {
    id: entry.id,
    baseUrl: entry.baseUrl,
    allowHttp: entry.allowHttp,
    limits: entry.limits,
    apiKey: () => readSecret(entry.apiKey, at('apiKey'), env, baseDir, read),
    webhookSecrets: () => (webhookSecrets ? checkedSecrets(readSecret(webhookSecrets, at('webhookSecrets'), env, baseDir, read), at('webhookSecrets')) : []),
    endpoints,
  };
}

/** Every reference must resolve when the registry is read: a missing key file stops the start, not the first call. */
function checkReferences(account: Account): void {
  account.apiKey();
  account.webhookSecrets();
  for (const e of account.endpoints.values()) e.secrets();
}

/** An account as read from the registry file; `json` is its entry as written (JSON.stringify of the file's entry), what a reload compares. */
export interface RegisteredAccount {
  entry: AccountEntry;
  json: string;
  account: Account;
}

/** An entry read and checked by its schema, its references not yet. */
type ReadEntry = Omit<RegisteredAccount, 'account'> & { account?: undefined };

/**
 * A registry file's entries, each checked by its schema alone (no key or secret read); errors name
 * the account (by id where it has a valid one) and the field. An entry whose JSON is the one
 * `known` has for its id is that known account, taken as it is: not checked again.
 */
function registryEntries(text: string, source: string, known?: ReadonlyMap<string, RegisteredAccount>): Array<RegisteredAccount | ReadEntry> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`invalid account registry ${source}: not JSON (${(err as Error).message})`, { cause: err });
  }
  const file = RegistryFileSchema.safeParse(json);
  const given = (json as { accounts?: unknown } | null)?.accounts;
  const raw: unknown[] = file.success ? file.data.accounts : Array.isArray(given) ? given : [];
  const issues: string[] = [];
  const name = (path: readonly PropertyKey[]) => {
    if (path[0] !== 'accounts' || typeof path[1] !== 'number') return fieldPath(path);
    const id = (raw[path[1]] as { id?: unknown } | null | undefined)?.id;
    const who = typeof id === 'string' && ACCOUNT_ID.test(id) ? `account ${id}` : `account accounts[${path[1]}]`;
    return path.length > 2 ? `${who}: ${fieldPath(path.slice(2))}` : who;
  };
  const say = (path: readonly PropertyKey[], message: string) => issues.push(`${name(path)}: ${message}`);
  const sayIssue = (at: readonly PropertyKey[], issue: z.core.$ZodIssue) => say([...at, ...issue.path], issue.code === 'unrecognized_keys' ? `${issue.message} (${issue.keys.join(', ')})` : issue.message);
  const entries: Array<RegisteredAccount | ReadEntry> = [];
  const seen = new Set<string>();
  raw.forEach((r, i) => {
    const text = JSON.stringify(r);
    const id = (r as { id?: unknown } | null)?.id;
    const before = typeof id === 'string' ? known?.get(id) : undefined;
    let entry: RegisteredAccount | ReadEntry;
    if (before?.json === text) entry = before;
    else {
      const parsed = AccountSchema.safeParse(r);
      if (!parsed.success) return void parsed.error.issues.forEach((issue) => sayIssue(['accounts', i], issue));
      entry = { entry: parsed.data, json: text };
    }
    if (seen.has(entry.entry.id)) say(['accounts', i, 'id'], `account id "${entry.entry.id}" is listed twice`);
    seen.add(entry.entry.id);
    entries.push(entry);
  });
  if (!file.success) file.error.issues.forEach((issue) => sayIssue([], issue));
  if (issues.length) throw new Error(`invalid account registry ${source}: ${issues.join('; ')}`);
  return entries;
}

/**
 * Parses a registry file's text; errors name the account (by id where it has a valid one) and the
 * field. `known`: the last valid registry; its accounts whose entries are unchanged are kept as
 * they are, not checked again (their keys and secrets are read at each use anyway); the others'
 * references are checked, each file read once however many accounts name it.
 */
export function parseRegistry(text: string, source: string, env: NodeJS.ProcessEnv = process.env, known?: ReadonlyMap<string, RegisteredAccount>): Map<string, RegisteredAccount> {
  const baseDir = dirname(source);
  // The new accounts read through `via`: this read's read-once while they are checked, plain reads
  // at each use from then on (a rotated key is used from the next call).
  const via: Reading = { read: readingEachOnce(readText) };
  const accounts = new Map<string, RegisteredAccount>();
  try {
    for (const e of registryEntries(text, source, known)) {
      if (e.account) {
        accounts.set(e.entry.id, e); // the very same object: a reload tells it unchanged by that
        continue;
      }
      const account = accountFrom(e.entry, env, baseDir, via);
      try {
        checkReferences(account);
      } catch (err) {
        throw new Error(`invalid account registry ${source}: ${(err as Error).message}`, { cause: err });
      }
      accounts.set(e.entry.id, { ...e, account });
    }
  } finally {
    via.read = readText;
  }
  return accounts;
}

function readRegistryFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`invalid account registry: cannot read DELIVERY_ACCOUNTS_FILE ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
  }
}

/**
 * The registry's account ids as the file says now, without reading a secret: for a process that
 * only labels by account (the fleet view), never holds a key. Without DELIVERY_ACCOUNTS_FILE: `default`.
 */
export function accountIdsFromEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  const file = env.DELIVERY_ACCOUNTS_FILE;
  if (!file) return [DEFAULT_ACCOUNT];
  return registryEntries(readRegistryFile(resolve(file)), file).map((a) => a.entry.id);
}

function fileRegistry(file: string, env: NodeJS.ProcessEnv, reloadMs: number, watch: boolean): AccountRegistry {
  const stamp = () => {
    try {
      const st = statSync(file);
      return `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
    } catch {
      return 'missing'; // the read says why
    }
  };
  let seen = stamp();
  let accounts = parseRegistry(readRegistryFile(file), file, env);
  const listeners = new Set<(change: RegistryChange | Error) => void>();
  const reload = (): RegistryChange => {
    const next = parseRegistry(readRegistryFile(file), file, env, accounts);
    const change: RegistryChange = {
      added: [...next.keys()].filter((id) => !accounts.has(id)),
      removed: [...accounts.keys()].filter((id) => !next.has(id)),
      // An unchanged entry is the very same object (parseRegistry keeps it).
      changed: [...next].filter(([id, a]) => accounts.has(id) && accounts.get(id) !== a).map(([id]) => id),
    };
    const kept = (ids: Iterable<string>, other: ReadonlyMap<string, unknown>) => [...ids].filter((id) => other.has(id)).join('\n');
    if (kept(next.keys(), accounts) !== kept(accounts.keys(), next)) change.reordered = true;
    accounts = next;
    if (change.added.length + change.removed.length + change.changed.length > 0 || change.reordered) for (const l of listeners) l(change);
    return change;
  };
  // The file's stat, checked every reloadMs: it follows a Kubernetes mount's symlink swap, where
  // fs.watch on the old inode would go quiet. The stat is taken before each read, so a change made
  // during a read is seen at the next check. One stat per check, whatever the number of accounts.
  let closed = false;
  const check = () => {
    const now = stamp();
    if (closed || now === seen) return;
    seen = now;
    try {
      reload();
    } catch (err) {
      for (const l of listeners) l(err as Error);
    }
  };
  const timer = watch ? setInterval(check, reloadMs).unref() : undefined;
  // A watch on the file's folder makes the same check at once: the folder sees a symlink swap (its
  // entries change) and an editor's write-aside-and-rename alike. Any event in the folder only
  // asks for a check, one per turn of the event loop however many came (a storm of key files
  // written beside the registry: one stat). A folder that cannot be watched (too many watchers, a
  // file system without events) or a watcher that fails leaves the stat check alone, silently.
  let folder: FSWatcher | undefined;
  let asked = false;
  const soon = () => {
    if (asked) return;
    asked = true;
    setImmediate(() => {
      asked = false;
      check();
    }).unref();
  };
  if (watch) {
    try {
      folder = watchFolder(dirname(file), { persistent: false }, soon);
      folder.on('error', () => folder?.close());
    } catch {
      // the stat check alone
    }
  }
  return {
    source: file,
    get: (id) => accounts.get(id)?.account,
    require(id) {
      const a = accounts.get(id)?.account;
      if (!a) throw new UnknownAccountError(id);
      return a;
    },
    ids: () => [...accounts.keys()],
    get size() {
      return accounts.size;
    },
    reload,
    onChange(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    close() {
      closed = true;
      clearInterval(timer);
      folder?.close();
    },
  };
}

/** The one account `default`, from the variables that defined the provider before accounts. */
function environmentRegistry(env: NodeJS.ProcessEnv): AccountRegistry {
  const limits = (() => {
    try {
      return parseRateLimits(env.PROVIDER_RATE_LIMITS ?? '');
    } catch (err) {
      throw new Error(`invalid pacing configuration: PROVIDER_RATE_LIMITS: ${(err as Error).message}`, { cause: err });
    }
  })();
  const account: Account = {
    id: DEFAULT_ACCOUNT,
    baseUrl: env.DELIVERY_API_URL || LOCAL_SANDBOX_URL,
    allowHttp: env.DELIVERY_API_ALLOW_HTTP === 'true',
    limits,
    apiKey: () => env.DELIVERY_API_KEY || LOCAL_SANDBOX_KEY,
    webhookSecrets: () => secretList(env.DELIVERY_WEBHOOK_SECRETS ?? ''),
    endpoints: new Map([...notifyConfigFromEnv(env).endpoints].map(([name, e]) => [name, { name, url: e.url, secrets: () => e.secrets }])),
  };
  return {
    source: 'environment',
    get: (id) => (id === DEFAULT_ACCOUNT ? account : undefined),
    require(id) {
      if (id !== DEFAULT_ACCOUNT) throw new UnknownAccountError(id);
      return account;
    },
    ids: () => [DEFAULT_ACCOUNT],
    size: 1,
    reload: () => ({ added: [], removed: [], changed: [] }),
    onChange: () => () => undefined,
    close: () => undefined,
  };
}
