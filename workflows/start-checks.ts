/**
 * What the delivery workflow does first, whoever started it (the client library, the Temporal
 * CLI, a Go or Java order system): check its input, its account (one the worker's registry has)
 * and its workflow ID (deliveryWorkflowId(reference, account)). Within the first workflow
 * task, before any provider call or
 * pacing request: a bad start fails the workflow at once with the non-retryable
 * `InvalidDeliveryInput` failure naming each bad field (a thrown Error would fail the workflow
 * task instead, and be retried forever). A sound start's search attributes go out later, with its
 * first upsert (workflows/search-attributes.ts); a refused one sets OrderReference at once.
 *
 * The contract check runs as a local activity (activities/start-checks.ts says why). It is
 * started at the top of the workflow, runs while the handlers are set up, and is awaited before
 * the first provider call or pacing request.
 *
 * The `startChecked` update answers with the check's outcome: the client library starts every
 * delivery with it (Update-with-Start), so a refused start is refused to its caller within the
 * start call (docs/architecture.md, "Refused before it starts"). A refused workflow waits for that
 * answer to go out before it fails.
 */
import { allHandlersFinished, ApplicationFailure, CancellationScope, condition, proxyLocalActivities, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { StartCheckActivities } from '../activities/start-checks';
import type { FieldIssue } from '../provider/schemas';
import { describeIssues } from '../provider/validation';
import { WORKFLOW_FAILURE_TYPES } from '../contract/failures';
import { startCheckedUpdate, statusQuery } from '../contract/delivery-messages';
import { type DeliveryState, type DeliveryWorkflowInput } from '../contract/delivery-types';
import { OrderReference } from '../contract/search-attributes';
import { deliveryWorkflowId, startAccount } from '../contract/workflow-ids';

const checks = proxyLocalActivities<StartCheckActivities>({ startToCloseTimeout: '10 seconds', summary: 'check the start input' });

export interface StartChecks {
  /**
   * False when the workflow's own code could not even read the input (not an object, no order
   * object, or the internal `resume` state on a fresh start): await `passed` before anything else.
   */
  readable: boolean;
  /** Resolves when the start is sound; rejects with the InvalidDeliveryInput failure otherwise. Await it before any provider call. */
  passed: Promise<void>;
}

export function startChecks(input: DeliveryWorkflowInput): StartChecks {
  // A run continued as new carries the state its previous run checked and built.
  if (workflowInfo().continuedFromExecutionRunId !== undefined) {
    setHandler(startCheckedUpdate, () => undefined);
    return { readable: true, passed: Promise.resolve() };
  }
  // Checked even when cancelled before its first task (a local activity: cheap).
  const checking = CancellationScope.nonCancellable(() => check(input));
  // Set before the workflow's first await: the update comes in the first workflow task.
  setHandler(startCheckedUpdate, () => checking);
  const passed = CancellationScope.nonCancellable(() =>
    checking.catch(async (err: unknown) => {
      await condition(allHandlersFinished); // the refusal reaches the update's caller before the workflow fails
      throw err;
    }),
  );
  passed.catch(() => undefined); // awaited later in this task: not an unhandled rejection meanwhile
  const given = input as unknown as Record<string, unknown> | null;
  return { readable: isObject(given) && isObject(given.order) && given.resume === undefined, passed };
}

async function check(input: DeliveryWorkflowInput): Promise<void> {
  const issues: FieldIssue[] = await checks.checkDeliveryInput(input);
  const given = (input as Partial<DeliveryWorkflowInput> | null | undefined)?.reference;
  const account = startAccount((input as Partial<DeliveryWorkflowInput> | null | undefined) ?? {});
  const reference = typeof given === 'string' && !issues.some((i) => i.field === 'reference' || i.field === 'account') ? given : undefined;
  const expectedId = reference === undefined ? undefined : deliveryWorkflowId(reference, account);
  if (expectedId !== undefined && workflowInfo().workflowId !== expectedId) {
    issues.push({ field: 'workflowId', message: `must be ${JSON.stringify(expectedId)} (deliveryWorkflowId of its reference and account), so that webhooks and clients find the delivery` });
  }
  if (issues.length > 0) {
    const message = `invalid delivery input, nothing was quoted or created: ${describeIssues(issues)}`;
    // A refused start with a sound reference can still be found by it, and `status` says why it ended.
    if (expectedId !== undefined && workflowInfo().workflowId === expectedId) upsertSearchAttributes([{ key: OrderReference, value: reference! }]);
    const ended: DeliveryState = { reference: String(given ?? ''), phase: 'ended', destinations: [], isFood: false, timeline: [{ at: new Date().toISOString(), subject: 'workflow', source: 'workflow', note: message }] };
    setHandler(statusQuery, () => ended);
    throw ApplicationFailure.create({ type: WORKFLOW_FAILURE_TYPES.invalidInput, message, nonRetryable: true, details: [issues] });
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
