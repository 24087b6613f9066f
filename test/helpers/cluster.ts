/**
 * The production-shaped stack of `npm run cluster` for the `cluster` test project, on free ports
 * and in a temporary data directory: the Temporal cluster on PostgreSQL
 * (scripts/cluster/temporal-cluster.ts), the simulator, N delivery worker processes, 2 bridge
 * processes and nginx in front of them, which the simulator's webhooks go through. Every
 * process can be killed and started again on the same ports; the test talks to the processes
 * only through their public surfaces (client library, CLI, HTTP, the simulator's /_sim API).
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
import { freeClusterPorts, TemporalCluster } from '../../scripts/cluster/temporal-cluster';
import { ensureServerTools } from '../../scripts/cluster/tools';
import { ensureTemporalCli } from '../../scripts/temporal-cli';
import { freePort } from '../../scripts/temporal-dev-server';
import { ENTRY, ProcessGroup, workflowBundleFile, type RunningProcess } from '../../scripts/processes';
import { SimulatorControl } from './processes';

export interface ClusterStackOptions {
  workers: number;
  simulatorEnv?: NodeJS.ProcessEnv;
  workerEnv?: NodeJS.ProcessEnv;
}

export class ClusterStack {
  readonly group = new ProcessGroup({ maxOutputChars: 3_000_000 });
  readonly workers: (RunningProcess | undefined)[] = [];
  readonly bridges: (RunningProcess | undefined)[] = [];
  env: Record<string, string> = {};
  sim!: SimulatorControl;
  cluster!: TemporalCluster;
  lb!: LoadBalancer;
  temporal!: Client;
  client!: DeliveryClient;
  private connection?: Connection;
  private bridgePorts: number[] = [];
  private bundle?: string;
  private readonly dataDir: string;
  private starts = 0;

  private constructor(private readonly o: ClusterStackOptions) {
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
    const [cli, tools] = [await ensureTemporalCli(log), await ensureServerTools((l) => process.stderr.write(`${l}\n`))];
    const ports = await freeClusterPorts(false);
    this.cluster = new TemporalCluster({ tools, cli, dataDir: this.dataDir, ports, log, output: (name, line) => this.group.log(name, line) });
    this.bundle = await workflowBundleFile();
    await this.cluster.start();

    const simPort = await freePort();
    const lbPort = await freePort();
    this.bridgePorts = [await freePort(), await freePort()];
    const secret = generateWebhookSecret();
    this.env = {
      TEMPORAL_ADDRESS: this.cluster.address,
      TEMPORAL_NAMESPACE: this.cluster.namespace,
      DELIVERY_TASK_QUEUE: `cluster-${Date.now().toString(36)}`,
      DELIVERY_API_URL: `http://127.0.0.1:${simPort}`,
      DELIVERY_API_KEY: 'sandbox-key',
      DELIVERY_PAYLOAD_KEYS: generatePayloadKey('cluster'),
      DELIVERY_WEBHOOK_SECRETS: secret,
    };
    this.lb = new LoadBalancer({ nginx, dir: join(this.dataDir, 'nginx'), listenPort: lbPort, bridgePorts: this.bridgePorts, output: (l) => this.group.log('nginx', l) });
    await this.group.start({
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
    await this.lb.start();

    this.connection = await connectClient({ address: this.cluster.address });
    this.temporal = new Client({ connection: this.connection, namespace: this.cluster.namespace, dataConverter: dataConverterFromEnv(this.env) });
    this.client = new DeliveryClient({ temporal: this.temporal, taskQueue: this.env.DELIVERY_TASK_QUEUE!, followUp: { endGraceMs: 0 } });
  }

  async startWorker(i: number): Promise<RunningProcess> {
    this.workers[i] = await this.group.start({
      name: `worker-${i + 1}#${++this.starts}`,
      ...ENTRY.worker,
      env: { ...this.env, LOG_LEVEL: 'WARN', WORKER_WORKFLOW_BUNDLE: this.bundle, ...this.o.workerEnv },
    });
    return this.workers[i]!;
  }

  async startBridge(i: number): Promise<RunningProcess> {
    this.bridges[i] = await this.group.start({
      name: `bridge-${i + 1}#${++this.starts}`,
      ...ENTRY.bridge,
      env: { ...this.env, BRIDGE_HOST: '127.0.0.1', BRIDGE_PORT: String(this.bridgePorts[i]), BRIDGE_ADMIN_PORT: '0', BRIDGE_RETRY_AFTER_SECONDS: '1' },
    });
    return this.bridges[i]!;
  }

  bridgeUrl(i: number): string {
    return `http://127.0.0.1:${this.bridgePorts[i]}`;
  }

  /** Environment for the `delivery` CLI and `temporal` CLI against this stack. */
  get cliEnv(): NodeJS.ProcessEnv {
    return { ...process.env, ...this.env };
  }

  /** Stops everything, each part even if another fails to stop. */
  async stop(): Promise<void> {
    const errors: unknown[] = [];
    for (const step of [() => this.connection?.close(), () => this.group.stopAll(), () => this.lb?.stop(), () => this.cluster?.stop()]) {
      await Promise.resolve()
        .then(step)
        .catch((e: unknown) => errors.push(e));
    }
    rmSync(this.dataDir, { recursive: true, force: true });
    if (errors.length > 0) throw errors[0];
  }
}
