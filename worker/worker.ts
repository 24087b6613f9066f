/**
 * The delivery workers of one process: workflows on the main task queue, and provider calls on
 * one task queue per rate-limited call family (creations, quotes, the rest), each with the
 * server-side activity rate its provider limit allows.
 */
import type { DataConverter } from '@temporalio/common';
import { bundleWorkflowCode, Worker, type NativeConnection, type WorkflowBundle } from '@temporalio/worker';
import type { ProviderActivities } from '../activities/provider-activities';
import { PROVIDER_RATE_LIMITS, type CallFamily } from '../provider/limits';
import { providerTaskQueues } from '../workflows/task-queues';
import { taskQueueRatePerSecond, type RateLimits } from './rate-limits';

export interface DeliveryWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: ProviderActivities;
  rateLimits?: RateLimits;
  /** A prebuilt bundle (tests build one per file); otherwise the workflows are bundled here. */
  workflowBundle?: WorkflowBundle;
  /** Cap on activities running at once per call-family worker. */
  maxConcurrentActivities?: number;
  /** Payload encryption (client/payload-codec.ts); the same codec as every client's. */
  dataConverter?: DataConverter;
}

export interface DeliveryWorkers {
  workers: Worker[];
  /** Runs every worker until shutdown() or until one fails. */
  run(): Promise<void>;
  /** Runs every worker until `promise` settles, then shuts them down. */
  runUntil<T>(promise: Promise<T>): Promise<T>;
  shutdown(): void;
}

export async function createDeliveryWorkers(o: DeliveryWorkerOptions): Promise<DeliveryWorkers> {
  const limits = o.rateLimits ?? PROVIDER_RATE_LIMITS;
  const queues = providerTaskQueues(o.taskQueue);
  const base = { connection: o.connection, namespace: o.namespace, dataConverter: o.dataConverter };

  const workflowWorker = await Worker.create({
    ...base,
    taskQueue: o.taskQueue,
    workflowBundle: o.workflowBundle ?? (await bundleWorkflows()),
  });
  const families: CallFamily[] = ['creations', 'quotes', 'other'];
  const activityWorkers = await Promise.all(
    families.map((family) =>
      Worker.create({
        ...base,
        taskQueue: queues[family],
        activities: o.activities,
        maxTaskQueueActivitiesPerSecond: taskQueueRatePerSecond(limits[family]),
        maxConcurrentActivityTaskExecutions: o.maxConcurrentActivities ?? 100,
      }),
    ),
  );
  const workers = [workflowWorker, ...activityWorkers];

  const shutdown = () => {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
  };
  const run = async () => {
    try {
      await Promise.all(workers.map((w) => w.run()));
    } finally {
      shutdown();
    }
  };
  return {
    workers,
    run,
    shutdown,
    async runUntil<T>(promise: Promise<T>): Promise<T> {
      const running = run();
      try {
        return await promise;
      } finally {
        shutdown();
        await running;
      }
    },
  };
}

/** Bundles the workflow code, keeping webpack's module listing out of the worker's log. */
export function bundleWorkflows(): Promise<WorkflowBundle> {
  const quiet = () => undefined;
  return bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    logger: { trace: quiet, debug: quiet, info: quiet, log: quiet, warn: (m: string) => console.warn(m), error: (m: string) => console.error(m) },
  });
}
