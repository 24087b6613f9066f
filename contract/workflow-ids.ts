/** Workflow IDs: deterministic, so the bridge, operators and workers address a workflow without looking it up. */

/** `delivery:<reference>`: deterministic, so the bridge and operators can address it directly. */
export function deliveryWorkflowId(reference: string): string {
  return `delivery:${reference}`;
}

export function referenceFromWorkflowId(workflowId: string): string | undefined {
  return workflowId.startsWith('delivery:') ? workflowId.slice('delivery:'.length) : undefined;
}

/** One gate per task queue: a deployment with its own API key has its own queue. */
export function gateWorkflowId(taskQueue: string): string {
  return `pacing-gate:${taskQueue}`;
}
