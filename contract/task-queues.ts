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

/** The deliveries' queue a provider-call queue belongs to; undefined for another queue. */
export function workflowTaskQueueOf(providerTaskQueue: string): string | undefined {
  for (const suffix of Object.values(providerTaskQueues(''))) if (providerTaskQueue.endsWith(suffix)) return providerTaskQueue.slice(0, -suffix.length);
  return undefined;
}

/** The pacing gate runs on a queue of its own: its workflow tasks must not wait behind a backlog of delivery workflow tasks. */
export function gateTaskQueue(workflowTaskQueue: string): string {
  return `${workflowTaskQueue}.pacing-gate`;
}

/** Notification webhooks run on a queue of their own: a slow endpoint never holds a provider call's slot. */
export function notificationsTaskQueue(workflowTaskQueue: string): string {
  return `${workflowTaskQueue}.notifications`;
}
