/**
 * Delivery workers serving the courier accounts of a registry file (re-read every 100 ms), one API
 * client per account, and the client library on their task queue: the stack of the accounts tests.
 */
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

/** `o`: the workers' task queue and pacing (a restart on the queue of a stack stopped before; default a queue of its own, limits no test waits on). */
export async function startAccountStack(registryFile: string, prefix: string, o: Pick<StartWorkersOptions, 'taskQueue' | 'pacing'> = {}): Promise<AccountStack> {
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
