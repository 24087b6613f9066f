/**
 * Activities of the dispatch path, run as local activities: for the delivery workflow, the
 * worker's pacing settings (recorded once in the history, so configuration stays out of
 * workflow inputs and replays see the same values), a slot request that starts the family's
 * limiter workflow if it is not running yet (signal-with-start) and a slot's release; for the
 * limiter, the delivery of its answers. All of them signal through the worker's own client.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { CallFamily } from '../provider/limits';
import type { DispatchSettings } from '../worker/dispatch-config';
import {
  LIMITED_FAMILIES,
  limiterWorkflowId,
  providerBackSignal,
  requesterFromId,
  siblingLimiterIds,
  slotAnsweredSignal,
  slotReleasedSignal,
  slotRequestedSignal,
  type LimiterInput,
} from '../workflows/limiter-messages';
import { limiterTaskQueue } from '../workflows/task-queues';
import type { LimiterConfig, SlotAnswer, SlotRelease, SlotRequest } from '../workflows/slot-window';

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

/** How a family's limiter is started: the same by the worker at its start and by a slot request. */
function limiterStart(taskQueue: string, family: CallFamily, config: LimiterConfig) {
  const input: LimiterInput = { family, config };
  return {
    workflowId: limiterWorkflowId(taskQueue, family),
    taskQueue: limiterTaskQueue(taskQueue),
    args: [input] as [LimiterInput],
    staticSummary: `provider limiter · ${family} · ${config.limit} per ${config.windowMs / 1000} s`,
  };
}

/**
 * Starts the creation and quote limiters of a task queue unless they run already. Called when a
 * worker starts: a burst of orders then finds its limiters running and warm in a worker's cache
 * instead of the first order's request creating them (measured: their first workflow task came
 * 3 s later on two cores, while the burst's starts filled the server; docs/benchmarks.md).
 */
export async function startProviderLimiters(client: Client, taskQueue: string, settings: DispatchSettings): Promise<void> {
  await Promise.all(
    LIMITED_FAMILIES.map((family) =>
      client.workflow.start('providerLimiter', { ...limiterStart(taskQueue, family, limiterConfig(settings, family)), workflowIdConflictPolicy: 'USE_EXISTING' }),
    ),
  );
}

export function createDispatchActivities(deps: { client: Client; settings: DispatchSettings }) {
  return {
    async dispatchSettings(): Promise<DispatchSettings> {
      return deps.settings;
    },

    async requestProviderSlot({ family, taskQueue, ...request }: SlotRequestInput): Promise<void> {
      const config = limiterConfig(deps.settings, family);
      await deps.client.workflow.signalWithStart('providerLimiter', { ...limiterStart(taskQueue, family, config), signal: slotRequestedSignal, signalArgs: [{ ...request, config }] });
    },

    /**
     * Tells the limiter a slot's call is over. An activity rather than the workflow's signal
     * command for the reason given at sendSlotAnswers: a command costs the delivery workflow one
     * more workflow task per call. A limiter that is gone (terminated by an operator) took the
     * slot's lease with it.
     */
    async releaseProviderSlot({ family, taskQueue, release }: { family: CallFamily; taskQueue: string; release: SlotRelease }): Promise<void> {
      try {
        await deps.client.workflow.getHandle(limiterWorkflowId(taskQueue, family)).signal(slotReleasedSignal, release);
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      }
    },

    /**
     * Tells the other families' limiters that the provider answered again after an outage. A
     * limiter that is not running has no pause to end.
     */
    async announceProviderBack({ limiterId, family }: { limiterId: string; family: CallFamily }): Promise<void> {
      await Promise.all(
        siblingLimiterIds(limiterId).map(async (id) => {
          try {
            await deps.client.workflow.getHandle(id).signal(providerBackSignal, { family });
          } catch (err) {
            if (!(err instanceof WorkflowNotFoundError)) throw err;
          }
        }),
      );
    },

    /**
     * Sends the limiter's answers to their workflows, all at once; returns the requests whose
     * workflow is gone (nobody will use those slots). Why an activity and not the workflow's own
     * signal command: each signal command also writes its completion into the limiter's history
     * and wakes the limiter for another workflow task, so a burst of 100 grants took the server
     * 14 s to deliver on two cores (docs/benchmarks.md); a client signal is one write, to the
     * receiver. Any other failure fails the activity, whose retry sends the batch again: a
     * repeated answer is for a request its workflow has had answered, and is never read.
     */
    async sendSlotAnswers(answers: SlotAnswer[]): Promise<string[]> {
      const gone: string[] = [];
      await Promise.all(
        answers.map(async (a) => {
          try {
            await deps.client.workflow.getHandle(requesterFromId(a.requestId)).signal(slotAnsweredSignal, a);
          } catch (err) {
            if (!(err instanceof WorkflowNotFoundError)) throw err;
            gone.push(a.requestId);
          }
        }),
      );
      return gone;
    },
  };
}

export type DispatchActivities = ReturnType<typeof createDispatchActivities>;
