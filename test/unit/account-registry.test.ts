import fs, { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accountIdsFromEnv, accountRegistryFromEnv, UnknownAccountError, type AccountRegistry, type RegistryChange } from '../../accounts/registry';
import { LOGGED_IDS, reloadLogLine } from '../../accounts/reload-log';
import { generateWebhookSecret } from '../../provider/webhook-signature';

let dir: string;
const open: AccountRegistry[] = [];
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'accounts-'))));
afterEach(() => {
  jest.restoreAllMocks();
  open.splice(0).forEach((r) => r.close());
  rmSync(dir, { recursive: true, force: true });
});

const write = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
const registryFile = (accounts: unknown[]) => write('accounts.json', JSON.stringify({ accounts }));
const load = (env: NodeJS.ProcessEnv = {}, watch = false) => {
  const r = accountRegistryFromEnv({ DELIVERY_ACCOUNTS_FILE: join(dir, 'accounts.json'), ...env }, { watch });
  open.push(r);
  return r;
};
const acme = (extra: object = {}) => ({ id: 'acme', baseUrl: 'https://api.courier.example', apiKey: { file: 'acme.key' }, ...extra });

describe('account registry', () => {
  it('with no file, the environment defines the one account `default`, as before accounts', () => {
    const r = accountRegistryFromEnv({ DELIVERY_API_URL: 'https://api.courier.example', DELIVERY_API_KEY: 'k-1', PROVIDER_RATE_LIMITS: 'creations=5/60s' });
    expect(r.ids()).toEqual(['default']);
    const a = r.require('default');
    expect([a.baseUrl, a.apiKey(), a.limits.creations.limit, a.limits.quotes.limit]).toEqual(['https://api.courier.example', 'k-1', 5, 100]);
    expect(() => r.require('acme')).toThrow(UnknownAccountError);
  });

  it('reads each account with its limits (defaults: the contract), endpoints, and secrets by reference', () => {
    write('acme.key', 'key-acme\n');
    const secret = generateWebhookSecret();
    write('acme.whsec', `${secret}\n`);
    registryFile([acme({ limits: 'creations=5/60s', webhookSecrets: { file: 'acme.whsec' }, notify: { orders: { url: 'https://orders.example/hooks', secrets: { env: 'ACME_NOTIFY' } } } }), { id: 'b-2', baseUrl: 'http://127.0.0.1:4010', apiKey: { env: 'B_KEY' } }]);
    const r = load({ B_KEY: 'key-b', ACME_NOTIFY: secret });
    expect(r.ids()).toEqual(['acme', 'b-2']);
    const a = r.require('acme');
    expect([a.apiKey(), a.limits.creations, a.limits.quotes, a.webhookSecrets()]).toEqual(['key-acme', { limit: 5, windowMs: 60_000 }, { limit: 100, windowMs: 600_000 }, [secret]]);
    expect(a.endpoints.get('orders')?.url.href).toBe('https://orders.example/hooks');
    expect(r.require('b-2').apiKey()).toBe('key-b');
    expect(r.require('b-2').webhookSecrets()).toEqual([]);
  });

  it('gives a process that only labels by account (the fleet view) the ids, without reading a secret', () => {
    expect(accountIdsFromEnv({})).toEqual(['default']);
    registryFile([acme(), { id: 'b-2', baseUrl: 'http://127.0.0.1:4010', apiKey: { env: 'B_KEY' } }]); // neither acme.key nor B_KEY exists
    expect(accountIdsFromEnv({ DELIVERY_ACCOUNTS_FILE: join(dir, 'accounts.json') })).toEqual(['acme', 'b-2']);
    expect(() => load()).toThrow(/acme\.key/); // the registry itself needs them
    registryFile([acme({ id: 'Bad Id' })]);
    expect(() => accountIdsFromEnv({ DELIVERY_ACCOUNTS_FILE: join(dir, 'accounts.json') })).toThrow(/accounts\.json: .*must be 1 to 40/);
    write('accounts.json', '{');
    expect(() => accountIdsFromEnv({ DELIVERY_ACCOUNTS_FILE: join(dir, 'accounts.json') })).toThrow(/invalid account registry .*accounts\.json/);
  });

  it('a rotated key is read at its next use, without a reload', () => {
    write('acme.key', 'old');
    registryFile([acme()]);
    const a = load().require('acme');
    expect(a.apiKey()).toBe('old');
    write('acme.key', 'new');
    expect(a.apiKey()).toBe('new');
  });

  it.each([
    ['an unknown field', [acme({ apikey: 'x' })], /account acme: .*apikey/],
    ['a duplicate id', [acme(), acme()], /account acme: id: account id "acme" is listed twice/],
    ['a missing key file', [acme({ apiKey: { file: 'gone.key' } })], /account acme: apiKey: cannot read .*gone\.key \(ENOENT\)/],
    ['an unset key variable', [acme({ apiKey: { env: 'NOPE_KEY' } })], /account acme: apiKey: environment variable NOPE_KEY is not set/],
    ['a key written into the registry', [acme({ apiKey: 'sk_live_123' })], /account acme: apiKey: must be \{"file"/],
    ['a bad id', [acme({ id: 'Acme!' })], /account accounts\[0\]: id: must be 1 to 40 of a-z, 0-9 and -/],
    ['plain http to a remote host', [acme({ baseUrl: 'http://api.courier.example' })], /account acme: baseUrl: must be https:\/\//],
    ['bad limits', [acme({ limits: 'creations=20 per minute' })], /account acme: limits: .*must look like creations=20\/60s/],
    ['a malformed webhook secret', [acme({ webhookSecrets: { env: 'BAD_SECRET' } })], /account acme: webhookSecrets: secret 1: a webhook secret must be whsec_/],
  ])('refuses %s, naming the account and the field', (_what, accounts, message) => {
    write('acme.key', 'key');
    registryFile(accounts);
    expect(() => load({ BAD_SECRET: 'whsec_short' })).toThrow(message);
  });

  it('never quotes a secret in an error', () => {
    write('acme.key', 'key');
    registryFile([acme({ webhookSecrets: { env: 'BAD_SECRET' } })]);
    expect(() => load({ BAD_SECRET: 'whsec_c2VjcmV0LXZhbHVlLXRoYXQtbXVzdC1ub3Qtc2hvdw' })).toThrow(/^(?!.*c2VjcmV0).*$/s);
  });

  it('reloads a changed file: a new account serves at once; an invalid file is refused and the last valid registry kept', async () => {
    write('acme.key', 'key');
    write('b.key', 'key-b');
    registryFile([acme()]);
    const r = load({ DELIVERY_ACCOUNTS_RELOAD_MS: '50' }, true);
    const changes: Array<RegistryChange | Error> = [];
    r.onChange((c) => changes.push(c));
    // A Kubernetes mount swaps a symlink; a rename is the same for a stat-polling watcher.
    writeFileSync(join(dir, 'next.json'), JSON.stringify({ accounts: [acme({ limits: 'creations=3/60s' }), { id: 'b', baseUrl: 'https://api.courier.example', apiKey: { file: 'b.key' } }] }));
    renameSync(join(dir, 'next.json'), join(dir, 'accounts.json'));
    await until(() => changes.length > 0);
    expect(changes[0]).toEqual({ added: ['b'], removed: [], changed: ['acme'] });
    expect(r.require('b').apiKey()).toBe('key-b');
    expect(r.require('acme').limits.creations.limit).toBe(3);

    writeFileSync(join(dir, 'next.json'), JSON.stringify({ accounts: [acme(), acme()] }));
    renameSync(join(dir, 'next.json'), join(dir, 'accounts.json'));
    await until(() => changes.length > 1);
    expect(String(changes[1])).toMatch(/account acme: id: account id "acme" is listed twice/);
    expect(r.ids()).toEqual(['acme', 'b']);
  });

  it("a reload that only reorders the file is a change (the first accounts by the file's order are named in metrics)", () => {
    write('acme.key', 'key');
    write('b.key', 'key-b');
    const b = { id: 'b', baseUrl: 'https://api.courier.example', apiKey: { file: 'b.key' } };
    registryFile([acme(), b]);
    const r = load();
    registryFile([b, acme()]);
    expect(r.reload()).toEqual({ added: [], removed: [], changed: [], reordered: true });
    expect(r.ids()).toEqual(['b', 'acme']);
    expect(reloadLogLine(r.reload())).toMatchObject({ added: 0, removed: 0, changed: 0 }); // the same file again: nothing
    // Added at the end, the others' order kept: no reorder.
    registryFile([b, acme(), { ...b, id: 'c' }]);
    expect(r.reload()).toEqual({ added: ['c'], removed: [], changed: [] });
  });

  it('a reload checks only new and changed entries: an unchanged one is kept as it was, its key read at its next use', () => {
    write('acme.key', 'key');
    write('b.key', 'key-b');
    registryFile([acme()]);
    const r = load();
    const before = r.require('acme');
    // acme's key file goes while its entry stays: adding b is not refused for it (the registry did
    // not change for acme); acme's calls fail, naming the account and field, until its key is back.
    rmSync(join(dir, 'acme.key'));
    registryFile([acme(), { id: 'b', baseUrl: 'https://api.courier.example', apiKey: { file: 'b.key' } }]);
    expect(r.reload()).toEqual({ added: ['b'], removed: [], changed: [] });
    expect(r.require('b').apiKey()).toBe('key-b');
    expect(r.require('acme')).toBe(before);
    expect(() => r.require('acme').apiKey()).toThrow(/account acme: apiKey: cannot read .*acme\.key \(ENOENT\)/);
    // A changed entry is checked again, its missing key with it: refused whole, naming the account and field.
    registryFile([acme({ limits: 'creations=3/60s' }), { id: 'b', baseUrl: 'https://api.courier.example', apiKey: { file: 'b.key' } }]);
    expect(() => r.reload()).toThrow(/account acme: apiKey: cannot read .*acme\.key \(ENOENT\)/);
    expect(r.require('acme').limits.creations.limit).toBe(20);
  });

  it('refuses a reload whose new account has no key file, naming the account and the field; the last valid registry stays', () => {
    write('acme.key', 'key');
    registryFile([acme()]);
    const r = load();
    registryFile([acme(), { id: 'b', baseUrl: 'https://api.courier.example', apiKey: { file: 'b.key' } }]);
    expect(() => r.reload()).toThrow(/account b: apiKey: cannot read .*b\.key \(ENOENT\)/);
    expect(r.ids()).toEqual(['acme']);
    expect(r.get('b')).toBeUndefined();
  });

  it('10 → 10,000 accounts sharing one key file: the key read once, and one short log line with counts and a few ids', () => {
    write('shared.key', 'key-shared');
    const entry = (id: string) => ({ id, baseUrl: 'https://api.courier.example', apiKey: { file: 'shared.key' }, limits: 'creations=20/6s' });
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `a-${i + 1}`);
    registryFile(ids(10).map(entry));
    const r = load();
    registryFile(ids(10_000).map(entry));
    const reads = jest.spyOn(fs, 'readFileSync');
    const change = r.reload();
    expect(reads.mock.calls.filter(([path]) => String(path).endsWith('shared.key'))).toHaveLength(1);
    expect(r.size).toBe(10_000);
    expect(r.require('a-10000').apiKey()).toBe('key-shared');
    const line = reloadLogLine(change);
    expect(line).toEqual({ level: 'INFO', msg: 'account registry reloaded', added: 9_990, removed: 0, changed: 0, added_ids: [...ids(10_000).slice(10, 10 + LOGGED_IDS), `…and ${9_990 - LOGGED_IDS} more`] });
    expect(JSON.stringify(line).length).toBeLessThan(400);
    expect(reloadLogLine({ added: [], removed: ['a-1'], changed: ['a-2'] })).toEqual({ level: 'INFO', msg: 'account registry reloaded', added: 0, removed: 1, changed: 1, removed_ids: ['a-1'], changed_ids: ['a-2'] });
  });

  it('notices a Kubernetes mount swap at once through the folder watch, without waiting for the stat check', async () => {
    // The mount's layout: accounts.json → ..data/accounts.json, ..data → a timestamped folder;
    // an update writes a new folder and renames a new ..data link over the old one.
    const version = (name: string, accounts: unknown[]) => {
      mkdirSync(join(dir, name));
      writeFileSync(join(dir, name, 'accounts.json'), JSON.stringify({ accounts }));
      writeFileSync(join(dir, name, 'acme.key'), 'key');
      writeFileSync(join(dir, name, 'b.key'), 'key-b');
    };
    version('..v1', [acme()]);
    symlinkSync('..v1', join(dir, '..data'));
    symlinkSync('..data/accounts.json', join(dir, 'accounts.json'));
    symlinkSync('..data/acme.key', join(dir, 'acme.key'));
    symlinkSync('..data/b.key', join(dir, 'b.key'));
    const r = load({ DELIVERY_ACCOUNTS_RELOAD_MS: '60000' }, true);
    const changes: Array<RegistryChange | Error> = [];
    r.onChange((c) => changes.push(c));
    version('..v2', [acme(), { id: 'b', baseUrl: 'https://api.courier.example', apiKey: { file: 'b.key' } }]);
    symlinkSync('..v2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    await until(() => changes.length > 0); // 5 s at most, the stat check comes after 60
    expect(changes).toEqual([{ added: ['b'], removed: [], changed: [] }]);
    expect(r.require('b').apiKey()).toBe('key-b');
  });
});

async function until(done: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
