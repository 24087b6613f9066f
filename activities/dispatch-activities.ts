/**
 * Activities of the dispatch path, run as local activities by the delivery workflow: the
 * worker's pacing settings (recorded once in the history, so configuration stays out of
 * workflow inputs and replays see the same values), and a slot request that starts the family's
 * limiter workflow if it is not running yet (signal-with-start).
 */
import type { Client } from '@temporalio/client';
import type { CallFamily } from '../provider/limits';
import type { DispatchSettings } from '../worker/dispatch-config';
import { limiterWorkflowId, slotRequestedSignal, type LimiterInput } from '../workflows/limiter-messages';
import { limiterTaskQueue } from '../workflows/task-queues';
import type { LimiterConfig, SlotRequest } from '../workflows/slot-window';

/** A grant not released within this long (after the call's own timeout) is taken back. */
const LEASE_EXTRA_MS = 60_000;

export interface SlotRequestInput extends SlotRequest {
  family: CallFamily;
  /** The workflows' task queue: the limiter is named after it and runs on its limiter queue. */
  taskQueue: string;
}

export function limiterConfig(settings: DispatchSettings, family: CallFamily): LimiterConfig {
  return {
    ...settings.limits[family],
    marginMs: settings.marginMs,
    leaseMs: settings.callTimeoutMs + (settings.leadMs ?? 0) + LEASE_EXTRA_MS,
    quoteMinRemainingMs: settings.quoteMinRemainingMs,
    leadMs: settings.leadMs ?? 0,
  };
}

export function createDispatchActivities(deps: { client: Client; settings: DispatchSettings }) {
  return {
    async dispatchSettings(): Promise<DispatchSettings> {
      return deps.settings;
    },

    async requestProviderSlot({ family, taskQueue, ...request }: SlotRequestInput): Promise<void> {
      const config = limiterConfig(deps.settings, family);
      const input: LimiterInput = { family, config };
      await deps.client.workflow.signalWithStart('providerLimiter', {
        workflowId: limiterWorkflowId(taskQueue, family),
        taskQueue: limiterTaskQueue(taskQueue),
        args: [input],
        signal: slotRequestedSignal,
        signalArgs: [{ ...request, config }],
        staticSummary: `provider limiter · ${family} · ${config.limit} per ${config.windowMs / 1000} s`,
      });
    },
  };
}

export type DispatchActivities = ReturnType<typeof createDispatchActivities>;
