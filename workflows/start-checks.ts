/**
 * What the delivery workflow does first, whoever started it (the client library, the Temporal
 * CLI, a Go or Java order system): check its input and workflow ID, and set the search
 * attributes that make it findable. Within the first workflow task, before any provider call or
 * pacing request: a bad start fails the workflow at once with the non-retryable
 * `InvalidDeliveryInput` failure naming each bad field (a thrown Error would fail the workflow
 * task instead, and be retried forever).
 *
 * The contract check runs as a local activity (activities/start-checks.ts says why); the rest is
 * plain workflow code.
 */
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import { ApplicationFailure, proxyLocalActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { StartCheckActivities } from '../activities/start-checks';
import type { FieldIssue } from '../provider/schemas';
import { describeIssues } from '../provider/validation';
import { WORKFLOW_FAILURE_TYPES } from './failures';
import type { DeliveryWorkflowInput } from './messages';
import { DestinationCount, IsFood, OrderReference } from './search-attributes';
import { deliveryWorkflowId } from './task-queues';

const checks = proxyLocalActivities<StartCheckActivities>({ startToCloseTimeout: '10 seconds', summary: 'check the start input' });

/** Throws the InvalidDeliveryInput failure unless the input and workflow ID are right; then sets our search attributes. */
export async function startChecks(input: DeliveryWorkflowInput): Promise<void> {
  // A run continued as new carries the state its previous run checked and built.
  if (workflowInfo().continuedFromExecutionRunId !== undefined) return;
  const issues: FieldIssue[] = await checks.checkDeliveryInput(input);
  const given = (input as Partial<DeliveryWorkflowInput> | null | undefined)?.reference;
  const reference = typeof given === 'string' && !issues.some((i) => i.field === 'reference') ? given : undefined;
  const expectedId = reference === undefined ? undefined : deliveryWorkflowId(reference);
  if (expectedId !== undefined && workflowInfo().workflowId !== expectedId) {
    issues.push({ field: 'workflowId', message: `must be ${JSON.stringify(expectedId)} (delivery:<reference>), so that webhooks and clients find the delivery` });
  }
  if (issues.length > 0) {
    // A refused start with a sound reference can still be found by it.
    if (expectedId !== undefined && workflowInfo().workflowId === expectedId) setSearchAttributes([{ key: OrderReference, value: reference! }]);
    throw ApplicationFailure.create({
      type: WORKFLOW_FAILURE_TYPES.invalidInput,
      message: `invalid delivery input, nothing was quoted or created: ${describeIssues(issues)}`,
      nonRetryable: true,
      details: [issues],
    });
  }
  setSearchAttributes([
    { key: OrderReference, value: input.reference },
    { key: IsFood, value: input.order.is_food },
    { key: DestinationCount, value: input.order.destinations.length },
  ]);
}

/** Upserts only what the starter has not set already (the client library sets them at start, so they are visible before this task). */
function setSearchAttributes(pairs: SearchAttributeUpdatePair[]): void {
  const current = workflowInfo().typedSearchAttributes;
  const missing = pairs.filter((p) => current.get(p.key) !== p.value);
  if (missing.length > 0) upsertSearchAttributes(missing);
}
