/**
 * The courier account an activity works for, from where it comes from: a delivery's workflow ID
 * names its account (its start check made sure of it), and so does a pacing gate's. Nothing in
 * an activity's input has to carry it, so inputs (and workflows' histories) stay as they were;
 * only a workflow whose ID says nothing (a quote without a delivery) passes it explicitly.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { DEFAULT_ACCOUNT } from '../contract/accounts';
import { UNKNOWN_ACCOUNT } from '../contract/failures';
import { workflowTaskQueueOf } from '../contract/task-queues';
import { parseDeliveryWorkflowId, parseGateWorkflowId } from '../contract/workflow-ids';


/** `explicit` wins; then the workflow's ID (a delivery's, or a gate's on `deliveryQueue`); then `default`. */
export function activityAccount(explicit?: string, deliveryQueue?: string): string {
  if (explicit !== undefined) return explicit;
  const info = Context.current().info;
  const workflowId = info.workflowExecution?.workflowId;
  if (workflowId === undefined) return DEFAULT_ACCOUNT;
  const delivery = parseDeliveryWorkflowId(workflowId);
  if (delivery) return delivery.account;
  const queue = deliveryQueue ?? workflowTaskQueueOf(info.taskQueue);
  return (queue !== undefined ? parseGateWorkflowId(workflowId, queue) : undefined) ?? DEFAULT_ACCOUNT;
}

/**
 * A failure naming the account (never its key): retryable for a running delivery's calls (the
 * operator may add the account back), final (`retryable: false`) before anything started.
 */
export function unknownAccount(account: string, retryable = true): ApplicationFailure {
  return ApplicationFailure.create({ type: UNKNOWN_ACCOUNT, message: `no courier account ${account} in this worker's registry (DELIVERY_ACCOUNTS_FILE)`, nonRetryable: !retryable });
}
