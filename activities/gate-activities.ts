/**
 * The pacing gate's messages (workflows/gate.ts), sent by local activities through the worker's
 * own client: a signal command would cost the sending workflow one more workflow task. The asks
 * of one worker process go to the gate together (activities/batched-sends.ts), and the gate's
 * answers go out in one batch (a creation's answer goes with the creation: createInGate).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { gateAnswerSignal, gateConfigureSignal, gateRequestSignal, gateWithdrawSignal, type Addressed, type GateConfig, type GateRequest, type PacingSettings } from '../contract/gate-messages';
import { gateWorkflowId } from '../contract/workflow-ids';
import { gateTaskQueue } from '../contract/task-queues';
import { batchedSends, type BatchLimits } from './batched-sends';
import { activeTraceparent } from '../tracing/spans';

/**
 * An ask that finds no other on its way waits this long for the asks of orders started with it:
 * each signal the gate receives is a billed action, and orders come in bursts. Nothing next to the
 * provider's pacing (a creation slot is 3 s at 20 a minute).
 */
const ASK_LINGER_MS = 20;

/**
 * One signal of asks at most: a request carries its order (0.6 KiB for one destination, over 100
 * KiB for 100 with long addresses), and a payload should stay under the 512 KiB at which Temporal
 * warns (it refuses 2 MiB). A larger order goes alone, as it would unbatched.
 */
const ASKS_PER_SIGNAL: BatchLimits<GateRequest> = { items: 50, bytes: 256 * 1024, sizeOf: (r) => Buffer.byteLength(JSON.stringify(r)), lingerMs: ASK_LINGER_MS };

export function gateConfig(s: PacingSettings): GateConfig {
  return { limits: { creations: s.limits.creations, quotes: s.limits.quotes }, marginMs: s.marginMs, callTimeoutMs: s.callTimeoutMs, leadMs: s.leadMs, quoteMinRemainingMs: s.quoteMinRemainingMs, historyLimit: s.gateHistoryLimit };
}

function gateStart(taskQueue: string, config: GateConfig) {
  return { workflowId: gateWorkflowId(taskQueue), taskQueue: gateTaskQueue(taskQueue), args: [{ taskQueue, config }] as const, staticSummary: `pacing gate · ${taskQueue}` };
}

/** At a worker's start: runs the gate (warm before a burst of orders needs it) with this worker's settings. */
export async function startGate(client: Client, taskQueue: string, settings: PacingSettings): Promise<void> {
  const config = gateConfig(settings);
  await client.workflow.signalWithStart('pacingGate', { ...gateStart(taskQueue, config), signal: gateConfigureSignal, signalArgs: [config] });
}

export function createGateActivities(deps: { client: Client; settings: PacingSettings; onDeliveryStarted?: () => void }) {
  // A workflow that is gone (terminated, or the gate before it restarts) needs no message.
  const ignoreGone = (err: unknown): void => {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  };
  const asks = new Map<string, (request: GateRequest) => Promise<void>>(); // per task queue, so per gate
  const ask = (taskQueue: string, request: GateRequest): Promise<void> => {
    let send = asks.get(taskQueue);
    if (!send) {
      const start = gateStart(taskQueue, gateConfig(deps.settings));
      send = batchedSends((requests: GateRequest[]) => deps.client.workflow.signalWithStart('pacingGate', { ...start, signal: gateRequestSignal, signalArgs: [requests] }).then(() => undefined), ASKS_PER_SIGNAL);
      asks.set(taskQueue, send);
    }
    return send(request);
  };
  return {
    /** The worker's pacing settings, recorded once in the delivery's history. */
    async pacingSettings(): Promise<PacingSettings> {
      // Read once by a delivery's first run (a local activity's result is recorded: a replay does not run it again).
      if (deps.onDeliveryStarted && Context.current().info.workflowType === 'delivery') deps.onDeliveryStarted();
      return deps.settings;
    },
    /**
     * `notRun`: the gate's run that answered "again" while draining for continue-as-new. Asked of
     * that run, it would answer "again" once more, and an ask arriving during its last task makes
     * the server refuse that task (UnhandledCommand): the worker then replays the gate's whole
     * history before it can continue (seconds at 4,000 events). So wait for its successor.
     */
    async askGate({ taskQueue, request, notRun }: { taskQueue: string; request: GateRequest; notRun?: string }): Promise<void> {
      if (notRun) {
        const current = await deps.client.workflow.getHandle(gateWorkflowId(taskQueue)).describe().catch((err: unknown) => (ignoreGone(err), undefined));
        if (current?.runId === notRun && current.status.name === 'RUNNING') {
          // Retried by the local activity's policy, checking less often the longer it takes (a describe each time).
          const nextRetryDelay = Math.min(2_000, 250 * Context.current().info.attempt);
          throw ApplicationFailure.create({ type: 'GateContinuingAsNew', message: `the pacing gate's run ${notRun} is continuing as new`, nextRetryDelay, category: ApplicationFailureCategory.BENIGN });
        }
      }
      // The delivery's trace rides in the ask (one signal carries the asks of many deliveries).
      const trace = activeTraceparent();
      await ask(taskQueue, trace ? { ...request, trace } : request);
    },
    async withdrawFromGate({ taskQueue, from, n }: { taskQueue: string; from: string; n: number }): Promise<void> {
      await deps.client.workflow.getHandle(gateWorkflowId(taskQueue)).signal(gateWithdrawSignal, { from, n }).catch(ignoreGone);
    },
    /** Any failure but a gone workflow retries the whole batch: a repeated answer is never read. */
    async answerDeliveries(answers: Addressed[]): Promise<void> {
      await Promise.all(answers.map(({ to, answer }) => deps.client.workflow.getHandle(to).signal(gateAnswerSignal, answer).catch(ignoreGone)));
    },
  };
}

export type GateActivities = ReturnType<typeof createGateActivities>;
