/** The notify benchmark's floor, what Temporal alone costs to pass one change on: docs/benchmark-methods.md, "Notifications". */
import { condition, defineSignal, getExternalWorkflowHandle, proxyActivities, setHandler } from '@temporalio/workflow';

export const FLOOR_TASK_QUEUE = 'bench-floor';

export interface FloorActivities {
  told(change: unknown): Promise<void>;
}

const { told } = proxyActivities<FloorActivities>({ startToCloseTimeout: '20 seconds' });

export async function relay(orderWorkflowId?: string): Promise<void> {
  const pending: unknown[] = [];
  setHandler(defineSignal<[unknown]>('changed'), (change) => void pending.push(change));
  for (;;) {
    await condition(() => pending.length > 0);
    const change = pending.shift();
    if (orderWorkflowId) await getExternalWorkflowHandle(orderWorkflowId).signal('deliveryChanged', change);
    else await told(change);
  }
}
