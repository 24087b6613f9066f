/**
 * Issue #18: a delivery started by name with plain JSON, as any Temporal client in any language
 * would (here the Temporal CLI), is checked, findable and run by the workflow itself. Everything
 * real: the CLI binary, the dev server, workers, the simulator, signed webhooks and the bridge.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { deliveryRequest } from '../fixtures/orders';
import { driveToDelivered, eventually, startStack, type Stack } from '../helpers/stack';
import { testServerAddress } from '../helpers/temporal';
import { unreplayable } from '../helpers/histories';

const run = promisify(execFile);
let stack: Stack;
let dir: string;
let seq = 0;
/** Every workflow this file started, for the replay check at the end. */
const startedIds: string[] = [];

beforeAll(async () => {
  stack = await startStack();
  dir = mkdtempSync(join(tmpdir(), 'any-client-'));
});
afterAll(() => stack.stop());

const reference = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;
function order(destinations: number, isFood: boolean) {
  const { reference_number: _r, ...o } = deliveryRequest({ is_food: isFood }, destinations);
  return o;
}

/** `temporal workflow start --type delivery ... --input-file start.json`, as the issue shows it. */
async function cliStart(workflowId: string, input: unknown): Promise<void> {
  const cli = process.env.TEMPORAL_CLI_PATH;
  if (!cli) throw new Error('TEMPORAL_CLI_PATH is not set: run this test through jest (the `temporal` project sets it)');
  const file = join(dir, `${workflowId.replace(/[^A-Za-z0-9-]/g, '_')}.json`);
  writeFileSync(file, JSON.stringify(input));
  startedIds.push(workflowId);
  const { address, namespace } = testServerAddress();
  await run(cli, ['workflow', 'start', '--address', address, '--namespace', namespace, '--type', 'delivery', '--task-queue', stack.workers.taskQueue, '--workflow-id', workflowId, '--input-file', file], {
    timeout: 30_000,
  });
}

/** The failure a refused start ends with, and the events of its history. */
async function refusal(workflowId: string): Promise<{ failure: ApplicationFailure; events: string[] }> {
  const handle = stack.temporal.workflow.getHandle(workflowId);
  const err = await handle.result().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const failure = (err as WorkflowFailedError).cause;
  expect(failure).toBeInstanceOf(ApplicationFailure);
  const history = await handle.fetchHistory();
  const events = (history.events ?? []).map((e) => (temporal.api.enums.v1.EventType[e.eventType ?? 0] ?? String(e.eventType)).replace('EVENT_TYPE_', ''));
  return { failure: failure as ApplicationFailure, events };
}


describe('a delivery started with plain JSON from the Temporal CLI', () => {
  it('refuses an invalid order in its first workflow task, naming each bad field, with no call to the provider', async () => {
    const callsBefore = stack.sim.requestLog().length;
    const ref = reference('CLI-BAD');
    await cliStart(`delivery:${ref}`, { reference: ref, order: { destinations: [] } });
    const { failure, events } = await refusal(`delivery:${ref}`);

    expect(failure.type).toBe('InvalidDeliveryInput');
    expect(failure.nonRetryable).toBe(true);
    for (const field of ['order.desired_pickup_time', 'order.pickup_location', 'order.destinations', 'order.is_food']) expect(failure.message).toContain(`${field}: `);
    expect(failure.message).toContain('order.destinations: must have at least one destination');
    expect(failure.details?.[0]).toEqual(expect.arrayContaining([{ field: 'order.destinations', message: 'must have at least one destination' }]));
    // One workflow task: the check's marker, then the failure; no activity, no retried task.
    expect(events.filter((e) => e === 'WORKFLOW_TASK_COMPLETED')).toHaveLength(1);
    expect(events).not.toContain('ACTIVITY_TASK_SCHEDULED');
    expect(events).not.toContain('WORKFLOW_TASK_FAILED');
    expect(events.at(-1)).toBe('WORKFLOW_EXECUTION_FAILED');
    expect(stack.sim.requestLog().length).toBe(callsBefore);
    // The status query says so too (other languages poll it).
    const state = await stack.deliveries.getStatus(ref);
    expect(state).toMatchObject({ reference: ref, phase: 'ended', destinations: [] });
    expect(state.timeline.at(-1)?.note).toContain('order.destinations: must have at least one destination');

    // A refused start with a sound reference is still found by it.
    await eventually('the refused start by OrderReference', async () => {
      for await (const wf of stack.temporal.workflow.list({ query: `OrderReference = '${ref}'` })) if (wf.workflowId === `delivery:${ref}`) return wf;
      return undefined;
    });
  });

  it('refuses a workflow ID that does not match the reference the same way', async () => {
    const callsBefore = stack.sim.requestLog().length;
    const ref = reference('CLI-ID');
    const workflowId = `order-${ref}`;
    await cliStart(workflowId, { reference: ref, order: order(1, false) });
    const { failure, events } = await refusal(workflowId);

    expect(failure.type).toBe('InvalidDeliveryInput');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain(`workflowId: must be "delivery:${ref}"`);
    expect(failure.details?.[0]).toEqual([expect.objectContaining({ field: 'workflowId' })]);
    expect(events.filter((e) => e === 'WORKFLOW_TASK_COMPLETED')).toHaveLength(1);
    expect(events).not.toContain('ACTIVITY_TASK_SCHEDULED');
    expect(stack.sim.requestLog().length).toBe(callsBefore);
  });

  it('refuses input that is not an object, and a start that carries internal state', async () => {
    const notObject = reference('CLI-STR');
    await cliStart(`delivery:${notObject}`, 'just a string');
    expect((await refusal(`delivery:${notObject}`)).failure.message).toMatch(/input: Invalid input: expected object/);

    const withResume = reference('CLI-RESUME');
    await cliStart(`delivery:${withResume}`, { reference: withResume, order: order(1, false), resume: { tracker: {} } });
    const { failure } = await refusal(`delivery:${withResume}`);
    expect(failure.type).toBe('InvalidDeliveryInput');
    expect(failure.message).toMatch(/resume/);
  });

  it('is found by OrderReference within seconds, with IsFood and DestinationCount set, and ends DELIVERED', async () => {
    const ref = reference('CLI-START');
    const workflowId = `delivery:${ref}`;
    const startedAt = Date.now();
    await cliStart(workflowId, { reference: ref, order: order(3, true), followUp: { endGraceMs: 0 } });

    const found = await eventually(
      `${workflowId} by OrderReference`,
      async () => {
        for await (const wf of stack.temporal.workflow.list({ query: `OrderReference = '${ref}' AND IsFood = true AND DestinationCount = 3` })) if (wf.workflowId === workflowId) return wf;
        return undefined;
      },
      10_000,
    );
    console.log(`any-client: found by OrderReference ${Date.now() - startedAt} ms after the CLI start`);
    expect(found.typedSearchAttributes.getAll().map((p) => p.key.name)).toEqual(expect.arrayContaining(['OrderReference', 'IsFood', 'DestinationCount']));

    const created = await eventually(`${ref} to be created`, async () => {
      const s = await stack.deliveries.getStatus(ref);
      return s.phase === 'following' ? s : undefined;
    });
    driveToDelivered(stack.sim, created.deliveryId!);
    const result = await stack.deliveries.result(ref);
    expect(result.status).toBe('DELIVERED');
    expect(result.isFood).toBe(true);
    expect(result.destinations.map((d) => d.status)).toEqual(['DELIVERED', 'DELIVERED', 'DELIVERED']);
    expect(stack.sim.deliveries().filter((d) => d.delivery.reference_number === ref)).toHaveLength(1);
  });

  it('leaves histories that replay with the workflow code, refusals included', async () => {
    // The check's answer is a local activity's marker in the first task, taken after that task's
    // patch decisions: a cache miss or a query on a closed workflow replays it without divergence.
    expect(await unreplayable(startedIds.map((id) => stack.temporal.workflow.getHandle(id)))).toEqual([]);
    expect(startedIds.length).toBeGreaterThanOrEqual(5);
  });
});
