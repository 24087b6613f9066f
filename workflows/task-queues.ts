/**
 * Task queues. Workflows run on one queue; provider calls run on one queue per rate-limited
 * call family, each with its own rate limit. The activity queues are derived from the workflow's
 * queue, so a second deployment (or a test) on another queue never shares limits by accident.
 */
import type { CallFamily } from '../provider/limits';

export const DEFAULT_TASK_QUEUE = 'deliveries';

export function providerTaskQueues(workflowTaskQueue: string): Record<CallFamily, string> {
  return {
    creations: `${workflowTaskQueue}.provider-creations`,
    quotes: `${workflowTaskQueue}.provider-quotes`,
    other: `${workflowTaskQueue}.provider-calls`,
  };
}

/**
 * The limiter workflows run on a queue of their own: every order passes through them, so their
 * workflow tasks must not wait behind a backlog of delivery workflow tasks.
 */
export function limiterTaskQueue(workflowTaskQueue: string): string {
  return `${workflowTaskQueue}.provider-limiter`;
}

/** `delivery:<reference>`: deterministic, so the bridge and operators can address it directly. */
export function deliveryWorkflowId(reference: string): string {
  return `delivery:${reference}`;
}

export function referenceFromWorkflowId(workflowId: string): string | undefined {
  return workflowId.startsWith('delivery:') ? workflowId.slice('delivery:'.length) : undefined;
}
