/**
 * Upgrade on continue-as-new (docs/deploying.md, "Deploying a change"), everything real: versioned
 * workers of two builds, a registry of three accounts, the simulator holding each account's key and
 * rolling windows, the rollout's own setCurrentVersion. The gates are pinned to their build; a
 * switch while two of them hold a backlog (and a third is idle) must move every gate to the new
 * build by continuing as new, with every window kept: then the old build's gate worker and
 * provider-call workers stop, and the backlog drains on the new build alone.
 *
 * Needs Temporal server 1.30+ (upgrade on continue-as-new); on the CLI's dev server 1.29.1 the
 * gates never learn that their target changed.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { accountRegistryFromEnv, type AccountRegistry } from '../../accounts/registry';
import { providerClientsFor } from '../../accounts/provider-clients';
import { createProviderActivities } from '../../activities/provider-activities';
import { GATE_WORKFLOW_TYPE } from '../../contract/gate-messages';
import { gateTaskQueue, providerTaskQueues } from '../../contract/task-queues';
import { gateWorkflowId } from '../../contract/workflow-ids';
import { keyFingerprint } from '../../simulator/auth';
import { createSimulator, type Simulator } from '../../simulator/server';
import { setCurrentVersion, versionLabel, waitForVersion, type DeploymentVersion } from '../../temporal/worker-deployment';
import { deliveryStartOptions } from '../../workflows/start-options';
import { deliveryRequest } from '../fixtures/orders';
import { busiestWindow } from '../helpers/rolling-windows';
import { eventually } from '../helpers/stack';
import { testClient, testServerAddress, uniqueTaskQueue } from '../helpers/temporal';
import { makeStackVersionCurrent } from '../../scripts/deployment-on-start';
import { startWorkers, type RunningWorkers } from '../helpers/workers';

jest.setTimeout(300_000);

const { EventType } = temporal.api.enums.v1;
const SHOPS = ['shop-a', 'shop-b', 'shop-idle'] as const;
type Shop = (typeof SHOPS)[number];
const KEYS: Record<Shop, string> = { 'shop-a': 'key-rollout-a', 'shop-b': 'key-rollout-b', 'shop-idle': 'key-rollout-idle' };
/** Each account's creations, at the gate and at the simulator alike: a slip shows as a 429 or a crowded window. */
const LIMIT = 3;
const WINDOW_MS = 2_000;
/** Orders per busy account: 8 windows of backlog, so the switch meets windows full and orders waiting. */
const BACKLOG = 8 * LIMIT;

let sim: Simulator;
let registry: AccountRegistry;
let clients: ReturnType<typeof providerClientsFor>;
let temporalClient: Client;
let connection: Connection;
const running: RunningWorkers[] = [];
const started: string[] = [];
const taskQueue = uniqueTaskQueue('gate-rollout');
const deploymentName = `test-${randomUUID().slice(0, 8)}`;
const a: DeploymentVersion = { deploymentName, buildId: 'build-a' };
const b: DeploymentVersion = { deploymentName, buildId: 'build-b' };

beforeAll(async () => {
  const limits = { creations: { limit: LIMIT, windowMs: WINDOW_MS } };
  sim = createSimulator({ apiKeys: Object.values(KEYS), rateLimits: limits, onError: (m) => console.error(`simulator: ${m}`) });
  await sim.listen(0, '127.0.0.1');
  const dir = mkdtempSync(join(tmpdir(), 'delivery-gate-rollout-'));
  for (const shop of SHOPS) writeFileSync(join(dir, `${shop}.key`), KEYS[shop]);
  const accounts = SHOPS.map((id) => ({ id, baseUrl: sim.url, apiKey: { file: `${id}.key` }, limits: `creations=${LIMIT}/${WINDOW_MS / 1000}s` }));
  writeFileSync(join(dir, 'accounts.json'), JSON.stringify({ accounts }));
  registry = accountRegistryFromEnv({ DELIVERY_ACCOUNTS_FILE: join(dir, 'accounts.json') });
  clients = providerClientsFor(registry, { timeoutMs: 5_000 });
  ({ client: temporalClient, connection } = await testClient());
});

afterAll(async () => {
  await Promise.all(started.map((id) => temporalClient.workflow.getHandle(id).terminate('test over').catch(() => undefined)));
  for (const w of running) await w.stop();
  await Promise.all(SHOPS.map((s) => temporalClient.workflow.getHandle(gateWorkflowId(taskQueue, s)).terminate('test over').catch(() => undefined)));
  await clients?.close();
  registry?.close();
  await connection?.close();
  await sim?.close();
});

async function workersOf(v: DeploymentVersion): Promise<RunningWorkers> {
  const w = await startWorkers(createProviderActivities((account) => clients.forAccount(account)), { taskQueue, deployment: v, accounts: registry, pacing: { marginMs: 20 } });
  running.push(w);
  await waitForVersion(temporalClient.workflowService, temporalClient.options.namespace, v, taskQueue);
  return w;
}

/** Started pinned to A from their start, so the switch can come while their asks wait at the gate. */
async function startOrders(shop: Shop, n: number): Promise<string[]> {
  const refs = Array.from({ length: n }, (_, i) => `ROLL-${shop}-${i}`);
  await Promise.all(
    refs.map(async (reference) => {
      const { reference_number: _r, ...order } = deliveryRequest({ is_food: false });
      const h = await temporalClient.workflow.start('delivery', { taskQueue, ...deliveryStartOptions({ order, reference, account: shop }), versioningOverride: { pinnedTo: a } });
      started.push(h.workflowId);
    }),
  );
  return refs;
}

const creations = (shop: Shop) =>
  sim
    .requestLog()
    .filter((e) => e.method === 'POST' && e.path === '/v1/deliveries' && e.key_fingerprint === keyFingerprint(KEYS[shop]))
    .map((e) => ({ status: e.status, at: Date.parse(e.time) }));
const createdRefs = () => new Set(sim.deliveries().map((d) => d.delivery.reference_number));

/** Build ids of the workers that completed a run's workflow tasks. */
async function buildsOf(workflowId: string, runId?: string): Promise<Set<string>> {
  const events = (await temporalClient.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
  return new Set(events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).map((e) => e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId ?? '(unversioned)'));
}

const gatesPinnedTo = async (v: DeploymentVersion) =>
  Number((await temporalClient.workflow.count(`WorkflowType = '${GATE_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running' AND TemporalWorkerDeploymentVersion = '${versionLabel(v)}' AND TemporalWorkflowVersioningBehavior = 'Pinned'`)).count);

test('a switch while two gates hold a backlog and one is idle: every gate moves to the new build by continuing as new, no old worker serves a gate after it, and the backlog drains with every window kept', async () => {
  const onA = await workersOf(a);
  await setCurrentVersion(temporalClient.workflowService, temporalClient.options.namespace, a);
  // The idle account's gate runs once, then waits with nothing to do (no timer).
  const idle = await startOrders('shop-idle', 1);
  await eventually('the idle account served', () => (idle.every((r) => createdRefs().has(r)) ? true : undefined), 60_000);
  // B's workers poll before the backlog starts (routing stays on A): the switch can follow the first window.
  const onB = await workersOf(b);
  const refs = [...(await startOrders('shop-a', BACKLOG)), ...(await startOrders('shop-b', BACKLOG))];
  const made = () => refs.filter((r) => createdRefs().has(r)).length;
  await eventually('the first window of both accounts', () => (creations('shop-a').length >= LIMIT && creations('shop-b').length >= LIMIT ? true : undefined), 120_000);
  expect(made()).toBeLessThan(refs.length); // a backlog waits at the gates

  const firstRuns = await Promise.all(SHOPS.map(async (s) => (await temporalClient.workflow.getHandle(gateWorkflowId(taskQueue, s)).describe()).runId));
  await setCurrentVersion(temporalClient.workflowService, temporalClient.options.namespace, b);
  const switchedAt = Date.now();
  // Every gate, the idle one too, continues as new onto B.
  await eventually('every gate moved to B', async () => ((await gatesPinnedTo(a)) === 0 && (await gatesPinnedTo(b)) === SHOPS.length ? true : undefined), 60_000);
  const movedAfterMs = Date.now() - switchedAt;
  const atMove = made();
  // No old worker serves a gate from here: A's gate worker and its provider-call workers stop
  // (A's delivery workers go on: its deliveries are pinned to A, and ask the gates on B).
  const gateQueues = new Set([gateTaskQueue(taskQueue), providerTaskQueues(taskQueue).creations, providerTaskQueues(taskQueue).quotes]);
  const stopped = onA.workers.workers.filter((w) => gateQueues.has(w.options.taskQueue));
  expect(stopped).toHaveLength(3);
  for (const w of stopped) w.shutdown();

  await eventually('the whole backlog created', () => (refs.every((r) => createdRefs().has(r)) ? true : undefined), 180_000);
  process.stdout.write(`gate rollout: gates on B ${movedAfterMs} ms after the switch; ${refs.length - atMove} orders of deliveries pinned to A created by the gates on B\n`);
  expect(refs.length - atMove).toBeGreaterThan(0);

  for (const shop of SHOPS) {
    const calls = creations(shop);
    expect(calls.filter((c) => c.status === 429)).toEqual([]);
    // Every window kept across the switch: the runs on B started from A's windows.
    expect(busiestWindow(calls.filter((c) => c.status < 300).map((c) => c.at), WINDOW_MS)).toBeLessThanOrEqual(LIMIT);
  }
  // Each order created once.
  const references = sim.deliveries().map((d) => d.delivery.reference_number);
  expect(references.length).toBe(new Set(references).size);
  // Each gate: its first run on A alone, its run now on B alone, no failed workflow task.
  for (const [i, shop] of SHOPS.entries()) {
    const id = gateWorkflowId(taskQueue, shop);
    expect(await buildsOf(id, firstRuns[i])).toEqual(new Set([a.buildId]));
    expect(await buildsOf(id)).toEqual(new Set([b.buildId]));
  }
  expect(onB.workers.workers.every((w) => w.getState() === 'RUNNING')).toBe(true);
});

test("the stack started again on changed code, the old build's workers all gone: `npm start` moves the gate pinned to the old build, and a new order of its account is created on the new one", async () => {
  const queue = uniqueTaskQueue('gate-stranded');
  const name = `test-${randomUUID().slice(0, 8)}`;
  const c: DeploymentVersion = { deploymentName: name, buildId: 'build-c' };
  const d: DeploymentVersion = { deploymentName: name, buildId: 'build-d' };
  const on = async (v: DeploymentVersion) => {
    const w = await startWorkers(createProviderActivities((account) => clients.forAccount(account)), { taskQueue: queue, deployment: v, accounts: registry, pacing: { marginMs: 20 } });
    running.push(w);
    await waitForVersion(temporalClient.workflowService, temporalClient.options.namespace, v, queue);
    return w;
  };
  const order = async (reference: string) => {
    const { reference_number: _r, ...o } = deliveryRequest({ is_food: false });
    started.push((await temporalClient.workflow.start('delivery', { taskQueue: queue, ...deliveryStartOptions({ order: o, reference, account: 'shop-a' }) })).workflowId);
  };
  const gate = temporalClient.workflow.getHandle(gateWorkflowId(queue, 'shop-a'));
  started.push(gate.workflowId);

  const onC = await on(c);
  await setCurrentVersion(temporalClient.workflowService, temporalClient.options.namespace, c);
  await order('STRAND-1');
  await eventually('the first order created on C', () => (createdRefs().has('STRAND-1') ? true : undefined), 60_000);
  await onC.stop(); // Ctrl-C: every worker of C gone
  await on(d);
  const lines: string[] = [];
  const { address, namespace } = testServerAddress();
  await makeStackVersionCurrent({ TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace, DELIVERY_TASK_QUEUE: queue, WORKER_DEPLOYMENT_NAME: name, WORKER_BUILD_ID: d.buildId }, (l) => lines.push(l));
  expect(lines.join('\n')).toMatch(/pacing gates: 1 pinned to a version no worker of this stack runs, moved to build-d/);

  await order('STRAND-2');
  await eventually('the new order created on D', () => (createdRefs().has('STRAND-2') ? true : undefined), 60_000);
  expect(await buildsOf(gate.workflowId)).toContain(d.buildId);
  // The stranded report names C for its open delivery, not for the gate, which moved.
  expect(lines.filter((l) => l.includes(`version ${versionLabel(c)}: 1 open pinned delivery`))).toHaveLength(1);
});
