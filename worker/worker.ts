/**
 * The delivery workers of one process: delivery workflows (and the gate's local activities) on
 * the main task queue, the pacing gate on its own queue, and provider calls on one task queue per
 * call family (creations, quotes, the rest).
 *
 * Pacing (worker/pacing-config.ts): with the `gate` the gate makes quotes and creations in
 * window-exact slots, so those queues carry no rate limit of their own (a token bucket would
 * spread out the calls the gate sends together). The other calls (reads, updates, cancels), and
 * with `task-queue` every family, are paced per account by the Temporal server
 * (worker/account-rates.ts); on a server that cannot, by one rate limit per queue for every
 * account, (limit - 1) / window, and the start line says so.
 */
import type { DataConverter } from '@temporalio/common';
import { FAILURE_CONVERTER_PATH } from '../temporal/payload-codec';
import { bundleWorkflowCode, Worker, type InjectedSinks, type NativeConnection, type WorkflowBundle, type WorkflowBundleOption } from '@temporalio/worker';
import type { Client } from '@temporalio/client';
import { configureGate, createGateActivities } from '../activities/gate-activities';
import type { ProviderActivities } from '../activities/provider-activities';
import { createStartCheckActivities } from '../activities/start-checks';
import { createNotifyActivities } from '../activities/notify-activities';
import { configTargets, registryTargets } from '../notifications/targets';
import type { NotifyConfig } from '../notifications/config';
import { DEFAULT_RETRY_SCHEDULE } from '../notifications/retry-schedule';
import type { CallFamily } from '../provider/limits';
import { gateTaskQueue, notificationsTaskQueue, providerTaskQueues } from '../contract/task-queues';
import { createDeliveriesServiceHandler } from '../nexus/handlers';
import type { NexusEndpoints } from '../nexus/endpoint-accounts';
import { DEFAULT_PACING, taskQueueRatePerSecond, type PacingSettings } from './pacing-config';
import { startAccountRates } from './account-rates';
import type { DeploymentVersion } from '../temporal/worker-deployment';
import { SIGNAL_ENDPOINT, type WorkerMetrics } from '../metrics/worker-metrics';
import { OTHER_ACCOUNTS } from '../metrics/account';
import { parseDeliveryWorkflowId } from '../contract/workflow-ids';
import type { NotifierSinks } from '../workflows/notifier';
import type { Tracing } from '../tracing/install';
import { bundleIsTraced, tracedWorkerOptions, WORKFLOW_TRACING_MODULE } from '../tracing/worker';
import { readFileSync } from 'node:fs';
import type { AccountRegistry } from '../accounts/registry';

export interface DeliveryWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: ProviderActivities;
  /** Starts and signals the pacing gate (the same namespace and data converter as the workers). */
  client: Client;
  /** Pacing; defaults to the provider's limits through the gate. */
  pacing?: Partial<PacingSettings>;
  /** A prebuilt bundle (tests build one per run, WORKER_WORKFLOW_BUNDLE names a file); otherwise the workflows are bundled here. */
  workflowBundle?: WorkflowBundleOption;
  /** Cap on activities running at once per call-family worker. */
  maxConcurrentActivities?: number;
  /** Workflows kept in memory between tasks (Temporal's default: 10,000). */
  maxCachedWorkflows?: number;
  /** Delivery workflow tasks run at once (default DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS). */
  maxConcurrentWorkflowTasks?: number;
  /**
   * How long a workflow task waits for the worker that has the workflow cached before any worker
   * may take it (Temporal's default: 10 s). After a worker dies its workflows wait this long; the
   * pacing gate, which every order passes through, should not wait long.
   */
  stickyQueueTimeoutMs?: number;
  /** Payload encryption (temporal/payload-codec.ts); the same codec as every client's. */
  dataConverter?: DataConverter;
  /** The courier accounts served (accounts/registry.ts); absent: the start check lets any account through (tests without a registry). */
  accounts?: AccountRegistry;
  /** Each Nexus endpoint's accounts (nexus/endpoint-accounts.ts); absent: every endpoint serves every account. */
  nexusEndpoints?: NexusEndpoints;
  /** The notification endpoints (notifications/config.ts); none by default. */
  notify?: NotifyConfig;
  /**
   * The deployment version these workers are (temporal/worker-deployment.ts): every queue, the
   * activity queues too, is polled as that version, so a pinned delivery's calls run on its own
   * build. Unset: unversioned workers (tests that do not deploy).
   */
  deployment?: DeploymentVersion;
  /** The worker's own metrics (deliveries started, notifications); the provider calls are counted by the provider client. */
  metrics?: WorkerMetrics;
  /** The process's tracing (tracing/install.ts): spans of workflows and activities; unset, none. */
  tracing?: Tracing;
}

export interface DeliveryWorkers {
  workers: Worker[];
  /** Runs every worker until shutdown() or until one fails. */
  run(): Promise<void>;
  /** Runs every worker until `promise` settles, then shuts them down. */
  runUntil<T>(promise: Promise<T>): Promise<T>;
  shutdown(): void;
  /** How the calls outside the pacing gate are paced: per account, or what the accounts share (the start line says it). */
  pacingSummary: string;
}

/** Shorter than Temporal's 10 s: a dead worker holds its workflows (and the gate) for this long. */
export const DEFAULT_STICKY_QUEUE_TIMEOUT_MS = 3_000;

/**
 * Delivery workflow tasks a process runs at once (the SDK's default is 40): fewer tasks held open
 * by their local activities get a burst of orders to the provider sooner, while the rest wait in
 * the server's queue in priority order. Deployments that create faster than the provider's own
 * limit set 40 (docs/operations.md, "Worker settings").
 */
export const DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS = 10;

export async function createDeliveryWorkers(o: DeliveryWorkerOptions): Promise<DeliveryWorkers> {
  const pacing: PacingSettings = { ...DEFAULT_PACING, ...o.pacing };
  const queues = providerTaskQueues(o.taskQueue);
  const base = { connection: o.connection, namespace: o.namespace, dataConverter: o.dataConverter, ...tracedWorkerOptions(o.tracing, false) };
  const withWorkflows = tracedWorkerOptions(o.tracing, true);
  /**
   * Versioning behavior by queue, not by workflow type (setWorkflowOptions): an unversioned worker
   * whose workflows declare a behavior has every workflow task refused by the server. Deliveries
   * and quotes (the main queue) are PINNED: they finish on the build they started on. The gate
   * (its own queue) too: it lives for ever, and moves to a new current build by continuing as new.
   */
  const versioned = o.deployment ? { workerDeploymentOptions: { useWorkerVersioning: true as const, version: o.deployment, defaultVersioningBehavior: 'PINNED' as const } } : {};

  const notify: NotifyConfig = o.notify ?? { endpoints: new Map(), retryScheduleMs: DEFAULT_RETRY_SCHEDULE };
  // Each account's own endpoints (the registry's; without a registry file, DELIVERY_NOTIFY_* are `default`'s).
  const notifyTargets = o.accounts ? registryTargets(o.accounts) : configTargets(notify);
  const workflowBundle = await workflowBundleFor(o.workflowBundle, o.tracing !== undefined);
  const gateActivities = createGateActivities({ client: o.client, settings: pacing, accounts: o.accounts, onDeliveryStarted: o.metrics && ((account) => o.metrics!.deliveryStarted(account)) });
  // A delivery's signals to its order workflow, counted like its endpoints' attempts (workflows/notifier.ts).
  // Only delivery workflows use the sink: their ID names their account.
  const sinks: InjectedSinks<NotifierSinks> = {
    notifications: { signalAttempt: { fn: (info, a) => o.metrics?.attempt({ ...a, account: parseDeliveryWorkflowId(info.workflowId)?.account ?? OTHER_ACCOUNTS, target: 'workflow', endpoint: SIGNAL_ENDPOINT }) } },
  };
  const workflowWorker = await Worker.create({
    ...base,
    ...withWorkflows,
    sinks: { ...withWorkflows.sinks, ...sinks },
    ...versioned,
    taskQueue: o.taskQueue,
    workflowBundle,
    activities: { ...gateActivities, ...createStartCheckActivities(notifyTargets, o.accounts, o.metrics && ((account) => o.metrics!.startRefused(account))) },
    // The Nexus service `deliveries` (nexus/handlers.ts), refusing what the start check would, before anything starts.
    nexusServices: [createDeliveriesServiceHandler({ accounts: o.accounts, notifyEndpoints: (account) => notifyTargets.names(account), endpoints: o.nexusEndpoints })],
    maxCachedWorkflows: o.maxCachedWorkflows,
    maxConcurrentWorkflowTaskExecutions: o.maxConcurrentWorkflowTasks ?? DEFAULT_MAX_CONCURRENT_WORKFLOW_TASKS,
    stickyQueueScheduleToStartTimeout: o.stickyQueueTimeoutMs ?? DEFAULT_STICKY_QUEUE_TIMEOUT_MS,
  });
  // The pacing gate, on its own queue (contract/task-queues.ts says why).
  const gateWorker = await Worker.create({
    ...base,
    ...withWorkflows,
    ...versioned,
    taskQueue: gateTaskQueue(o.taskQueue),
    workflowBundle,
    activities: gateActivities, // its answers go out by local activity
    stickyQueueScheduleToStartTimeout: o.stickyQueueTimeoutMs ?? DEFAULT_STICKY_QUEUE_TIMEOUT_MS,
  });
  const gated = (family: CallFamily) => pacing.pacing === 'gate' && family !== 'other';
  const families: CallFamily[] = ['creations', 'quotes', 'other'];
  // Before the queues are polled: a family the server cannot pace per account keeps the shared limit below.
  const accountRates = await startAccountRates({ client: o.client, queues, families: families.filter((f) => !gated(f)), defaults: pacing.limits, accounts: o.accounts, marginMs: pacing.marginMs });
  const sharedLimit = (family: CallFamily) => !gated(family) && !accountRates.perAccount.has(family);
  const activityWorkers = await Promise.all(
    families.map((family) =>
      Worker.create({
        ...base,
        ...versioned, // activities only: polled as the version, so a pinned delivery's calls stay on its build
        taskQueue: queues[family],
        activities: o.activities,
        maxTaskQueueActivitiesPerSecond: sharedLimit(family) ? taskQueueRatePerSecond(pacing.limits[family]) : undefined,
        // A window's calls all start together: let a whole window's worth run at once.
        maxConcurrentActivityTaskExecutions: o.maxConcurrentActivities ?? Math.max(100, gated(family) ? pacing.limits[family].limit : 0),
      }),
    ),
  );
  // Notification webhooks on their own queue: a slow endpoint holds none of the provider calls' slots.
  const notifyWorker = await Worker.create({
    ...base,
    ...versioned, // as the provider calls: a pinned delivery's notifications go out from its build
    taskQueue: notificationsTaskQueue(o.taskQueue),
    activities: createNotifyActivities(notify, undefined, o.metrics, notifyTargets),
    maxConcurrentActivityTaskExecutions: o.maxConcurrentActivities ?? 200,
  });
  const workers = [workflowWorker, gateWorker, ...activityWorkers, notifyWorker];
  let stopReconfiguring = () => undefined as void;
  if (pacing.pacing === 'gate') {
    // Every account's gate starts on its first ask, and each ask carries this worker's settings.
    // An account whose limits changed in the registry: its running gate takes them now (an idle one, at its next start).
    stopReconfiguring = o.accounts?.onChange((change) => {
      if (change instanceof Error) return;
      for (const id of change.changed) {
        const account = o.accounts!.get(id);
        if (account) configureGate(o.client, o.taskQueue, pacing, id, { ...pacing.limits, ...account.limits }).catch((err: Error) => console.error(`worker: could not reconfigure the pacing gate of account ${id}: ${err.message}`));
      }
    }) ?? stopReconfiguring;
  }

  const shutdown = () => {
    stopReconfiguring();
    accountRates.stop();
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
    pacingSummary: accountRates.summary,
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

/**
 * The given bundle, or a new one when there is none or when tracing is on and it was made
 * without the workflow interceptors (a traced worker must make its workflows' spans).
 */
async function workflowBundleFor(given: WorkflowBundleOption | undefined, traced: boolean): Promise<WorkflowBundleOption> {
  if (given && !traced) return given;
  if (given && bundleIsTraced('code' in given ? given.code : readFileSync(given.codePath, 'utf8'))) return given;
  if (given) console.warn('worker: the workflow bundle given has no tracing interceptors; bundling the workflows with them (tracing is on)');
  return bundleWorkflows(undefined, { tracing: traced });
}

/** Bundles the workflow code, keeping webpack's module listing out of the worker's log; `tracing`: with the workflow interceptors. */
export function bundleWorkflows(workflowsPath = require.resolve('../workflows'), o: { tracing?: boolean } = {}): Promise<WorkflowBundle> {
  const quiet = () => undefined;
  return bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: o.tracing ? [WORKFLOW_TRACING_MODULE] : [],
    // Workflow failures (and the activity failures they carry as causes) are encoded too, so the
    // payload codec encrypts their messages; harmless without a codec.
    failureConverterPath: FAILURE_CONVERTER_PATH,
    logger: { trace: quiet, debug: quiet, info: quiet, log: quiet, warn: (m: string) => console.warn(m), error: (m: string) => console.error(m) },
  });
}
