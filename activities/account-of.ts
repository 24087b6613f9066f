/**
 * The courier account an activity works for, from where it comes from: a delivery's workflow ID
 * names its account (its start check made sure of it), and so does a pacing gate's. Nothing in
 * an activity's input has to carry it, so inputs (and workflows' histories) stay as they were;
 * only a workflow whose ID says nothing (a quote without a delivery) passes it explicitly.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import { UNKNOWN_ACCOUNT } from '../contract/failures';
import { workflowTaskQueueOf } from '../contract/task-queues';
import { accountOfWorkflowId } from '../contract/workflow-ids';

/**
 * `explicit` wins; then the workflow's ID (a delivery's, or a gate's on `deliveryQueue`). An ID
 * of no account is a non-retryable failure naming it: a caller that left the account out, not a
 * call to make with some other account's key.
 */
export function activityAccount(explicit?: string, deliveryQueue?: string): string {
  if (explicit !== undefined) return explicit;
  const info = Context.current().info;
  try {
    return accountOfWorkflowId(info.workflowExecution?.workflowId ?? '', deliveryQueue ?? workflowTaskQueueOf(info.taskQueue));
  } catch (err) {
    throw ApplicationFailure.create({ type: UNKNOWN_ACCOUNT, message: (err as Error).message, nonRetryable: true });
  }
}

/**
 * A failure naming the account (never its key): retryable for a running delivery's calls (the
 * operator may add the account back), final (`retryable: false`) before anything started.
 */
export function unknownAccount(account: string, retryable = true): ApplicationFailure {
  // Benign: the caller is told (a refused start or quote) and a reload logs a removed account once; no warning each attempt.
  return ApplicationFailure.create({ type: UNKNOWN_ACCOUNT, message: `no courier account ${account} in this worker's registry (DELIVERY_ACCOUNTS_FILE)`, nonRetryable: !retryable, category: ApplicationFailureCategory.BENIGN });
}
