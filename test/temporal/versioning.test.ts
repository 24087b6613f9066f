/**
 * Shipping a change while deliveries are in flight (docs/deploying.md, "Deploying a change"),
 * everything real: versioned workers of two builds side by side on one task queue, the simulator
 * enforcing its rolling windows, the rollout command's own functions switching versions. Build B's
 * delivery workflow does not replay A's histories (test/temporal/fixtures/incompatible-workflows.ts),
 * so a delivery that moved to B would fail its workflow tasks: every delivery must finish on the
 * build it started on, and the pacing gate, pinned too, moves to B by continuing as new and serves
 * both (needs Temporal server 1.30+; test/temporal/gate-rollout.test.ts has the backlog of two accounts).
 */
import { execFileSync, execSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { WorkflowBundle } from '@temporalio/worker';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { createProviderActivities } from '../../activities/provider-activities';
import type { DeliveryOrder } from '../../contract/delivery-types';
import { deliveryWorkflowId, gateWorkflowId } from '../../contract/workflow-ids';
import { ProviderClient } from '../../provider/client';
import { makeStackVersionCurrent } from '../../scripts/deployment-on-start';
import { abortRollout, report, rollTo, type RolloutTarget } from '../../scripts/rollout';
import { describeDeployment, describeVersion, openPinned, setCurrentVersion, waitForVersion, type DeploymentVersion } from '../../temporal/worker-deployment';
import { bundleWorkflows } from '../../worker/worker';
import { deliveryStartOptions } from '../../workflows/start-options';
import { deliveryRequest, destination } from '../fixtures/orders';
import { allCreated, driveToDelivered, eventually, SANDBOX_KEY, startStack, type Stack } from '../helpers/stack';
import { startWorkers, type RunningWorkers } from '../helpers/workers';
import { busiestWindow } from '../helpers/rolling-windows';

const SCALE = 60; // the provider's minute is one second
const scaled = { creations: { limit: 20, windowMs: 1_000 }, quotes: { limit: 100, windowMs: 10_000 }, other: { limit: 600, windowMs: 1_000 } };
const pacing = { limits: scaled, marginMs: 20, quoteMinRemainingMs: 1_000 };
/** Deliveries started on A before the switch (the figure). */
const ON_A = 100;

const { EventType, WorkflowTaskFailedCause } = temporal.api.enums.v1;
/**
 * A completion the server refused because an event (the gate's answer, a webhook's signal) came in
 * while the task ran: the worker runs the task again with it, on the same build. Frequent on a
 * loaded machine, and no sign of a replay problem, which shows as any other cause (nondeterminism).
 */
const REFUSED_FOR_NEW_EVENT = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND;
/** After a routing change, before the test expects every new delivery to follow it (see the abort test). */
const SETTLE_MS = 3_000;
/** A wait, not a figure (bench/ has those): 100 creations at 20 a second take 5 s, over 60 s with the 2 cores' load above 20. */
const CREATED_WITHIN_MS = 150_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let bundleB: Promise<WorkflowBundle>;
beforeAll(() => {
  bundleB = bundleWorkflows(require.resolve('./fixtures/incompatible-workflows'));
});

function order(tag: string, n: number): DeliveryOrder {
  const { reference_number: _r, ...o } = deliveryRequest({ destinations: [destination(0, { location: { last_name: 'R', company: '', phone: '+4915112345600', address: `Versionsweg ${tag}-${n}, 10115 Berlin` } })] });
  return o;
}

/** A deployment of its own per stack: making a version current applies to all of a deployment's queues. */
function versions(): { a: DeploymentVersion; b: DeploymentVersion } {
  const deploymentName = `test-${randomUUID().slice(0, 8)}`;
  return { a: { deploymentName, buildId: 'build-a' }, b: { deploymentName, buildId: 'build-b' } };
}

function target(stack: Stack, deploymentName: string, lines: string[] = []): RolloutTarget {
  return { service: stack.temporal.workflowService, namespace: stack.temporal.options.namespace, deploymentName, taskQueue: stack.workers.taskQueue, log: (l) => lines.push(l) };
}

/** A stack whose workers are version A, made current as `npm start` does. */
async function stackOnA(a: DeploymentVersion, simulator: NonNullable<Parameters<typeof startStack>[0]>['simulator'], p = pacing): Promise<Stack> {
  const stack = await startStack({ simulator: { timeScale: SCALE, ...simulator }, pacing: p, workers: { deployment: a } });
  await waitForVersion(stack.temporal.workflowService, stack.temporal.options.namespace, a, stack.workers.taskQueue);
  await setCurrentVersion(stack.temporal.workflowService, stack.temporal.options.namespace, a);
  return stack;
}

async function workersOfB(stack: Stack, b: DeploymentVersion, p = pacing): Promise<{ workers: RunningWorkers; provider: ProviderClient }> {
  const provider = new ProviderClient({ baseUrl: stack.simUrl, apiKey: SANDBOX_KEY, timeoutMs: 5_000 });
  const workers = await startWorkers(createProviderActivities(provider), { taskQueue: stack.workers.taskQueue, pacing: p, deployment: b, workflowBundle: await bundleB });
  await waitForVersion(stack.temporal.workflowService, stack.temporal.options.namespace, b, stack.workers.taskQueue);
  return { workers, provider };
}

/** A describe's teardown: B's workers and their provider client, then the stack (either may not have started). */
async function stopAll(stack: Stack | undefined, onB: { workers: RunningWorkers; provider: ProviderClient } | undefined): Promise<void> {
  await onB?.workers.stop();
  await onB?.provider.close();
  await stack?.stop();
}

async function start(stack: Stack, references: string[], tag: string): Promise<void> {
  await Promise.all(references.map((reference, i) => stack.deliveries.startDelivery(order(tag, i), { reference })));
}

/** Drives each delivery to DELIVERED at the simulator and waits for its workflow to end. */
async function deliverAll(stack: Stack, references: readonly string[]): Promise<void> {
  for (const d of await allCreated(stack, references, CREATED_WITHIN_MS)) driveToDelivered(stack.sim, d.delivery.id);
  await Promise.all(references.map((r) => stack.deliveries.result(r)));
}

interface Run {
  /** Build ids of the workers that completed its workflow tasks. */
  builds: Set<string>;
  /** Causes of its failed workflow tasks, but for completions refused for a new event. */
  failedTasks: string[];
  /** Start time of its first workflow task completed by `buildId`, ms since the epoch. */
  firstTaskOf(buildId: string): number | undefined;
}

async function runOf(client: Client, workflowId: string): Promise<Run> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) => Number(t?.seconds ?? 0) * 1000 + Math.floor((t?.nanos ?? 0) / 1e6);
  const completed = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  return {
    builds: new Set(completed.map((e) => e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId ?? '(unversioned)')),
    failedTasks: events
      .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED && e.workflowTaskFailedEventAttributes?.cause !== REFUSED_FOR_NEW_EVENT)
      .map((e) => `${WorkflowTaskFailedCause[e.workflowTaskFailedEventAttributes?.cause ?? 0]}: ${e.workflowTaskFailedEventAttributes?.failure?.message ?? ''}`),
    firstTaskOf(buildId) {
      const first = completed.find((e) => e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId === buildId);
      const started = events.find((e) => Number(e.eventId) === Number(first?.workflowTaskCompletedEventAttributes?.startedEventId));
      return started ? ms(started.eventTime as never) : undefined;
    },
  };
}

async function runsOf(client: Client, references: readonly string[]): Promise<Run[]> {
  return Promise.all(references.map((r) => runOf(client, deliveryWorkflowId(r))));
}

function expectAllOn(runs: Run[], buildId: string): void {
  expect(runs.filter((r) => r.builds.size !== 1 || !r.builds.has(buildId)).map((r) => [...r.builds])).toEqual([]);
  expect(runs.flatMap((r) => r.failedTasks)).toEqual([]);
}

async function drained(stack: Stack, v: DeploymentVersion) {
  return eventually('the server to report the version drained', async () => ((await describeVersion(stack.temporal.workflowService, stack.temporal.options.namespace, v))?.drainage === 'drained' ? true : undefined), 120_000);
}


describe('a replay-incompatible build shipped while deliveries are in flight', () => {
  const { a, b } = versions();
  let stack: Stack;
  let onB: { workers: RunningWorkers; provider: ProviderClient } | undefined;
  afterAll(() => stopAll(stack, onB));

  it(`finishes every delivery started on A on A, starts new ones on B, and reports A drained so its workers can stop`, async () => {
    stack = await stackOnA(a, {});
    const service = stack.temporal.workflowService;
    const namespace = stack.temporal.options.namespace;
    const refsA = Array.from({ length: ON_A }, (_, i) => `VER-A-${i}`);
    await start(stack, refsA, 'a');
    await allCreated(stack, refsA, CREATED_WITHIN_MS);
    expect(await eventually('the open deliveries and the pacing gate (pinned too) to be counted on A', async () => ((await openPinned(service, namespace, a)) === ON_A + 1 ? true : undefined))).toBe(true);

    // B really is incompatible: an A delivery's history does not replay on it.
    const history = await stack.temporal.workflow.getHandle(deliveryWorkflowId(refsA[0]!)).fetchHistory();
    await expect(Worker.runReplayHistory({ workflowBundle: await bundleB }, history, deliveryWorkflowId(refsA[0]!))).rejects.toThrow(/[Nn]ondetermin/);

    onB = await workersOfB(stack, b);
    const lines: string[] = [];
    expect(await rollTo(target(stack, a.deploymentName, lines), b.buildId)).toBe(0);
    const switchedAt = Date.now();
    const refsB = Array.from({ length: 10 }, (_, i) => `VER-B-${i}`);
    await start(stack, refsB, 'b');
    await allCreated(stack, refsB, CREATED_WITHIN_MS);
    expect((await describeDeployment(service, namespace, a.deploymentName))?.current).toBe(b.buildId);

    // The A deliveries go on to the end (webhooks through the bridge) while B takes the new ones.
    await deliverAll(stack, [...refsA, ...refsB]);
    const runsA = await runsOf(stack.temporal, refsA);
    const runsB = await runsOf(stack.temporal, refsB);
    expectAllOn(runsA, a.buildId);
    expectAllOn(runsB, b.buildId);
    const firstOnB = Math.min(...runsB.map((r) => r.firstTaskOf(b.buildId)!));

    // The gate moved to B by continuing as new, and served both: its run now is on B alone.
    const gate = await runOf(stack.temporal, gateWorkflowId(stack.workers.taskQueue));
    process.stdout.write(`versioning: from B current to B's first workflow task: a new delivery's ${firstOnB - switchedAt} ms, the gate's ${gate.firstTaskOf(b.buildId)! - switchedAt} ms\n`);
    expect(gate.builds).toEqual(new Set([b.buildId]));
    expect(gate.failedTasks).toEqual([]);

    await drained(stack, a); // the gate is no longer pinned to A
    expect(await openPinned(service, namespace, a)).toBe(0);
    const status: string[] = [];
    await report(target(stack, a.deploymentName, status));
    expect(status.join('\n')).toMatch(/build-a: \w+, drained: its workers may be stopped/);

    // A's workers stop with nothing left on them: a delivery started now runs on B alone.
    await stack.workers.stop();
    await start(stack, ['VER-B-after'], 'after');
    await deliverAll(stack, ['VER-B-after']);
    expectAllOn(await runsOf(stack.temporal, ['VER-B-after']), b.buildId);
  }, 480_000);
});

describe('a switch with a backlog waiting at the pacing gate', () => {
  const { a, b } = versions();
  // 5 creations a second: 60 orders wait at the gate for 12 s, across the switch.
  const tight = { ...pacing, limits: { ...scaled, creations: { limit: 5, windowMs: 1_000 } } };
  let stack: Stack;
  let onB: { workers: RunningWorkers; provider: ProviderClient } | undefined;
  afterAll(() => stopAll(stack, onB));

  it('keeps every rolling window, gets no 429 and creates every order once, with deliveries pinned to two versions sharing one gate', async () => {
    stack = await stackOnA(a, { rateLimits: { creations: { limit: 5 } } }, tight);
    onB = await workersOfB(stack, b, tight);
    const refsA = Array.from({ length: 40 }, (_, i) => `GATE-A-${i}`);
    // Pinned to A from their start, so the switch can follow the first creations at once, with
    // the backlog still waiting. (Pinned by their first task on A, as in the rollout above, they
    // must all have run one before the switch: on a loaded machine that took longer than the gate
    // needs to create all 40, and no backlog was left to switch with.)
    await Promise.all(
      refsA.map((reference, i) =>
        stack.temporal.workflow.start('delivery', { taskQueue: stack.workers.taskQueue, ...deliveryStartOptions({ order: order('ga', i), reference }), versioningOverride: { pinnedTo: a } }),
      ),
    );
    await eventually('the first creations', () => (stack.sim.deliveries().length >= 5 ? true : undefined), 120_000);
    expect(stack.sim.deliveries().length).toBeLessThan(40); // a backlog waits at the gate
    expect(await rollTo(target(stack, a.deploymentName), b.buildId)).toBe(0);
    const refsB = Array.from({ length: 20 }, (_, i) => `GATE-B-${i}`);
    await start(stack, refsB, 'gb');

    const all = await allCreated(stack, [...refsA, ...refsB], 90_000);
    expect(all).toHaveLength(60);
    const creations = stack.sim.requestLog().filter((e) => e.method === 'POST' && e.path === '/v1/deliveries');
    expect(creations.filter((e) => e.status === 429)).toEqual([]);
    expect(new Set(all.map((d) => d.delivery.reference_number)).size).toBe(60);
    expect(busiestWindow(creations.filter((e) => e.status < 300).map((e) => Date.parse(e.time)), 1_000)).toBeLessThanOrEqual(5);

    expectAllOn(await runsOf(stack.temporal, refsA), a.buildId);
    expectAllOn(await runsOf(stack.temporal, refsB), b.buildId);
    const gate = await runOf(stack.temporal, gateWorkflowId(stack.workers.taskQueue));
    expect(gate.builds).toEqual(new Set([b.buildId])); // one gate, moved to B by continuing as new
    expect(gate.failedTasks).toEqual([]);
  }, 240_000);
});

describe('an aborted rollout', () => {
  const { a, b } = versions();
  let stack: Stack;
  let onB: { workers: RunningWorkers; provider: ProviderClient } | undefined;
  afterAll(() => stopAll(stack, onB));

  it('returns to A with nothing lost, from a ramp and from a switch', async () => {
    stack = await stackOnA(a, {});
    const service = stack.temporal.workflowService;
    const namespace = stack.temporal.options.namespace;
    onB = await workersOfB(stack, b);
    const t = target(stack, a.deploymentName);

    // Halfway: half of the new deliveries start on B, then the ramp is aborted.
    expect(await rollTo(t, b.buildId, 50)).toBe(0);
    const ramped = Array.from({ length: 20 }, (_, i) => `ABORT-R-${i}`);
    await start(stack, ramped, 'ar');
    await allCreated(stack, ramped, CREATED_WITHIN_MS);
    expect(await abortRollout(t)).toBe(0);
    expect(await describeDeployment(service, namespace, a.deploymentName)).toMatchObject({ current: a.buildId, ramping: undefined });
    // New deliveries after the ramp ends: the dev server (1.29.1) still started about one in ten
    // on B, seconds later, with the deployment and the queue both reporting the ramp gone. Nothing
    // is lost either way: each finishes on the build it started on (checked below).
    const atAbort = Array.from({ length: 5 }, (_, i) => `ABORT-NOW-${i}`);
    await start(stack, atAbort, 'an');
    await sleep(SETTLE_MS);
    const afterRamp = Array.from({ length: 5 }, (_, i) => `ABORT-A-${i}`);
    await start(stack, afterRamp, 'aa');

    // All the way to B, then aborted: A is current again.
    expect(await rollTo(t, b.buildId)).toBe(0);
    const onBuildB = ['ABORT-B-0', 'ABORT-B-1'];
    await start(stack, onBuildB, 'ab');
    await allCreated(stack, onBuildB, CREATED_WITHIN_MS);
    expect(await abortRollout(t)).toBe(0);
    expect((await describeDeployment(service, namespace, a.deploymentName))?.current).toBe(a.buildId);
    await sleep(SETTLE_MS);
    const back = ['ABORT-BACK-0', 'ABORT-BACK-1'];
    await start(stack, back, 'back');

    // Nothing lost: every delivery ends, each on the build it started on.
    const all = [...ramped, ...atAbort, ...afterRamp, ...onBuildB, ...back];
    await deliverAll(stack, all);
    const rampedRuns = await runsOf(stack.temporal, ramped);
    const rampedOnB = rampedRuns.filter((r) => r.builds.has(b.buildId)).length;
    expect(rampedOnB).toBeGreaterThan(0);
    expect(rampedOnB).toBeLessThan(ramped.length);
    const afterAbort = await runsOf(stack.temporal, [...atAbort, ...afterRamp]);
    expect([...rampedRuns, ...afterAbort].every((r) => r.builds.size === 1 && r.failedTasks.length === 0)).toBe(true);
    process.stdout.write(`versioning: new deliveries started on B after the ramp was ended: ${afterAbort.filter((r) => r.builds.has(b.buildId)).length} of ${afterAbort.length}\n`);
    expectAllOn(await runsOf(stack.temporal, back), a.buildId);
    expectAllOn(await runsOf(stack.temporal, onBuildB), b.buildId);
  }, 240_000);
});

describe('a task queue added to a version that is already current', () => {
  const { a } = versions();
  let first: Stack | undefined;
  let second: Stack | undefined;
  afterAll(async () => {
    await second?.stop();
    await first?.stop();
  });

  it('is served at once (a worker of the current version on a new queue needs no rollout)', async () => {
    first = await stackOnA(a, {});
    // Another queue, the same version: as a benchmark phase or a second deployment does.
    second = await startStack({ simulator: { timeScale: SCALE }, pacing, workers: { deployment: a } });
    await waitForVersion(second.temporal.workflowService, second.temporal.options.namespace, a, second.workers.taskQueue);
    await start(second, ['JOIN-0'], 'join');
    await deliverAll(second, ['JOIN-0']);
    expectAllOn(await runsOf(second.temporal, ['JOIN-0']), a.buildId);
  }, 120_000);
});

describe('a version whose pinned deliveries no worker polls', () => {
  const { a } = versions();
  const c = { deploymentName: a.deploymentName, buildId: 'build-c' }; // the product's code again: compatible with A
  const d = { deploymentName: a.deploymentName, buildId: 'build-d' };
  let stack: Stack;
  const extra: RunningWorkers[] = [];
  const providers: ProviderClient[] = [];
  afterAll(async () => {
    for (const w of extra) await w.stop();
    await Promise.all(providers.map((p) => p.close()));
    await stack?.stop();
  });

  async function workersOf(v: DeploymentVersion): Promise<RunningWorkers> {
    const provider = new ProviderClient({ baseUrl: stack.simUrl, apiKey: SANDBOX_KEY, timeoutMs: 5_000 });
    providers.push(provider);
    const w = await startWorkers(createProviderActivities(provider), { taskQueue: stack.workers.taskQueue, pacing, deployment: v });
    extra.push(w);
    return w;
  }

  /** As `npm start` does after starting the workers of `v`: its log lines. */
  async function startedAs(v: DeploymentVersion): Promise<string> {
    const lines: string[] = [];
    await makeStackVersionCurrent({ DELIVERY_TASK_QUEUE: stack.workers.taskQueue, WORKER_DEPLOYMENT_NAME: v.deploymentName, WORKER_BUILD_ID: v.buildId }, (l) => lines.push(l));
    return lines.join('\n');
  }

  it('is reported loudly by the start, and its deliveries end once its workers run again (way out 1)', async () => {
    stack = await stackOnA(a, {});
    const refs = ['STRAND-A-0', 'STRAND-A-1', 'STRAND-A-2'];
    await start(stack, refs, 'sa');
    await allCreated(stack, refs, CREATED_WITHIN_MS);
    // The stack restarts on new code: A's workers gone, C's started and made current.
    await stack.workers.stop();
    await workersOf(c);
    const log = await startedAs(c);
    expect(log).toContain(`workers: version ${a.deploymentName}:build-c, current (was build-a)`);
    // The pacing gate, pinned to A too, moves to C at once (no worker of A would ever run it); its 3 deliveries stay on A.
    expect(log).toContain(`pacing gates: 1 pinned to a version no worker of this stack runs, moved to build-c`);
    expect(log).toContain(`!!! version ${a.deploymentName}:build-a: 3 open pinned deliveries and NO worker polling for it`);
    expect(log).toMatch(/start that version's workers: .*WORKER_BUILD_ID=build-a/);
    await eventually('the moved gate no longer counted pinned to A', async () => ((await openPinned(stack.temporal.workflowService, stack.temporal.options.namespace, a)) === 3 ? true : undefined), 30_000);

    // The rollout command, run as an operator would, names the same deployment and build.
    const out = execFileSync(process.execPath, ['--import', 'tsx', 'scripts/rollout.ts'], { cwd: join(__dirname, '..', '..'), env: { ...process.env, DELIVERY_TASK_QUEUE: stack.workers.taskQueue, WORKER_DEPLOYMENT_NAME: a.deploymentName } }).toString();
    expect(out).toContain(`deployment ${a.deploymentName}: current build-c`);
    expect(out).toMatch(/build-a: draining, 3 open pinned deliveries/);

    await workersOf(a);
    await deliverAll(stack, refs);
    expectAllOn(await runsOf(stack.temporal, refs), a.buildId);
  }, 180_000);

  it('moves its deliveries on with the printed update-options command when the change is compatible (way out 2)', async () => {
    const refs = ['STRAND-C-0', 'STRAND-C-1'];
    await start(stack, refs, 'sc');
    await allCreated(stack, refs, CREATED_WITHIN_MS);
    const onC = extra[0]!;
    await onC.stop();
    await workersOf(d);
    const log = await startedAs(d);
    const command = log.split('\n').find((l) => l.includes('temporal workflow update-options'))!.replace(/^!!!\s+temporal /, '');
    expect(command).toContain(`TemporalWorkerDeploymentVersion='${a.deploymentName}:build-c'`);
    execSync(`"${process.env.TEMPORAL_CLI_PATH}" ${command}`, { env: process.env, stdio: 'pipe' });
    await eventually('the deliveries to be pinned to D', async () => ((await openPinned(stack.temporal.workflowService, stack.temporal.options.namespace, c)) === 0 ? true : undefined), 30_000);
    await deliverAll(stack, refs);
    const runs = await runsOf(stack.temporal, refs);
    expect(runs.map((r) => [...r.builds].sort())).toEqual(refs.map(() => ['build-c', 'build-d']));
    expect(runs.flatMap((r) => r.failedTasks)).toEqual([]);
  }, 180_000);
});
