/**
 * The simulator, a worker and a bridge as real processes for integration tests (the processes
 * themselves: scripts/processes.ts), and the simulator's control API over HTTP.
 */
import { generatePayloadKey, dataConverterFromEnv } from '../../temporal/payload-codec';
import { generateWebhookSecret } from '../../provider/webhook-signature';
import { ENTRY, ProcessGroup, workflowBundleFile, type RunningProcess } from '../../scripts/processes';
import { freePort } from '../../scripts/temporal-dev-server';
import { testDeployment } from './temporal';
import { runBundleFile } from './workflow-bundle';
import type { DeliveryRecord, OrderRecord } from '../../provider/schemas';
import type { RequestLogEntry } from '../../simulator/context';
import type { WebhookAttempt, WebhookDispatch } from '../../simulator/webhooks';

export interface DeliveryProcessesOptions {
  temporalAddress: string;
  namespace: string;
  /** Name of this test in task queues and process names. */
  prefix: string;
  /** Extra SIMULATOR_* settings (time scale, auto-advance, rate limits...). */
  simulatorEnv?: NodeJS.ProcessEnv;
  workerEnv?: NodeJS.ProcessEnv;
  bridgeEnv?: NodeJS.ProcessEnv;
  /** Output kept for failure messages (default 2 MB). */
  maxOutputChars?: number;
}

/**
 * The simulator, one worker process and one bridge process, wired together the way `npm start`
 * wires them: the simulator sends signed webhooks to the bridge, the worker calls the simulator,
 * payloads are encrypted with a key of this run. The worker and the bridge can be killed and
 * started again on the same settings (the bridge on the same port, so webhooks find it again);
 * the worker loads a prebuilt workflow bundle, so it is back within a second or two.
 */
export class DeliveryProcesses {
  readonly group: ProcessGroup;
  readonly taskQueue: string;
  readonly simUrl: string;
  readonly bridgeUrl: string;
  /** Environment shared by the worker, the bridge and the test's own client. */
  readonly env: Record<string, string>;
  readonly sim: SimulatorControl;
  private readonly bridgePort: number;
  private readonly counts = { worker: 0, bridge: 0 };
  private current: { worker?: RunningProcess; bridge?: RunningProcess; simulator?: RunningProcess } = {};
  private workerBundle?: string;

  private constructor(
    private readonly o: DeliveryProcessesOptions,
    ports: { sim: number; bridge: number },
  ) {
    this.group = new ProcessGroup({ maxOutputChars: o.maxOutputChars ?? 2_000_000 });
    this.taskQueue = `${o.prefix}-${Date.now().toString(36)}`;
    this.simUrl = `http://127.0.0.1:${ports.sim}`;
    this.bridgePort = ports.bridge;
    this.bridgeUrl = `http://127.0.0.1:${ports.bridge}`;
    this.env = {
      TEMPORAL_ADDRESS: o.temporalAddress,
      TEMPORAL_NAMESPACE: o.namespace,
      DELIVERY_TASK_QUEUE: this.taskQueue,
      ...testDeployment(this.taskQueue),
      DELIVERY_API_URL: this.simUrl,
      DELIVERY_API_KEY: 'sandbox-key',
      DELIVERY_PAYLOAD_KEYS: generatePayloadKey(o.prefix.replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 32) || 'test'),
    };
    this.sim = new SimulatorControl(this.simUrl);
  }

  /** Starts the simulator, then the bridge and the worker, and waits until all three are ready. */
  static async start(o: DeliveryProcessesOptions): Promise<DeliveryProcesses> {
    const p = new DeliveryProcesses(o, { sim: await freePort(), bridge: await freePort() });
    const workerEnv = { ...process.env, ...o.workerEnv };
    p.workerBundle = runBundleFile(workerEnv) ?? (await workflowBundleFile(workerEnv));
    try {
      const secret = generateWebhookSecret();
      p.env.DELIVERY_WEBHOOK_SECRETS = secret;
      p.current.simulator = await p.group.start({
        name: 'simulator',
        ...ENTRY.simulator,
        env: {
          SIMULATOR_PORT: String(new URL(p.simUrl).port),
          SIMULATOR_HOST: '127.0.0.1',
          SIMULATOR_WEBHOOK_URL: `${p.bridgeUrl}/webhooks/delivery`,
          SIMULATOR_WEBHOOK_SECRET: secret,
          ...o.simulatorEnv,
        },
      });
      await Promise.all([p.startBridge(), p.startWorker()]);
      return p;
    } catch (err) {
      await p.stop();
      throw err;
    }
  }

  get worker(): RunningProcess | undefined {
    return this.current.worker;
  }

  get bridge(): RunningProcess | undefined {
    return this.current.bridge;
  }

  /** How many times each process has been started. */
  get starts(): { worker: number; bridge: number } {
    return { ...this.counts };
  }

  /** The payload codec the worker uses, for the test's own Temporal client. */
  dataConverter() {
    return dataConverterFromEnv(this.env);
  }

  async startWorker(): Promise<RunningProcess> {
    const n = ++this.counts.worker;
    this.current.worker = await this.group.start({
      name: `worker#${n}`,
      ...ENTRY.worker,
      env: { ...this.env, LOG_LEVEL: 'WARN', WORKER_WORKFLOW_BUNDLE: this.workerBundle, ...this.o.workerEnv },
    });
    return this.current.worker;
  }

  async startBridge(): Promise<RunningProcess> {
    const n = ++this.counts.bridge;
    this.current.bridge = await this.group.start({
      name: `bridge#${n}`,
      ...ENTRY.bridge,
      env: { ...this.env, BRIDGE_HOST: '127.0.0.1', BRIDGE_PORT: String(this.bridgePort), BRIDGE_ADMIN_PORT: '0', BRIDGE_RETRY_AFTER_SECONDS: '1', ...this.o.bridgeEnv },
    });
    return this.current.bridge;
  }

  /**
   * Ends the worker with SIGKILL, or stops it as an operator would (SIGTERM: it finishes and
   * exits; SIGKILL after a grace period), then starts it again; returns once the new one is ready.
   */
  async restartWorker(signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    await end(this.current.worker, signal);
    await this.startWorker();
  }

  /** The same for the bridge, on the same port. */
  async restartBridge(signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    await end(this.current.bridge, signal);
    await this.startBridge();
  }

  async stop(): Promise<void> {
    await this.group.stopAll();
  }
}

async function end(p: RunningProcess | undefined, signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
  if (signal === 'SIGKILL') await p?.kill('SIGKILL');
  else await p?.stop();
}

export interface SimDelivery {
  key_fingerprint: string;
  delivery: DeliveryRecord;
  order: OrderRecord;
}

/** The simulator's `/_sim` control API, over HTTP (the simulator runs in its own process). */
export class SimulatorControl {
  constructor(readonly url: string) {}

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(this.url + path, {
      method,
      signal: AbortSignal.timeout(30_000),
      // JSON only on state-changing control routes, also without a body.
      headers: method === 'GET' ? undefined : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`simulator ${method} ${path} answered ${res.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  }

  async deliveries(): Promise<SimDelivery[]> {
    return (await this.call<{ data: SimDelivery[] }>('GET', '/_sim/deliveries')).data;
  }

  /** Sets a status (any string) of the delivery or of one destination, as the courier would. */
  advance(deliveryId: string, change: { destination_id?: string; status?: string } = {}): Promise<DeliveryRecord> {
    return this.call('POST', `/_sim/deliveries/${encodeURIComponent(deliveryId)}/advance`, change);
  }

  /** The simulator's log of API calls (method, path, status, time), oldest first. */
  async requests(): Promise<RequestLogEntry[]> {
    const all: RequestLogEntry[] = [];
    for (let since = 0; ; ) {
      const page = await this.call<{ data: RequestLogEntry[]; next: number }>('GET', `/_sim/requests?since=${since}&limit=5000`);
      all.push(...page.data);
      if (page.data.length < 5000) return all;
      since = page.next;
    }
  }

  /** Every webhook attempt so far, and each event's current fate. */
  async webhooks(): Promise<{ attempts: WebhookAttempt[]; events: WebhookDispatch[] }> {
    const all: WebhookAttempt[] = [];
    let since = 0;
    for (;;) {
      const page = await this.call<{ data: (WebhookAttempt & { index: number })[]; next: number; events: WebhookDispatch[] }>('GET', `/_sim/webhooks?since=${since}&limit=5000`);
      all.push(...page.data);
      if (page.data.length < 5000) return { attempts: all, events: page.events };
      since = page.next;
    }
  }
}
