/**
 * Shipping a replay-incompatible build on the production-shaped cluster (`npm run cluster`'s
 * provisioning, on free ports): two worker processes of build A make their version current at
 * their start, as a lone worker does; deliveries open on A; a worker process of build B (the test
 * build of test/temporal/fixtures/incompatible-workflows.ts) starts without being made current;
 * the rollout command, run as an operator would against the cluster, makes B current. The dev
 * server's versioning test (test/temporal/versioning.test.ts) covers the rest at a larger size.
 */
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { temporal } from '@temporalio/proto';
import type { DeliveryOrder } from '../../contract/delivery-types';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { ENTRY } from '../../scripts/processes';
import { bundleWorkflows } from '../../worker/worker';
import { deliveryRequest, destination } from '../fixtures/orders';
import { ClusterStack } from '../helpers/cluster';
import { eventually } from '../helpers/stack';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const SCALE = 60;
const DEPLOYMENT = 'cluster-versioning';
const stamp = Date.now().toString(36);
const bundleB = join(tmpdir(), `incompatible-workflows-${process.pid}.js`);

let stack: ClusterStack;

beforeAll(async () => {
  writeFileSync(bundleB, (await bundleWorkflows(require.resolve('../temporal/fixtures/incompatible-workflows'))).code);
  stack = await ClusterStack.start({
    workers: 2,
    simulatorEnv: { SIMULATOR_TIME_SCALE: String(SCALE) }, // statuses move only when the test says
    workerEnv: { WORKER_DEPLOYMENT_NAME: DEPLOYMENT, WORKER_BUILD_ID: 'a', PROVIDER_RATE_LIMITS: 'creations=20/1000ms,quotes=100/10000ms,other=600/1000ms', PROVIDER_PACING_MARGIN_MS: '20', PROVIDER_QUOTE_MIN_REMAINING_MS: '1000' },
  });
}, 600_000);

afterAll(async () => {
  if (process.env.CLUSTER_TEST_OUTPUT) console.log(stack?.group.tail(20_000));
  await stack?.stop();
  rmSync(bundleB, { force: true });
}, 120_000);

function order(n: number): DeliveryOrder {
  const { reference_number: _r, ...o } = deliveryRequest({ destinations: [destination(0, { location: { last_name: 'V', company: '', phone: '+4915112345600', address: `Versionsweg ${stamp}-${n}, 10115 Berlin` } })] });
  return o;
}

async function createdAtSimulator(references: string[]) {
  return eventually(
    `${references.length} deliveries to be created`,
    async () => {
      const mine = (await stack.sim.deliveries()).filter((d) => references.includes(d.delivery.reference_number ?? ''));
      return mine.length >= references.length ? mine : undefined;
    },
    120_000,
  );
}

async function deliverAll(references: string[]): Promise<void> {
  for (const d of await createdAtSimulator(references)) {
    for (let i = 0; i < 50 && (await stack.sim.advance(d.delivery.id)).status !== 'DELIVERED'; i++);
  }
  await Promise.all(references.map((r) => stack.client.result(r)));
}

/** The builds that completed each delivery's workflow tasks, and its failed workflow tasks. */
async function builds(references: string[]): Promise<{ builds: string[]; failed: number }[]> {
  const { EventType } = temporal.api.enums.v1;
  return Promise.all(
    references.map(async (r) => {
      const events = (await stack.temporal.workflow.getHandle(deliveryWorkflowId(r)).fetchHistory()).events ?? [];
      const done = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).map((e) => e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId ?? '');
      return { builds: [...new Set(done)], failed: events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED).length };
    }),
  );
}

it('rolls out an incompatible build with the rollout command while deliveries are open: each finishes on its own build', async () => {
  const onA = Array.from({ length: 20 }, (_, i) => `CV-A-${stamp}-${i}`);
  await Promise.all(onA.map((reference, i) => stack.client.startDelivery(order(i), { reference })));
  await createdAtSimulator(onA);

  await stack.group.start({ name: 'worker-b', ...ENTRY.worker, env: { ...stack.env, ...{ WORKER_DEPLOYMENT_NAME: DEPLOYMENT, WORKER_BUILD_ID: 'b', WORKER_MAKE_CURRENT: 'never', WORKER_WORKFLOW_BUNDLE: bundleB, LOG_LEVEL: 'WARN' } } });
  const rollout = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'scripts/rollout.ts', ...args], { cwd: ROOT, env: { ...stack.cliEnv, WORKER_DEPLOYMENT_NAME: DEPLOYMENT } });
  // B's queues register as its worker polls them; the command refuses (exit 3) until all are.
  const switched = await eventually(
    "the rollout command to find B's workers on every queue and make B current",
    () => rollout('--build-id', 'b').then(
      (r) => r.stdout,
      () => undefined,
    ),
    60_000,
  );
  expect(switched).toContain(`${DEPLOYMENT}:b is current (before: a)`);

  const onB = Array.from({ length: 5 }, (_, i) => `CV-B-${stamp}-${i}`);
  await Promise.all(onB.map((reference, i) => stack.client.startDelivery(order(100 + i), { reference })));
  await deliverAll([...onA, ...onB]);

  expect((await builds(onA)).filter((r) => r.builds.join() !== 'a' || r.failed > 0)).toEqual([]);
  expect((await builds(onB)).filter((r) => r.builds.join() !== 'b' || r.failed > 0)).toEqual([]);
  const status = (await rollout()).stdout;
  expect(status).toContain(`deployment ${DEPLOYMENT}: current b`);
  expect(status).not.toMatch(/a: .*open pinned deliveries/);
}, 600_000);
