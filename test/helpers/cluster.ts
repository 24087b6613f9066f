/**
 * The production-shaped stack of `npm run cluster` for the `cluster` test project, on free ports
 * and in a temporary data directory: the Temporal cluster on PostgreSQL
 * (scripts/cluster/temporal-cluster.ts), the simulator, N delivery worker processes, 2 bridge
 * processes and nginx in front of them, which the simulator's webhooks go through. As in
 * `npm run cluster`, every process runs under the product's supervisor (SupervisedStack,
 * scripts/supervisor.ts): a test kills a process and the stack itself starts it again, or stops
 * on a crash loop (`stoppedWith`). The test talks to the processes only through their public
 * surfaces (client library, CLI, HTTP, the simulator's /_sim API) and kills them by pid.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { connectClient } from '../../temporal/client-connection';
import { DeliveryClient } from '../../client/delivery-client';
import { dataConverterFromEnv, generatePayloadKey } from '../../temporal/payload-codec';
import { generateWebhookSecret } from '../../provider/webhook-signature';
import { findNginx, LoadBalancer } from '../../scripts/cluster/load-balancer';
import { freeClusterPorts, SERVICE_PROCESSES, TemporalCluster } from '../../scripts/cluster/temporal-cluster';
import { ensureServerTools, type ClusterServerTools } from '../../scripts/cluster/tools';
import { ensureTemporalCli } from '../../scripts/temporal-cli';
import { freePort } from '../../scripts/temporal-dev-server';
import { ENTRY, SupervisedStack, workflowBundleFile, type ProcessGroup, type RunningProcess } from '../../scripts/processes';
import type { PartStatus } from '../../scripts/supervisor';
import { SimulatorControl } from './processes';
import { makeStackVersionCurrent } from '../../scripts/deployment-on-start';
import { defaultBuildId } from '../../temporal/worker-deployment';
import { runBundleFile } from './workflow-bundle';

export interface ClusterStackOptions {
  workers: number;
  /** Runs the Temporal Web UI server too, as `npm run cluster` does (cluster.uiUrl). */
  ui?: boolean;
  simulatorEnv?: NodeJS.ProcessEnv;
  workerEnv?: NodeJS.ProcessEnv;
  /** The Temporal server the cluster runs: the product's (ensureServerTools) unless given (ensureClusterServerTools). */
  tools?: ClusterServerTools;
}

export class ClusterStack {
  /** The product's supervisor and way down, as `npm run cluster` runs them. */
  readonly stack: SupervisedStack;
  /** Why the stack went down on its own (a part in a crash loop), once it has. */
  stoppedWith?: string;
  /** The output of every process, and the supervisor's lines as `[stack] ...`. */
  readonly group: ProcessGroup;
  env: Record<string, string> = {};
  sim!: SimulatorControl;
  cluster!: TemporalCluster;
  lb!: LoadBalancer;
  temporal!: Client;
  client!: DeliveryClient;
  private connection?: Connection;
  private bridgePorts: number[] = [];
  /** Each delivery worker's process by name (`worker-1`), its latest start. */
  private readonly workers = new Map<string, RunningProcess>();
  private bundle?: string;
  private readonly dataDir: string;

  private constructor(private readonly o: ClusterStackOptions) {
    this.stack = new SupervisedStack({
      log: (line) => this.group.log('stack', line),
      stopRest: async () => {
        await this.lb?.stop();
        await this.cluster?.stop();
      },
      exit: (code, why) => (this.stoppedWith = why ?? `stopped with code ${code}`),
      group: { maxOutputChars: 3_000_000 },
    });
    this.group = this.stack.group;
    this.dataDir = mkdtempSync(join(tmpdir(), 'cluster-test-'));
    // PostgreSQL runs as the postgres user when the tests run as root: it must reach its data dir.
    chmodSync(this.dataDir, 0o755);
  }

  static async start(o: ClusterStackOptions): Promise<ClusterStack> {
    const s = new ClusterStack(o);
    try {
      await s.boot();
      return s;
    } catch (err) {
      await s.stop();
      throw err;
    }
  }

  private async boot(): Promise<void> {
    const log = (line: string) => this.group.log('setup', line);
    const nginx = findNginx(log);
    const [cli, tools] = [await ensureTemporalCli(log), this.o.tools ?? (await ensureServerTools((l) => process.stderr.write(`${l}\n`)))];
    const ports = await freeClusterPorts(this.o.ui === true);
    this.cluster = new TemporalCluster({ tools, cli, dataDir: this.dataDir, ports, log, output: (name, line) => this.group.log(name, line), supervisor: this.stack.supervisor });
    this.bundle = runBundleFile() ?? (await workflowBundleFile());
    await this.cluster.start();

    const simPort = await freePort();
    const lbPort = await freePort();
    this.bridgePorts = [await freePort(), await freePort()];
    const secret = generateWebhookSecret();
    this.env = {
      TEMPORAL_ADDRESS: this.cluster.address,
      TEMPORAL_NAMESPACE: this.cluster.namespace,
      DELIVERY_TASK_QUEUE: `cluster-${Date.now().toString(36)}`,
      // One build id for the stack's life: a worker the supervisor restarts after a commit stays this version (helpers/temporal.ts, testDeployment).
      WORKER_BUILD_ID: defaultBuildId(),
      DELIVERY_API_URL: `http://127.0.0.1:${simPort}`,
      DELIVERY_API_KEY: 'sandbox-key',
      DELIVERY_PAYLOAD_KEYS: generatePayloadKey('cluster'),
      DELIVERY_WEBHOOK_SECRETS: secret,
    };
    this.lb = new LoadBalancer({ nginx, dir: join(this.dataDir, 'nginx'), listenPort: lbPort, bridgePorts: this.bridgePorts, output: (l) => this.group.log('nginx', l) });
    await this.stack.start({
      name: 'simulator',
      ...ENTRY.simulator,
      env: {
        SIMULATOR_PORT: String(simPort),
        SIMULATOR_HOST: '127.0.0.1',
        SIMULATOR_WEBHOOK_URL: `${this.lb.url}/webhooks/delivery`,
        SIMULATOR_WEBHOOK_SECRET: secret,
        ...this.o.simulatorEnv,
      },
    });
    this.sim = new SimulatorControl(this.env.DELIVERY_API_URL!);
    await Promise.all([...this.bridgePorts.map((_, i) => this.startBridge(i)), ...Array.from({ length: this.o.workers }, (_, i) => this.startWorker(i))]);
    // As `npm run cluster`: the stack, not each worker, makes the workers' version current.
    if (this.o.workerEnv?.WORKER_MAKE_CURRENT === undefined) await makeStackVersionCurrent({ ...this.env, ...this.o.workerEnv } as Record<string, string>, log);
    await this.stack.supervise('nginx', () => this.lb.start());

    this.connection = await connectClient({ address: this.cluster.address });
    this.temporal = new Client({ connection: this.connection, namespace: this.cluster.namespace, dataConverter: dataConverterFromEnv(this.env) });
    this.client = new DeliveryClient({ temporal: this.temporal, taskQueue: this.env.DELIVERY_TASK_QUEUE!, followUp: { endGraceMs: 0 } });
  }

  /**
   * Upgrades the Temporal server the way docs/deploying.md says for `npm run cluster`: the delivery
   * workers stop, then every Temporal process and PostgreSQL; the cluster starts again on `tools`
   * with the same data directory and ports (its start runs their schema tool's update-schema on
   * the databases, scripts/cluster/schema.ts), then the workers, with the same environment and
   * build, and the stack makes their version current as `npm run cluster` does at every start. The
   * simulator, the bridges and nginx keep running. Returns each database's schema version before and after.
   */
  async upgradeTemporal(tools: ClusterServerTools): Promise<{ before: Record<string, string>; after: Record<string, string> }> {
    const log = (line: string) => this.group.log('upgrade', line);
    const before = this.cluster.schemaVersions;
    log(`stopping the workers and Temporal ${this.cluster.o.tools.version}`);
    const workers = Array.from({ length: this.o.workers }, (_, i) => `worker-${i + 1}`);
    for (const name of workers) this.stack.supervisor.release(name);
    await Promise.all(workers.map((name) => this.workers.get(name)?.stop()));
    for (const name of ['postgresql', 'ui', ...SERVICE_PROCESSES.map((p) => p.name)]) this.stack.supervisor.release(name);
    await this.cluster.stop();
    log(`starting Temporal ${tools.version} on the same data`);
    this.cluster = new TemporalCluster({ ...this.cluster.o, tools });
    await this.cluster.start();
    await Promise.all(workers.map((_, i) => this.startWorker(i)));
    if (this.o.workerEnv?.WORKER_MAKE_CURRENT === undefined) await makeStackVersionCurrent({ ...this.env, ...this.o.workerEnv } as Record<string, string>, log);
    return { before, after: this.cluster.schemaVersions };
  }

  private async startWorker(i: number): Promise<void> {
    const name = `worker-${i + 1}`;
    const proc = await this.stack.start({
      name,
      ...ENTRY.worker,
      env: { ...this.env, LOG_LEVEL: 'WARN', WORKER_WORKFLOW_BUNDLE: this.bundle, WORKER_MAKE_CURRENT: 'never', ...this.o.workerEnv },
    });
    this.workers.set(name, proc);
  }

  private async startBridge(i: number): Promise<void> {
    await this.stack.start({
      name: `bridge-${i + 1}`,
      ...ENTRY.bridge,
      env: { ...this.env, BRIDGE_HOST: '127.0.0.1', BRIDGE_PORT: String(this.bridgePorts[i]), BRIDGE_ADMIN_PORT: '0', BRIDGE_RETRY_AFTER_SECONDS: '1' },
    });
  }

  /** What the supervisor knows of a part (`matching-1`, `postgresql`, `bridge-2`, `worker-1`, `nginx`): running or not, its pid, its restarts. */
  part(name: string): PartStatus {
    const status = this.stack.supervisor.status(name);
    if (!status) throw new Error(`no part named ${name} in the cluster stack`);
    return status;
  }

  /** SIGKILLs a part's process, as a crash or the OOM killer would; the stack is left to restart it. Returns its pid. */
  kill(name: string): number {
    const { pid, state } = this.part(name);
    if (state !== 'running' || !pid) throw new Error(`${name} is not running (${state})`);
    process.kill(pid, 'SIGKILL');
    return pid;
  }

  bridgeUrl(i: number): string {
    return `http://127.0.0.1:${this.bridgePorts[i]}`;
  }

  /** Environment for the `delivery` CLI and `temporal` CLI against this stack. */
  get cliEnv(): NodeJS.ProcessEnv {
    return { ...process.env, ...this.env };
  }

  /** Stops everything the way `npm run cluster` does on Ctrl-C (nothing if a crash loop already did). */
  async stop(): Promise<void> {
    const errors: unknown[] = [];
    for (const step of [() => this.connection?.close(), () => this.stack.shutdown(0)]) {
      await Promise.resolve()
        .then(step)
        .catch((e: unknown) => errors.push(e));
    }
    rmSync(this.dataDir, { recursive: true, force: true });
    if (errors.length > 0) throw errors[0];
  }
}
