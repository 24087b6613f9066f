/**
 * The cluster's upgrade from the Temporal server this project ran before (v1.29.1) to its own
 * (TEMPORAL_SERVER_VERSION), as docs/deploying.md ("Upgrading Temporal") tells an operator of
 * `npm run cluster` to do it, with deliveries open across it. The cluster starts on the 1.29.1
 * tools (scripts/cluster/tools.ts, ensureClusterServerTools: built with Go once and cached) in a
 * new data directory, so 1.29.1's schema tool sets the databases up; deliveries are opened in
 * several states; the workers and every Temporal process stop; the cluster starts on the new tools
 * on the same data, and its start moves the schema forward with the new schema tool's
 * update-schema (scripts/cluster/schema.ts); the workers start again with the same build (a
 * delivery stays pinned to the build it started on, and the code did not change). Every delivery
 * then ends as it would have, in the state the provider (the simulator) has for it, once each.
 * The old cluster runs on this project's config as it is: of deploy/temporal-dynamic-config.yaml and
 * the cluster's Nexus settings, 1.29.1 only warns of `callback.allowedAddresses` (unknown to it,
 * its `component.callbacks.allowedAddresses` before) and ignores it; no Nexus callback runs here.
 * Without the update-schema step the new processes refuse to start on the old schema ("sql schema
 * version compatibility check failed"), and this test fails at the upgrade.
 */
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { DeliveryOrder, DeliveryState } from '../../contract/delivery-types';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { newestSchemaVersion } from '../../scripts/cluster/schema';
import { ensureClusterServerTools, ensureServerTools, PREVIOUS_TEMPORAL_SERVER_VERSION, TEMPORAL_SERVER_VERSION, type ClusterServerTools } from '../../scripts/cluster/tools';
import { connectClient } from '../../temporal/client-connection';
import { deliveryRequest, destination } from '../fixtures/orders';
import { ClusterStack } from '../helpers/cluster';
import { eventually } from '../helpers/stack';

const stamp = Date.now().toString(36);
/**
 * Three creations per 2 minutes: the first three deliveries are created at once, the fourth waits
 * at the pacing gate for the window's end, which comes after the cluster stopped (the stop comes
 * seconds after the third creation; the upgrade takes about a minute).
 */
const CREATIONS = { limit: 3, windowMs: 120_000 };
const ref = (name: string) => `UPG-${name}-${stamp}`;
/** The deliveries open across the upgrade, by what they are doing when the cluster stops. */
const REF = {
  /** Created, CREATED at the provider: waits for status webhooks. */
  waiting: ref('WAIT'),
  /** Created and PICKED_UP: in the middle of its follow-up. */
  midway: ref('MID'),
  /** Created, cancelled after the upgrade. */
  cancelled: ref('CANCEL'),
  /** Quoted, waits at the pacing gate behind the creation limit. */
  gated: ref('GATE'),
  /** Quoted over its maximum price: waits for a person's approval, given after the upgrade. */
  approval: ref('APPROVE'),
};
const ALL = Object.values(REF);

let oldTools: ClusterServerTools;
let newTools: ClusterServerTools;
let stack: ClusterStack;

beforeAll(async () => {
  const log = (l: string) => process.stderr.write(`${l}\n`);
  // Built with Go the first time (minutes; `.ci/run` builds them before the tests), cached after.
  oldTools = await ensureClusterServerTools(PREVIOUS_TEMPORAL_SERVER_VERSION, log);
  newTools = await ensureServerTools(log);
  stack = await ClusterStack.start({
    workers: 1,
    tools: oldTools,
    // Statuses move only when the test says; the provider's own clock (quotes valid 15 min).
    simulatorEnv: { SIMULATOR_TIME_SCALE: '1' },
    workerEnv: { PROVIDER_RATE_LIMITS: `creations=${CREATIONS.limit}/${CREATIONS.windowMs}ms`, PROVIDER_PACING_MARGIN_MS: '20' },
  });
}, 1_800_000);

afterAll(async () => {
  if (process.env.CLUSTER_TEST_OUTPUT) console.log(stack?.group.tail(400_000));
  await stack?.stop();
}, 120_000);

function order(name: string): DeliveryOrder {
  const { reference_number: _r, ...o } = deliveryRequest({ destinations: [destination(0, { location: { last_name: 'U', company: '', phone: '+4915112345600', address: `Upgradeweg ${stamp}-${name}, 10115 Berlin` } })] });
  return o;
}

async function serverVersion(): Promise<string | undefined> {
  const connection: Connection = await connectClient({ address: stack.cluster.address });
  try {
    return (await connection.workflowService.getSystemInfo({})).serverVersion ?? undefined;
  } finally {
    await connection.close();
  }
}

async function atProvider(reference: string) {
  return (await stack.sim.deliveries()).filter((d) => d.delivery.reference_number === reference);
}

async function status(reference: string, until: (s: DeliveryState) => boolean, what: string): Promise<DeliveryState> {
  return eventually(
    `${reference} ${what}`,
    async () => {
      const s = await stack.client.getStatus(reference);
      return until(s) ? s : undefined;
    },
    120_000,
  );
}

/** Each workflow's run and the events of its history so far (id, type, time), as the old server kept them. */
async function histories(): Promise<Map<string, { runId: string; events: string[] }>> {
  const out = new Map<string, { runId: string; events: string[] }>();
  for (const reference of ALL) {
    const handle = stack.temporal.workflow.getHandle(deliveryWorkflowId(reference));
    const { runId } = await handle.describe();
    const events = ((await handle.fetchHistory()).events ?? []).map((e) => `${String(e.eventId)} ${temporal.api.enums.v1.EventType[e.eventType!]} ${String(e.eventTime?.seconds)}.${e.eventTime?.nanos}`);
    out.set(reference, { runId, events });
  }
  return out;
}

/** The builds that completed a workflow's tasks, and its failed workflow tasks (cause and message). */
async function builds(reference: string): Promise<{ builds: string[]; failed: string[] }> {
  const { EventType, WorkflowTaskFailedCause } = temporal.api.enums.v1;
  const events = (await stack.temporal.workflow.getHandle(deliveryWorkflowId(reference)).fetchHistory()).events ?? [];
  const done = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).map((e) => e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId ?? '(none)');
  const failed = events
    .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)
    .map((e) => `${String(e.eventId)} ${WorkflowTaskFailedCause[e.workflowTaskFailedEventAttributes?.cause ?? 0]}: ${e.workflowTaskFailedEventAttributes?.failure?.message ?? ''}`);
  return { builds: [...new Set(done)], failed };
}

/** Moves a delivery at the provider to DELIVERED, one status at a time, each sent to the bridges as a webhook. */
async function deliver(reference: string): Promise<void> {
  const [d] = await eventually(`${reference} to be created at the provider`, async () => ((await atProvider(reference)).length > 0 ? atProvider(reference) : undefined), 240_000);
  for (let i = 0; i < 20 && (await stack.sim.advance(d!.delivery.id)).status !== 'DELIVERED'; i++);
}

it(`deliveries open on a ${PREVIOUS_TEMPORAL_SERVER_VERSION} cluster end as they would have after its schema is moved to ${TEMPORAL_SERVER_VERSION}'s with the schema tool`, async () => {
  // The old cluster, its databases set up by the old schema tool: each at the newest version of its server's schema files.
  expect(await serverVersion()).toBe(PREVIOUS_TEMPORAL_SERVER_VERSION.slice(1));
  const oldSchema = { temporal: newestSchemaVersion(join(oldTools.postgresSchemaDir, 'temporal', 'versioned')), temporal_visibility: newestSchemaVersion(join(oldTools.postgresSchemaDir, 'visibility', 'versioned')) };
  const newSchema = { temporal: newestSchemaVersion(join(newTools.postgresSchemaDir, 'temporal', 'versioned')), temporal_visibility: newestSchemaVersion(join(newTools.postgresSchemaDir, 'visibility', 'versioned')) };
  expect(stack.cluster.schemaVersions).toEqual(oldSchema);
  expect(newSchema).not.toEqual(oldSchema); // else there would be nothing to upgrade

  // Deliveries in different states when the cluster stops.
  for (const reference of [REF.waiting, REF.midway, REF.cancelled]) await stack.client.startDelivery(order(reference), { reference });
  for (const reference of [REF.waiting, REF.midway, REF.cancelled]) await status(reference, (s) => s.phase === 'following' && s.status === 'CREATED', 'to be created and followed');
  await stack.client.startDelivery(order(REF.gated), { reference: REF.gated });
  await stack.client.startDelivery(order(REF.approval), { reference: REF.approval, maxPrice: { amount: 1, currency: 'EUR' }, approvalTimeoutMs: 30 * 60_000 });
  const [midway] = await atProvider(REF.midway);
  for (const next of ['ASSIGNED', 'UPCOMING', 'PICKED_UP']) await stack.sim.advance(midway!.delivery.id, { status: next });
  await status(REF.midway, (s) => s.status === 'PICKED_UP', 'to follow the provider to PICKED_UP');
  await status(REF.approval, (s) => s.phase === 'awaiting_approval', 'to wait for approval');
  const gated = await status(REF.gated, (s) => s.phase === 'creating', 'to wait at the gate');
  expect({ phase: gated.phase, atProvider: (await atProvider(REF.gated)).length }).toEqual({ phase: 'creating', atProvider: 0 });
  const before = await histories();

  // The upgrade: workers and Temporal stop; Temporal starts on the new tools on the same data; the workers start again.
  const upgradeStarted = Date.now();
  const { before: schemaBefore, after: schemaAfter } = await stack.upgradeTemporal(newTools);
  process.stdout.write(`upgrade of the cluster (stop, update-schema, start, workers): ${((Date.now() - upgradeStarted) / 1000).toFixed(1)} s; schema ${JSON.stringify(schemaBefore)} -> ${JSON.stringify(schemaAfter)}\n`);
  expect({ before: schemaBefore, after: schemaAfter }).toEqual({ before: oldSchema, after: newSchema });
  expect(await serverVersion()).toBe(TEMPORAL_SERVER_VERSION.slice(1));
  // The schema tool upgraded the databases in place; nothing was created anew.
  const schemaLines = stack.group.output.split('\n').filter((l) => l.includes('[schema]'));
  expect(schemaLines.filter((l) => /creating/.test(l))).toHaveLength(2); // the old cluster's first start only
  expect(schemaLines.filter((l) => /upgrading/.test(l))).toEqual([
    `[setup] [schema] upgrading temporal from ${oldSchema.temporal} to ${newSchema.temporal}`,
    `[setup] [schema] upgrading temporal_visibility from ${oldSchema.temporal_visibility} to ${newSchema.temporal_visibility}`,
  ]);

  // The new server started on the upgraded databases as on new ones: no error line, no stack trace (as test/cluster/cluster.test.ts
  // asks of a first start; PostgreSQL's ERROR lines are statements Temporal expects to fail), but one kind: the frontend
  // refuses a call that comes between its listening and its being healthy ("Frontend is not healthy yet", Unavailable: the
  // clients that stayed up across the upgrade, the bridges and this test's, and the start's own readiness probe all call it
  // then, and they try again) and logs each refusal as an error. The workers' version is still the deployment's current
  // one: the versioning data came across.
  const restart = stack.group.output.slice(stack.group.output.indexOf(`[upgrade] starting Temporal ${newTools.version}`));
  const startLines = restart.slice(0, restart.indexOf('[upgrade] workers: version')).split('\n');
  const notHealthyYet = (l: string) => l.startsWith('[frontend] ') && l.includes('"error":"Frontend is not healthy yet"');
  expect(startLines.filter((l) => !notHealthyYet(l) && (l.startsWith('[postgresql] ') ? /\b(FATAL|PANIC):/.test(l) : /"level":"(error|dpanic|panic|fatal)"|"stacktrace"|^\[stack\]/.test(l)))).toEqual([]);
  expect(restart).toMatch(/\[upgrade\] workers: version \S+, current\n/);

  // Every workflow is still there, the same run, its history as the old server wrote it, and still listed (visibility came across).
  const after = await histories();
  for (const reference of ALL) {
    const [b, a] = [before.get(reference)!, after.get(reference)!];
    expect({ reference, runId: a.runId, history: a.events.slice(0, b.events.length) }).toEqual({ reference, runId: b.runId, history: b.events });
  }
  const listed = await stack.client.list({ limit: 100 });
  expect(ALL.map((r) => listed.find((d) => d.reference === r)?.workflowStatus)).toEqual(ALL.map(() => 'RUNNING'));

  // They carry on: webhooks move the followed ones, the approval and the cancellation go through, the gate lets the waiting one through.
  await stack.client.approveQuote(REF.approval);
  const cancelled = await stack.client.cancelDelivery(REF.cancelled);
  expect({ phase: cancelled.phase, status: cancelled.status }).toEqual({ phase: 'ended', status: 'CANCELED' });
  await Promise.all([REF.waiting, REF.midway, REF.gated, REF.approval].map(deliver));
  const results = new Map(await Promise.all(ALL.map(async (r) => [r, await stack.client.result(r)] as const)));
  expect(ALL.map((r) => `${r} ${results.get(r)!.phase} ${results.get(r)!.status}`)).toEqual(ALL.map((r) => `${r} ended ${r === REF.cancelled ? 'CANCELED' : 'DELIVERED'}`));

  // The provider has each once, in the state its workflow ended with.
  const provider = (await stack.sim.deliveries()).filter((d) => ALL.includes(d.delivery.reference_number ?? ''));
  expect(ALL.map((r) => provider.filter((d) => d.delivery.reference_number === r).map((d) => `${d.delivery.id} ${d.delivery.status}`))).toEqual(
    ALL.map((r) => [`${results.get(r)!.deliveryId} ${results.get(r)!.status}`]),
  );
  // Each on the build it started on, before and after, and no workflow task failed, but for UnhandledCommand: the server's
  // refusal of a task's completion when a signal came in while it ran (webhooks close together), answered by the next task.
  const build = stack.env.WORKER_BUILD_ID!;
  const ran = (await Promise.all(ALL.map(builds))).map((r) => ({ ...r, failed: r.failed.filter((f) => !/ WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND: /.test(f)) }));
  expect(ran).toEqual(ALL.map(() => ({ builds: [build], failed: [] })));
}, 900_000);
