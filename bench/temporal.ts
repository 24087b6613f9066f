/** The Temporal a benchmark runs on (a dev server of its own, or `--cluster`), under a watchdog, and what it sets up around it. */
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, type DataConverter } from '@temporalio/client';
import { DeliveryClient } from '../client/delivery-client';
import type { temporal } from '@temporalio/proto';
import { PROVIDER_RATE_LIMITS, type CallFamily, type RateLimit } from '../provider/limits';
import { generateWebhookSecret } from '../provider/webhook-signature';
import { WEBHOOK_PATH } from '../bridge/server';
import { ENTRY, ProcessGroup, removeWorkflowBundleFile, workflowBundleFile, type ProcessGroupOptions } from '../scripts/processes';
import { createSimulator, type Simulator, type SimulatorOptions } from '../simulator/server';
import { connectClient } from '../temporal/client-connection';
import { defaultBuildId } from '../temporal/worker-deployment';
import { Cleanup, procStat } from './measure';
import { freeClusterPorts, SERVICE_PROCESSES, TemporalCluster } from '../scripts/cluster/temporal-cluster';
import { ensureServerTools } from '../scripts/cluster/tools';
import { ensureTemporalCli } from '../scripts/temporal-cli';
import { startDevServer, type DevServerOptions } from '../scripts/temporal-dev-server';
import { parsePrometheusText } from '../test/helpers/prometheus';

/** Every process this one started, and theirs (from /proc): a benchmark leaves none behind. */
export function descendants(): number[] {
  const parents = readdirSync('/proc').filter((n) => /^\d+$/.test(n)).map((n) => [Number(n), parentPid(Number(n))] as const);
  const found = [process.pid];
  for (let i = 0; i < found.length; i++) for (const [pid, ppid] of parents) if (ppid === found[i]) found.push(pid);
  return found.slice(1);
}

/** At the time limit: kills every process this one started (the server too, up or not yet), and exits. */
function watchdog(progress: (line: string) => void, timeLimitMs: number): NodeJS.Timeout {
  const timer = setTimeout(() => {
    progress(`time limit of ${timeLimitMs / 60_000} min reached; killing the benchmark's processes and stopping`);
    killDescendants();
    process.exit(1);
  }, timeLimitMs);
  return timer.unref();
}

/** SIGKILLs every descendant. All are found before any is killed: a killed parent's children would move to init and out of sight. */
export function killDescendants(): number[] {
  const pids = descendants();
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The Temporal a run is on: a dev server (`process`) or a cluster, with its server processes for CPU. */
export type BenchTemporal = { address: string; namespace: string; stop(): Promise<void>; pids(): number[]; process?: ChildProcess; postgresDataDir?: string };

async function startBenchServer(progress: (line: string) => void, o: Pick<DevServerOptions, 'dynamicConfig' | 'metricsPort'>): Promise<BenchTemporal> {
  const tools = await ensureServerTools(progress);
  progress('starting a Temporal dev server (one partition per task queue)...');
  const server = await startDevServer({ tools, namespace: 'default', ...o });
  return { address: server.address, namespace: server.namespace, stop: () => server.stop(), pids: () => [server.process.pid!], process: server.process };
}

/** A cluster's server processes, for CPU: its services and PostgreSQL with every backend it forked (the postmaster's children). */
async function startBenchCluster(progress: (line: string) => void, cli: string): Promise<BenchTemporal> {
  const tools = await ensureServerTools(progress);
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-cluster-'));
  chmodSync(dataDir, 0o755); // PostgreSQL runs as the postgres user when this runs as root
  progress('starting a Temporal cluster on PostgreSQL (frontend, 2 history, 2 matching, worker service)...');
  const cluster = new TemporalCluster({ tools, cli, dataDir, ports: await freeClusterPorts(false), log: progress });
  await cluster.start();
  const stop = () => cluster.stop().then(() => rmSync(dataDir, { recursive: true, force: true }));
  const pids = () => {
    const postmaster = cluster.pidOf('postgresql');
    const backends = readdirSync('/proc').filter((d) => /^\d+$/.test(d) && parentPid(Number(d)) === postmaster).map(Number);
    return [...SERVICE_PROCESSES.map(({ name }) => cluster.pidOf(name)), postmaster, ...backends].filter((pid): pid is number => pid !== undefined);
  };
  return { address: cluster.address, namespace: cluster.namespace, stop, pids, postgresDataDir: cluster.postgres.dataDir };
}

type StackOptions = { cluster?: boolean; server?: Pick<DevServerOptions, 'dynamicConfig' | 'metricsPort'>; group?: ProcessGroupOptions };
export type BenchStack = Awaited<ReturnType<typeof benchStack>>;

/**
 * Temporal under a watchdog (`cluster`: the cluster of `npm run cluster`, else a dev server with the `server` options besides) and what
 * a benchmark adds around it (processes, simulators, clients, the workflow bundle), each undone by close(), last first.
 */
export async function benchStack(progress: (line: string) => void, timeLimitMs: number, o: StackOptions = {}) {
  const cleanup = new Cleanup();
  const timer = watchdog(progress, timeLimitMs);
  const cli = await ensureTemporalCli(progress);
  const server = o.cluster ? await startBenchCluster(progress, cli) : await startBenchServer(progress, o.server ?? {});
  cleanup.add(() => server.stop());
  cleanup.add(() => clearTimeout(timer));
  const processes = new ProcessGroup({ maxOutputChars: 200_000, ...o.group });
  cleanup.add(() => processes.stopAll());
  // One build for every worker of the run, read once: a commit made while it runs would start the next worker as
  // another version, which cannot take the deliveries pinned to the first (a run's own versions set WORKER_BUILD_ID).
  const buildId = defaultBuildId();
  /** What every worker and bridge of the run is told: this Temporal, the provider at `apiUrl`, the run's build. */
  const env = (apiUrl: string, apiKey = 'sandbox-key') => ({ TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace, DELIVERY_API_URL: apiUrl, DELIVERY_API_KEY: apiKey, WORKER_BUILD_ID: buildId });
  /** A worker or a bridge as a process, its log in a file (a bridge logs a line per webhook); `inherit`: it reads this process's WORKER_* too. */
  const startProcess = async (kind: 'worker' | 'bridge', apiUrl: string, extra: NodeJS.ProcessEnv, o: { name?: string; inherit?: boolean } = {}) => {
    const p = await processes.start({ name: o.name ?? kind, ...ENTRY[kind], isolated: !o.inherit, logFile: true, env: { ...env(apiUrl), ...extra } });
    cleanup.add(() => p.removeLog());
    return p;
  };
  return {
    cli,
    server,
    processes,
    cleanup,
    async simulator(options: SimulatorOptions = {}) {
      const sim = createSimulator({ onError: (m) => progress(`simulator: ${m}`), ...options });
      const { url } = await sim.listen(0, '127.0.0.1');
      cleanup.add(() => sim.close());
      return { sim, url };
    },
    async client(dataConverter?: DataConverter) {
      const connection = await connectClient({ address: server.address });
      cleanup.add(() => connection.close());
      return new Client({ connection, namespace: server.namespace, dataConverter });
    },
    async bundle() {
      const file = await workflowBundleFile();
      cleanup.add(removeWorkflowBundleFile);
      return file;
    },
    env,
    start: startProcess,
    /** A bridge on a free loopback port with a new webhook secret; `sim`'s webhooks, when given, are sent to it. */
    async bridge(apiUrl: string, sim?: Simulator) {
      const secret = generateWebhookSecret();
      const process = await startProcess('bridge', apiUrl, { DELIVERY_WEBHOOK_SECRETS: secret, BRIDGE_HOST: '127.0.0.1', BRIDGE_PORT: '0', BRIDGE_ADMIN_PORT: '0' });
      const url = /^bridge: listening on (\S+?): /m.exec(process.output())![1]! + WEBHOOK_PATH; // its ready line names its base URL
      sim?.setWebhookEndpoint({ url, secret });
      return { process, url, secret };
    },
    /** A simulator (ROOMY_LIMITS unless told), a worker (`env`, to start another), a bridge its webhooks go to, unless `webhooks: false`. */
    async deliveryStack(taskQueue: string, workerEnv: NodeJS.ProcessEnv, simulatorOptions: SimulatorOptions = {}, o = { webhooks: true }) {
      const { sim, url } = await this.simulator({ rateLimits: ROOMY_LIMITS, ...simulatorOptions });
      const env = { DELIVERY_TASK_QUEUE: taskQueue, WORKER_WORKFLOW_BUNDLE: await this.bundle(), LOG_LEVEL: 'WARN', ...workerEnv };
      const worker = await startProcess('worker', url, env);
      const bridge = await this.bridge(url, o.webhooks ? sim : undefined);
      const temporal = await this.client();
      return { sim, url, env, worker, bridge, temporal, deliveries: new DeliveryClient({ temporal, taskQueue }) };
    },
    close: () => cleanup.run(progress),
  };
}

/** `run` on a benchStack, closed after it however it ends (the workers of a phase that failed too). */
export async function withBenchStack<T>(progress: (line: string) => void, timeLimitMs: number, o: StackOptions, run: (stack: BenchStack) => Promise<T>) {
  const stack = await benchStack(progress, timeLimitMs, o);
  try {
    return await run(stack);
  } finally {
    await stack.close();
  }
}

/** PROVIDER_RATE_LIMITS for these limits, windows in ms. */
export const rateLimitsEnv = (limits: Record<string, RateLimit>) => Object.entries(limits).map(([family, l]) => `${family}=${l.limit}/${l.windowMs}ms`).join(',');

/** The provider's limits with every window shrunk by the simulator's time scale: what it enforces and the workers are told. */
export const scaledLimits = (scale: number) =>
  Object.fromEntries(Object.entries(PROVIDER_RATE_LIMITS).map(([family, l]) => [family, { limit: l.limit, windowMs: l.windowMs / scale }])) as Record<CallFamily, RateLimit>;

/** A limit far above what any run needs, for each call family: benchmarks that do not measure pacing. */
export const ROOMY_LIMITS = { creations: { limit: 1_000_000 }, quotes: { limit: 1_000_000 }, other: { limit: 1_000_000 } };
/** A worker's settings for the same: Temporal's task-queue limit, raised as the simulator's are, and connections for a burst. */
export const UNPACED_WORKER_ENV = { PROVIDER_PACING: 'task-queue', PROVIDER_RATE_LIMITS: 'creations=100000/1s,quotes=100000/1s,other=100000/1s', DELIVERY_API_CONNECTIONS: '64' };

/** Every event of every run of a workflow (it may have continued as new), the oldest run first. */
export async function histories(client: Client, workflowId: string): Promise<temporal.api.history.v1.IHistoryEvent[]> {
  const runs: string[] = [];
  for await (const run of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.unshift(run.runId);
  const events = [];
  for (const runId of runs) events.push(...((await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? []));
  return events;
}

/** Requests the dev server's frontend has answered so far, by operation, from its Prometheus endpoint (`--metrics-port`). */
export async function frontendRequests(metricsUrl: URL): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const { name, labels, value } of parsePrometheusText(await (await fetch(metricsUrl)).text()).samples) {
    if (name === 'service_requests' && labels.service_name === 'frontend' && labels.operation) out[labels.operation] = (out[labels.operation] ?? 0) + value;
  }
  return out;
}

/** A process's parent, from /proc; NaN (no process's id) when it is gone meanwhile. */
const parentPid = (pid: number) => Number(procStat(pid)?.[1]);
