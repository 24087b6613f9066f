// worker/: the worker process: delivery workflows, the pacing gate and the provider activities (`npm run worker`).
/**
 * `npm run worker`: runs the delivery workers against Temporal and the provider configured in the
 * environment (by default the local stack). The API key is read here, from the environment, and
 * never travels through Temporal.
 */
import { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type LogLevel, type NativeConnectionOptions } from '@temporalio/worker';
import { ExpectedNoticesAtDebug, FORWARDED_CORE_LOGS } from './logging';
import { dataConverterFromEnv } from '../temporal/payload-codec';
import { temporalSettingsFromEnv } from '../temporal/connection';
import { createProviderActivities } from '../activities/provider-activities';
import { accountRegistryFromEnv, type AccountRegistry } from '../accounts/registry';
import type { CallFamily, RateLimit } from '../provider/limits';
import { reloadLogLine } from '../accounts/reload-log';
import { providerClientsFor } from '../accounts/provider-clients';
import { providerConfigFromEnv } from '../provider/config';
import { parseEnv } from '../provider/validation';
import { z } from 'zod';
import { pacingSettingsFromEnv } from './pacing-config';
import { createDeliveryWorkers } from './worker';
import { describeEndpoints, notifyConfigFromEnv } from '../notifications/config';
import { registryTargets } from '../notifications/targets';
import { providerOutcome, WorkerMetrics } from '../metrics/worker-metrics';
import { METRICS_ADDRESS, serveMetrics } from '../metrics/serve';
import { deploymentVersionFromEnv, MakeCurrentSchema, routeOnStart, versionLabel } from '../temporal/worker-deployment';
import { installTracing, tracingClientInterceptors } from '../tracing/install';
import { countTraceSpans } from '../metrics/trace-spans';
import { traceFields } from '../tracing/spans';
import { nexusEndpointsFromEnv } from '../nexus/endpoint-accounts';

const WorkerEnvSchema = z.object({
  LOG_LEVEL: z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']).default('INFO'),
  /** host:port for the Temporal runtime's Prometheus exporter (/metrics); unset: no exporter. */
  WORKER_METRICS_ADDRESS: z.string().regex(METRICS_ADDRESS, { message: 'must be host:port, e.g. 127.0.0.1:9464' }).optional(),
  /**
   * host:port for the worker's own metrics (metrics/worker-metrics.ts); unset: not served. A
   * second listener: the runtime's exporter owns its HTTP server and serves only its own meter.
   */
  WORKER_DELIVERY_METRICS_ADDRESS: z.string().regex(METRICS_ADDRESS, { message: 'must be host:port, e.g. 127.0.0.1:9465' }).optional(),
  /** Workflows kept in memory between tasks; docs/operations.md says what each costs. */
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(0).max(1_000_000).optional(),
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: z.coerce.number().int().min(2).max(10_000).optional(),
  WORKER_MAX_CONCURRENT_ACTIVITIES: z.coerce.number().int().min(1).max(100_000).optional(),
  /** After a worker dies, its cached workflows wait this long before another worker takes them. */
  WORKER_STICKY_QUEUE_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).optional(),
  /** A workflow bundle built ahead (bundleWorkflows in worker/worker.ts): starts in a second instead of bundling. */
  WORKER_WORKFLOW_BUNDLE: z.string().min(1).optional(),
  /** Whether this worker's version becomes current when it starts (temporal/worker-deployment.ts, routeOnStart). */
  WORKER_MAKE_CURRENT: MakeCurrentSchema,
});

/**
 * Logs: one JSON object per line, so they can be searched by workflow ID; never any provider
 * key. Metrics: the Temporal runtime's own (task latencies, slots, polls) for Prometheus.
 */
function installRuntime(env: z.output<typeof WorkerEnvSchema>): void {
  const json = new DefaultLogger(env.LOG_LEVEL as LogLevel, (entry) => {
    const time = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
    process.stdout.write(JSON.stringify({ time, level: entry.level, msg: entry.message, ...entry.meta }) + '\n');
  });
  Runtime.install({
    logger: new ExpectedNoticesAtDebug(json),
    telemetryOptions: {
      logging: FORWARDED_CORE_LOGS, // JSON lines like the rest
      // Durations in seconds, as every other metric here and Prometheus's convention (the alert rules' `le="1"`).
      ...(env.WORKER_METRICS_ADDRESS && { metrics: { prometheus: { bindAddress: env.WORKER_METRICS_ADDRESS, useSecondsForDurations: true } } }),
    },
  });
}

async function main(): Promise<void> {
  const env = parseEnv(WorkerEnvSchema, { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL?.toUpperCase() }, 'worker configuration');
  installRuntime(env);
  /** A JSON log line of the worker's own, as the SDK's (above). */
  const logLine = (entry: object) => void process.stdout.write(JSON.stringify({ time: new Date().toISOString(), ...entry }) + '\n');
  const tracing = installTracing('delivery-worker', logLine);
  const temporal = temporalSettingsFromEnv();
  const provider = providerConfigFromEnv();
  const notify = notifyConfigFromEnv();
  // Every courier account this worker serves (DELIVERY_ACCOUNTS_FILE; none: the environment's one
  // account, `default`). An invalid registry stops the start, naming the account and field.
  const accounts = accountRegistryFromEnv();
  const metrics = new WorkerMetrics({ ids: () => accounts.ids(), endpointsOf: (id) => registryTargets(accounts).names(id) });
  if (tracing) countTraceSpans(metrics.registry, tracing.spans);
  accounts.onChange((change) => {
    logLine(reloadLogLine(change));
    if (!(change instanceof Error)) void metrics.accountsChanged();
  });
  const clients = providerClientsFor(accounts, {
    timeoutMs: provider.timeoutMs,
    connections: provider.connections,
    onCall: ({ account, family, status, seconds }) => metrics.providerCall({ account, family, outcome: providerOutcome(status), seconds }),
    // A Retry-After over the cap is cut to it where it is parsed: say so, and count it.
    retryAfterCap: {
      maxMs: provider.retryAfterCapMs,
      onCapped: (e) => {
        metrics.retryAfterCapped(e.account);
        logLine({ level: 'WARN', msg: 'provider Retry-After capped', ...traceFields(), account: e.account, call: e.call, asked_ms: e.askedMs, capped_ms: e.cappedMs });
      },
    },
  });
  // Each Nexus endpoint's accounts (DELIVERY_NEXUS_ENDPOINTS_FILE; none: every endpoint serves every account).
  const nexusEndpoints = nexusEndpointsFromEnv(process.env, logLine);
  const pacing = pacingSettingsFromEnv();
  const ownMetrics = env.WORKER_DELIVERY_METRICS_ADDRESS ? await serveMetrics(metrics.registry, env.WORKER_DELIVERY_METRICS_ADDRESS) : undefined;
  const connection = await NativeConnection.connect(temporal.connectionOptions as NativeConnectionOptions);
  const dataConverter = dataConverterFromEnv();
  const deployment = deploymentVersionFromEnv();
  const temporalClient = new Client({ connection, namespace: temporal.namespace, dataConverter, interceptors: tracingClientInterceptors() });
  const workers = await createDeliveryWorkers({
    connection,
    namespace: temporal.namespace,
    taskQueue: temporal.taskQueue,
    activities: createProviderActivities((account) => clients.forAccount(account), { httpTimeoutMs: provider.timeoutMs, accountLabel: (account) => metrics.labels.of(account) }),
    accounts,
    nexusEndpoints,
    // The worker's own calls (the gate's start, requests and answers) share the native connection:
    // its transport runs off the JavaScript thread, which the workflow tasks keep busy.
    client: temporalClient,
    pacing,
    dataConverter,
    notify,
    maxCachedWorkflows: env.WORKER_MAX_CACHED_WORKFLOWS,
    maxConcurrentWorkflowTasks: env.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
    maxConcurrentActivities: env.WORKER_MAX_CONCURRENT_ACTIVITIES,
    stickyQueueTimeoutMs: env.WORKER_STICKY_QUEUE_TIMEOUT_MS,
    workflowBundle: env.WORKER_WORKFLOW_BUNDLE ? { codePath: env.WORKER_WORKFLOW_BUNDLE } : undefined,
    deployment,
    metrics,
    tracing,
  });
  const stop = () => workers.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const running = workers.run();
  running.catch(() => undefined); // awaited below; a worker that fails meanwhile is not an unhandled rejection
  // Once its queues are polled, and before the ready line, so whatever waits for it finds the
  // version routed. A failure is reported; the workers go on (the version can be made current later).
  const routed = await routeOnStart(temporalClient.workflowService, temporal.namespace, deployment, temporal.taskQueue, env.WORKER_MAKE_CURRENT).catch((err: Error) => {
    console.error(`worker: could not make ${versionLabel(deployment)} current: ${err.message}`);
    return undefined;
  });
  if (routed) console.log(`worker: ${routed}`);
  console.log(
    `worker: task queue ${temporal.taskQueue} on ${temporal.address} (namespace ${temporal.namespace}), ${accounts.size} courier account(s) from ${accounts.source}` +
      `, version ${versionLabel(deployment)}` +
      `, pacing by ${pacing.pacing} (${describeLimits(pacing.limits, accounts)})` +
      `, notification endpoints: ${describeEndpoints(notify)}` +
      (nexusEndpoints ? `, Nexus endpoints' accounts from ${nexusEndpoints.source}` : '') +
      (env.WORKER_METRICS_ADDRESS ? `, metrics http://${env.WORKER_METRICS_ADDRESS}/metrics` : '') +
      (ownMetrics ? `, delivery metrics ${ownMetrics.url}` : '') +
      (tracing ? `, traces to ${tracing.config.tracesUrl} as ${tracing.config.serviceName}` : ''),
  );
  // What each account's calls outside the gate share, if anything (worker/account-rates.ts).
  console.log(`worker: ${workers.pacingSummary}`);
  await running;
  await ownMetrics?.close();
  accounts.close();
  await connection.close();
  await clients.close();
  await tracing?.shutdown();
}

main().catch((err: Error) => {
  console.error(`worker: ${err.message}`);
  process.exit(1);
});

/** The limits every account has unless its registry entry says otherwise, and how many entries say otherwise. */
function describeLimits(defaults: Record<CallFamily, RateLimit>, accounts: AccountRegistry): string {
  const of = (l: Record<CallFamily, RateLimit>) => (['creations', 'quotes', 'other'] as const).map((f) => `${f} ${l[f].limit}/${l[f].windowMs / 1000} s`).join(', ');
  const own = accounts.ids().filter((id) => of(accounts.get(id)!.limits) !== of(defaults)).length;
  return `${of(defaults)}; ${own} of ${accounts.size} account(s) with limits of their own`;
}
