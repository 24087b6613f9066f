/**
 * Task queues. Workflows run on one queue; provider calls run on one queue per rate-limited
 * call family, each with its own rate limit. The activity queues are derived from the workflow's
 * queue, so a second deployment (or a test) on another queue never shares limits by accident.
 */
import type { Priority } from '@temporalio/common';
import type { CallFamily } from '../provider/limits';

export const DEFAULT_TASK_QUEUE = 'deliveries';

export function providerTaskQueues(workflowTaskQueue: string): Record<CallFamily, string> {
  return {
    creations: `${workflowTaskQueue}.provider-creations`,
    quotes: `${workflowTaskQueue}.provider-quotes`,
    other: `${workflowTaskQueue}.provider-calls`,
  };
}

/** The pacing gate runs on a queue of its own: its workflow tasks must not wait behind a backlog of delivery workflow tasks. */
export function gateTaskQueue(workflowTaskQueue: string): string {
  return `${workflowTaskQueue}.pacing-gate`;
}

/**
 * Food first, from the first task on: a food delivery's workflow (and so its workflow and
 * activity tasks) carries a higher Temporal priority than others (lower key first; the server's
 * default key is 3 of 5). When a burst of orders backs up in the delivery task queue, food
 * workflows reach the pacing gate first and get the first window's slots, where the gate's own
 * food-first queue order cannot help because nothing is queued there yet. Needs a
 * server with the priority matcher (`matching.useNewMatcher`, docs/operations.md); a server
 * without it ignores the key.
 */
export function deliveryPriority(isFood: boolean): Priority {
  return { priorityKey: isFood ? 1 : 3 };
}

/** `delivery:<reference>`: deterministic, so the bridge and operators can address it directly. */
export function deliveryWorkflowId(reference: string): string {
  return `delivery:${reference}`;
}

export function referenceFromWorkflowId(workflowId: string): string | undefined {
  return workflowId.startsWith('delivery:') ? workflowId.slice('delivery:'.length) : undefined;
}
