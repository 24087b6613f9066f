/**
 * Issue #7 at stack level, with the real processes (`simulator/main.ts` with a state file and
 * auto-advance, `worker/main.ts`, `bridge/main.ts`) against the test's Temporal dev server: a
 * delivery is started, the three processes are stopped with SIGTERM mid-delivery (as Ctrl-C on
 * `npm start` does), started again with the same state file, and the workflow still ends
 * DELIVERED, with the simulator's delivery and statuses, driven by the resumed simulator's webhooks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { DeliveryClient } from '../../client/delivery-client';
import { isTerminalDelivery } from '../../provider/lifecycle';
import type { DeliveryRecord } from '../../provider/schemas';
import { generateWebhookSecret } from '../../provider/webhook-signature';
import { StateFileSchema } from '../../simulator/persistence';
import type { WebhookAttempt } from '../../simulator/webhooks';
import { freePort, stopProcess } from '../../scripts/temporal-dev-server';
import { deliveryRequest } from '../fixtures/orders';
import { testClient, testDeployment, testServerAddress, uniqueTaskQueue } from '../helpers/temporal';
import { runBundleFile } from '../helpers/workflow-bundle';

const ROOT = join(__dirname, '../..');
const WEBHOOK_SECRET = generateWebhookSecret();

const output: string[] = [];
const running = new Set<ChildProcess>();

function start(name: string, entry: string, env: NodeJS.ProcessEnv, ready: RegExp): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, entry)], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start:\n${output.join('')}`)), 60_000);
    const take = (chunk: Buffer) => {
      output.push(`[${name}] ${chunk.toString()}`);
      if (ready.test(chunk.toString())) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', take);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code}:\n${output.join('')}`));
    });
  });
}

/** SIGTERM, wait for the exit, and say how it ended (0: a clean stop). */
async function stop(child: ChildProcess): Promise<number | null> {
  await stopProcess(child);
  return child.exitCode;
}

async function eventually<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${output.join('')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

let dir: string;
let stateFile: string;
let simUrl: string;
let env: Record<string, string>;
let workerEnv: Record<string, string>;
let simEnv: Record<string, string>;
let bridgeEnv: Record<string, string>;
let deliveries: DeliveryClient;
let temporal: Client;
let closeConnection: () => Promise<void>;

beforeAll(async () => {
  const { address, namespace } = testServerAddress();
  const [simPort, bridgePort] = [await freePort(), await freePort()];
  dir = mkdtempSync(join(tmpdir(), 'stack-restart-'));
  stateFile = join(dir, 'simulator-state.json');
  simUrl = `http://127.0.0.1:${simPort}`;
  const taskQueue = uniqueTaskQueue('restart');
  env = {
    TEMPORAL_ADDRESS: address,
    TEMPORAL_NAMESPACE: namespace,
    DELIVERY_TASK_QUEUE: taskQueue,
    ...testDeployment(taskQueue),
    DELIVERY_API_URL: simUrl,
    DELIVERY_API_KEY: 'sandbox-key',
    DELIVERY_PAYLOAD_KEYS: '', // no encryption: the test's client reads the results as they are
  };
  // The run's prebuilt workflows, so each worker start skips webpack (processes.test.ts has a worker bundle its own).
  const bundle = runBundleFile();
  workerEnv = bundle ? { ...env, WORKER_WORKFLOW_BUNDLE: bundle } : env;
  // Provider time 10× faster: one step every 1.5 s, webhook retries after 0.5 s, 3 s, ...
  simEnv = {
    SIMULATOR_PORT: String(simPort),
    SIMULATOR_TIME_SCALE: '10',
    SIMULATOR_AUTO_ADVANCE_MS: '15000',
    SIMULATOR_WEBHOOK_URL: `http://127.0.0.1:${bridgePort}/webhooks/delivery`,
    SIMULATOR_WEBHOOK_SECRET: WEBHOOK_SECRET,
    SIMULATOR_STATE_FILE: stateFile,
  };
  bridgeEnv = { ...env, BRIDGE_PORT: String(bridgePort), BRIDGE_ADMIN_PORT: '0', DELIVERY_WEBHOOK_SECRETS: WEBHOOK_SECRET, BRIDGE_RETRY_AFTER_SECONDS: '1' };
  const { client, connection } = await testClient();
  temporal = client;
  deliveries = new DeliveryClient({ temporal: client, taskQueue, followUp: { endGraceMs: 0 } });
  closeConnection = () => connection.close();
}, 30_000);

afterAll(async () => {
  await Promise.all([...running].map((c) => stopProcess(c)));
  await closeConnection();
  rmSync(dir, { recursive: true, force: true });
});

/** The worker and the bridge first, so the simulator's resumed webhooks find the bridge up. */
async function startStack(round: number): Promise<{ simulator: ChildProcess; worker: ChildProcess; bridge: ChildProcess }> {
  const [worker, bridge] = await Promise.all([
    start(`worker#${round}`, 'worker/main.ts', workerEnv, /^worker: task queue/m),
    start(`bridge#${round}`, 'bridge/main.ts', bridgeEnv, /^bridge: listening/m),
  ]);
  const simulator = await start(`simulator#${round}`, 'simulator/main.ts', simEnv, /state file: /);
  return { simulator, worker, bridge };
}

const simDelivery = async (id: string): Promise<DeliveryRecord | undefined> => {
  const all = (await (await fetch(`${simUrl}/_sim/deliveries`)).json()) as { data: { delivery: DeliveryRecord }[] };
  return all.data.find((d) => d.delivery.id === id)?.delivery;
};

it('a delivery goes on to DELIVERED after the simulator, worker and bridge are stopped mid-delivery and started again', async () => {
  const first = await startStack(1);
  const reference = `RESTART-${Date.now().toString(36)}`;
  const { reference_number: _r, ...order } = deliveryRequest({}, 2);
  await deliveries.startDelivery(order, { reference });

  // Mid-delivery: created, and a first webhook (ASSIGNED) has reached the workflow through the bridge.
  const assigned = await eventually(
    'the first status change in the workflow',
    async () => {
      const s = await deliveries.getStatus(reference);
      return s.deliveryId && s.status && s.status !== 'CREATED' ? s : undefined;
    },
    30_000,
  );
  const deliveryId = assigned.deliveryId!;

  // Ctrl-C on `npm start`: everything gets SIGTERM; the simulator first, so it stops advancing.
  expect(await stop(first.simulator)).toBe(0); // a clean stop: its state saved
  await Promise.all([stop(first.worker), stop(first.bridge)]);
  const saved = StateFileSchema.parse(JSON.parse(readFileSync(stateFile, 'utf8')));
  const savedDelivery = saved.deliveries.find((d) => d.delivery.id === deliveryId);
  expect(savedDelivery).toBeDefined();
  expect(isTerminalDelivery(savedDelivery!.delivery.status)).toBe(false); // really stopped mid-delivery
  expect(savedDelivery!.auto_advance_at).not.toBeNull();
  expect((await temporal.workflow.getHandle(`delivery:${reference}`).describe()).status.name).toBe('RUNNING');

  const second = await startStack(2);
  expect(output.some((l) => l.startsWith('[simulator#2]') && l.includes(`state file: ${stateFile} (1 delivery restored)`))).toBe(true);
  // Straight after the restart the simulator knows the delivery (the issue: it answered 404).
  expect((await fetch(`${simUrl}/v1/deliveries/${deliveryId}`, { headers: { authorization: 'Bearer sandbox-key' } })).status).toBe(200);

  const final = await deliveries.result(reference);
  expect(final.status).toBe('DELIVERED');
  expect(final.deliveryId).toBe(deliveryId);
  const atSimulator = await simDelivery(deliveryId);
  expect(atSimulator?.status).toBe('DELIVERED');
  expect(final.destinations.map((d) => [d.id, d.status])).toEqual(atSimulator!.destinations.map((d) => [d.id, d.status]));
  // The end came from the restarted simulator's webhooks, accepted by the restarted bridge.
  const attempts = ((await (await fetch(`${simUrl}/_sim/webhooks`)).json()) as { data: WebhookAttempt[] }).data;
  expect(attempts.some((a) => a.delivery_id === deliveryId && a.status === 'DELIVERED' && a.outcome === 'delivered')).toBe(true);
  const deliveredEntry = final.timeline.find((t) => t.subject === 'delivery' && t.status === 'DELIVERED');
  expect(deliveredEntry?.source).toBe('webhook');

  await Promise.all([second.simulator, second.worker, second.bridge].map((c) => stop(c)));
}, 150_000);
