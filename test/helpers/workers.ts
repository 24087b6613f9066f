/** Delivery workers for a test file: one bundle, one set of workers on a task queue of its own. */
import type { DataConverter } from '@temporalio/common';
import type { WorkflowBundle } from '@temporalio/worker';
import type { ProviderActivities } from '../../activities/provider-activities';
import type { RateLimits } from '../../worker/rate-limits';
import { bundleWorkflows, createDeliveryWorkers, type DeliveryWorkers } from '../../worker/worker';
import { testNativeConnection, testServerAddress, uniqueTaskQueue } from './temporal';

let bundle: Promise<WorkflowBundle> | undefined;
export function workflowBundle(): Promise<WorkflowBundle> {
  bundle ??= bundleWorkflows();
  return bundle;
}

/** Limits high enough that no test waits on them (the rate-limit tests set their own). */
export const UNTHROTTLED: RateLimits = {
  creations: { limit: 10_000, windowMs: 1_000 },
  quotes: { limit: 10_000, windowMs: 1_000 },
  other: { limit: 10_000, windowMs: 1_000 },
};

export interface RunningWorkers {
  taskQueue: string;
  workers: DeliveryWorkers;
  stop(): Promise<void>;
}

export async function startWorkers(activities: ProviderActivities, options: { prefix?: string; rateLimits?: RateLimits; dataConverter?: DataConverter; address?: string } = {}): Promise<RunningWorkers> {
  const connection = await testNativeConnection(options.address);
  const taskQueue = uniqueTaskQueue(options.prefix ?? 'deliveries');
  const workers = await createDeliveryWorkers({
    connection,
    namespace: testServerAddress().namespace,
    taskQueue,
    activities,
    rateLimits: options.rateLimits ?? UNTHROTTLED,
    workflowBundle: await workflowBundle(),
    dataConverter: options.dataConverter,
  });
  const running = workers.run();
  return {
    taskQueue,
    workers,
    async stop() {
      workers.shutdown();
      await running;
      await connection.close();
    },
  };
}
