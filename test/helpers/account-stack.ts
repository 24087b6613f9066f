/**
 * Delivery workers serving the courier accounts of a registry file (re-read every 100 ms), one API
 * client per account, and the client library on their task queue: the stack of the accounts tests.
 */
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSimulator, type Simulator } from '../../simulator/server';
import type { Client, Connection } from '@temporalio/client';
import { accountRegistryFromEnv, type AccountRegistry } from '../../accounts/registry';
import { providerClientsFor } from '../../accounts/provider-clients';
import { createProviderActivities } from '../../activities/provider-activities';
import { DeliveryClient } from '../../client/delivery-client';
import { testClient } from './temporal';
import { startWorkers, type RunningWorkers, type StartWorkersOptions } from './workers';

export interface AccountStack {
  registry: AccountRegistry;
  workers: RunningWorkers;
  temporal: Client;
  deliveries: DeliveryClient;
  /** Workflow IDs the test started: terminated by stop(), so nothing is left running on the shared dev server. */
  started: string[];
  stop(): Promise<void>;
}

/** The simulator holding each account's key (so one data scope and one set of rate windows each), and a new folder with a key file `<id>.key` per account. */
export async function accountsSimulator(keys: Record<string, string>, prefix: string): Promise<{ sim: Simulator; dir: string }> {
  const sim = createSimulator({ apiKeys: Object.values(keys), onError: (m) => console.error(`simulator: ${m}`) });
  await sim.listen(0, '127.0.0.1');
  const dir = mkdtempSync(join(tmpdir(), prefix));
  for (const [id, key] of Object.entries(keys)) writeFileSync(join(dir, `${id}.key`), key);
  return { sim, dir };
}

/** Writes `<dir>/accounts.json` with these entries, aside and renamed: the registry never reads a half-written file. */
export function writeAccountsFile(dir: string, accounts: object[]): void {
  writeFileSync(join(dir, 'accounts.json.tmp'), JSON.stringify({ accounts }));
  renameSync(join(dir, 'accounts.json.tmp'), join(dir, 'accounts.json'));
}

/** `o`: more of the workers' options: the Nexus endpoints' account lists, the task queue and pacing (a restart on the queue of a stack stopped before; default a queue of its own, limits no test waits on). */
export async function startAccountStack(registryFile: string, prefix: string, o: Pick<StartWorkersOptions, 'nexusEndpoints' | 'taskQueue' | 'pacing'> = {}): Promise<AccountStack> {
  const registry = accountRegistryFromEnv({ DELIVERY_ACCOUNTS_FILE: registryFile, DELIVERY_ACCOUNTS_RELOAD_MS: '100' });
  const clients = providerClientsFor(registry, { timeoutMs: 5_000 });
  const workers = await startWorkers(createProviderActivities((account) => clients.forAccount(account)), { prefix, accounts: registry, ...o });
  const { client: temporal, connection }: { client: Client; connection: Connection } = await testClient();
  const started: string[] = [];
  return {
    registry,
    workers,
    temporal,
    deliveries: new DeliveryClient({ temporal, taskQueue: workers.taskQueue, followUp: { endGraceMs: 0 } }),
    started,
    async stop() {
      await Promise.all(started.map((id) => temporal.workflow.getHandle(id).terminate('test over').catch(() => undefined)));
      await workers.stop();
      await clients.close();
      registry.close();
      await connection.close();
    },
  };
}

export interface RegistryFolder {
  dir: string;
  /** The registry file, accounts.json in `dir`. */
  file: string;
  /** Writes the registry with these accounts' entries: aside, then renamed over, so no reader meets it half written. */
  write(ids: string[]): void;
}

/** A folder holding `<id>.key` with each account's key, and the registry file naming them (`entry` gives each account's fields but its key). */
export function registryFolder(prefix: string, keys: Record<string, string>, entry: (id: string) => Record<string, unknown>): RegistryFolder {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  for (const [id, key] of Object.entries(keys)) writeFileSync(join(dir, `${id}.key`), key);
  const file = join(dir, 'accounts.json');
  return {
    dir,
    file,
    write(ids) {
      writeFileSync(`${file}.tmp`, JSON.stringify({ accounts: ids.map((id) => ({ id, apiKey: { file: `${id}.key` }, ...entry(id) })) }));
      renameSync(`${file}.tmp`, file);
    },
  };
}
