/** Delivery workers for a test file: one bundle, one set of workers on a task queue of its own. */
import type { AccountRegistry } from '../../accounts/registry';
import { Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { WorkflowBundle } from '@temporalio/worker';
import type { ProviderActivities } from '../../activities/provider-activities';
import type { CallFamily, RateLimit } from '../../provider/limits';
import type { PacingSettings } from '../../worker/pacing-config';
import type { NotifyConfig } from '../../notifications/config';
import { createDeliveryWorkers, type DeliveryWorkers } from '../../worker/worker';
import type { DeploymentVersion } from '../../temporal/worker-deployment';
import { testNativeConnection, testServerAddress, uniqueTaskQueue } from './temporal';
import { plainWorkflowBundle } from './workflow-bundle';
import type { WorkerAccounts, WorkerMetrics } from '../../metrics/worker-metrics';
import type { NexusEndpoints } from '../../nexus/endpoint-accounts';
import { DEFAULT_ACCOUNT } from '../../contract/accounts';

/** The worker's metrics' accounts with no registry file: `default` alone, with these notification endpoints. */
export function defaultAccountOnly(endpoints: readonly string[] = []): WorkerAccounts {
  return { ids: () => [DEFAULT_ACCOUNT], endpointsOf: (id) => (id === DEFAULT_ACCOUNT ? endpoints : []) };
}

let bundle: Promise<WorkflowBundle> | undefined;
/** The product's workflows, bundled once per run (test/helpers/workflow-bundle.ts). */
export function workflowBundle(): Promise<WorkflowBundle> {
  bundle ??= plainWorkflowBundle();
  return bundle;
}

/** Limits high enough that no test waits on them (the rate-limit tests set their own). */
export const UNTHROTTLED: Record<CallFamily, RateLimit> = {
  creations: { limit: 10_000, windowMs: 1_000 },
  quotes: { limit: 10_000, windowMs: 1_000 },
  other: { limit: 10_000, windowMs: 1_000 },
};

export interface RunningWorkers {
  taskQueue: string;
  workers: DeliveryWorkers;
  stop(): Promise<void>;
}

export interface StartWorkersOptions {
  prefix?: string;
  /** Pacing; by default the gate with limits no test waits on. */
  pacing?: Partial<PacingSettings>;
  dataConverter?: DataConverter;
  address?: string;
  taskQueue?: string;
  /** Notification endpoints (none by default). */
  notify?: NotifyConfig;
  /** Versioned workers (test/temporal/versioning.test.ts); unset: unversioned, as every other test runs them. */
  deployment?: DeploymentVersion;
  /** Another workflow bundle than the product's (a deliberately different build). */
  workflowBundle?: WorkflowBundle;
  /** The courier accounts served (test/temporal/accounts.test.ts); unset: any account passes the start check. */
  accounts?: AccountRegistry;
  /** Each Nexus endpoint's accounts (test/temporal/nexus-accounts.test.ts); unset: every endpoint serves every account. */
  nexusEndpoints?: NexusEndpoints;
  /** The workers' own metrics (test/temporal/notifications.test.ts reads them); unset: none. */
  metrics?: WorkerMetrics;
}

export async function startWorkers(activities: ProviderActivities, options: StartWorkersOptions = {}): Promise<RunningWorkers> {
  const connection = await testNativeConnection(options.address);
  // As worker/main.ts does: the workers' own client shares their native connection.
  const client = new Client({ connection, namespace: testServerAddress().namespace, dataConverter: options.dataConverter });
  const taskQueue = options.taskQueue ?? uniqueTaskQueue(options.prefix ?? 'deliveries');
  const workers = await createDeliveryWorkers({
    connection,
    namespace: testServerAddress().namespace,
    taskQueue,
    activities,
    client,
    pacing: { limits: UNTHROTTLED, ...options.pacing },
    workflowBundle: options.workflowBundle ?? (await workflowBundle()),
    dataConverter: options.dataConverter,
    notify: options.notify,
    deployment: options.deployment,
    accounts: options.accounts,
    nexusEndpoints: options.nexusEndpoints,
    metrics: options.metrics,
  });
  const running = workers.run();
  let stopped: Promise<void> | undefined;
  return {
    taskQueue,
    workers,
    // Once, however often it is called (a test may stop one version's workers before its stack stops).
    stop() {
      stopped ??= (async () => {
        workers.shutdown();
        await running;
        await connection.close();
      })();
      return stopped;
    },
  };
}
