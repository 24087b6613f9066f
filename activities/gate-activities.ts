/**
 * The pacing gate's messages (workflows/gate.ts), sent by local activities through the worker's
 * own client: a signal command would cost the sending workflow one more workflow task. The asks
 * of one worker process go to the gate together (activities/batched-sends.ts), and the gate's
 * answers go out in one batch (a creation's answer goes with the creation: createInGate).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { GATE_WORKFLOW_TYPE, gateAnswerSignal, gateConfigureSignal, gateRequestSignal, gateWithdrawSignal, type Addressed, type GateConfig, type GateRequest, type PacingSettings } from '../contract/gate-messages';
import { gateWorkflowId } from '../contract/workflow-ids';
import { gateTaskQueue } from '../contract/task-queues';
import { batchedSends, type BatchLimits } from './batched-sends';
import { activeTraceparent } from '../tracing/spans';
import { activityAccount, unknownAccount } from './account-of';
import type { AccountRegistry } from '../accounts/registry';

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

/** The limits of the families the gate paces. */
const gatedLimits = (l: PacingSettings['limits']): GateConfig['limits'] => ({ creations: l.creations, quotes: l.quotes });

/** The gate's settings: the worker's pacing settings, with the limits of the gate's account when given. */
export function gateConfig(s: PacingSettings, limits: PacingSettings['limits'] = s.limits): GateConfig {
  return { limits: gatedLimits(limits), marginMs: s.marginMs, callTimeoutMs: s.callTimeoutMs, leadMs: s.leadMs, quoteMinRemainingMs: s.quoteMinRemainingMs, historyLimit: s.gateHistoryLimit };
}

/** One gate per task queue and account; its calls (and its own tasks) carry the account as their fairness key. */
function gateStart(taskQueue: string, config: GateConfig, account: string) {
  return {
    workflowId: gateWorkflowId(taskQueue, account),
    taskQueue: gateTaskQueue(taskQueue),
    args: [{ taskQueue, config }] as const,
    staticSummary: `pacing gate · ${taskQueue} · account ${account}`,
    priority: { fairnessKey: account },
  };
}

/** A running gate takes new settings (an account's limits changed, a new worker's settings); a gate that is not running stays so: it starts with them on its next ask. */
export async function configureGate(client: Client, taskQueue: string, settings: PacingSettings, account: string, limits: PacingSettings['limits']): Promise<boolean> {
  try {
    await client.workflow.getHandle(gateWorkflowId(taskQueue, account)).signal(gateConfigureSignal, gateConfig(settings, limits));
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** `accounts`: the worker's registry (each gate takes its account's limits); absent: every account has the settings' limits. */
export function createGateActivities(deps: { client: Client; settings: PacingSettings; accounts?: Pick<AccountRegistry, 'get'>; onDeliveryStarted?: (account: string) => void }) {
  // A workflow that is gone (terminated, or the gate before it restarts) needs no message.
  const ignoreGone = (err: unknown): void => {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  };
  /** The account's limits; an account the registry does not have (any more) is retried (the operator may add it back), unless `retryable` is false. */
  const limitsOf = (account: string, retryable = true): PacingSettings['limits'] => {
    if (!deps.accounts) return deps.settings.limits;
    const known = deps.accounts.get(account);
    if (!known) throw unknownAccount(account, retryable);
    return { ...deps.settings.limits, ...known.limits };
  };
  const asks = new Map<string, (request: GateRequest) => Promise<void>>(); // per task queue and account, so per gate
  const ask = (taskQueue: string, account: string, request: GateRequest): Promise<void> => {
    const gate = gateWorkflowId(taskQueue, account);
    let send = asks.get(gate);
    if (!send) {
      // Started on demand by the first ask (signal-with-start), with the account's limits as they are then.
      const start = () => gateStart(taskQueue, gateConfig(deps.settings, limitsOf(account)), account);
      send = batchedSends((requests: GateRequest[]) => deps.client.workflow.signalWithStart(GATE_WORKFLOW_TYPE, { ...start(), signal: gateRequestSignal, signalArgs: [requests] }).then(() => undefined), ASKS_PER_SIGNAL);
      asks.set(gate, send);
    }
    return send(request);
  };
  return {
    /**
     * The worker's pacing settings with the delivery's account's limits, recorded once in the
     * delivery's history. Asked before a delivery's or a quote's first call: an account the registry
     * does not have fails it at once (never retried for ever: nothing has started yet).
     */
    async pacingSettings(by?: { account?: string }): Promise<PacingSettings> {
      // Read once by a delivery's first run (a local activity's result is recorded: a replay does not run it again).
      const account = activityAccount(by?.account);
      const settings = deps.accounts ? { ...deps.settings, limits: limitsOf(account, false) } : deps.settings;
      if (deps.onDeliveryStarted && Context.current().info.workflowType === 'delivery') deps.onDeliveryStarted(account);
      return settings;
    },
    /**
     * `notRun`: the gate's run that answered "again" while draining for continue-as-new. Asked of
     * that run, it would answer "again" once more, and an ask arriving during its last task makes
     * the server refuse that task (UnhandledCommand): the worker then replays the gate's whole
     * history before it can continue (seconds at 4,000 events). So wait for its successor.
     */
    async askGate({ taskQueue, request, notRun, account: explicit }: { taskQueue: string; request: GateRequest; notRun?: string; account?: string }): Promise<void> {
      const account = activityAccount(explicit, taskQueue);
      // An unknown account is refused here, before its gate would start; a known one's limits (and this worker's settings) go with the ask.
      const config = gateConfig(deps.settings, limitsOf(account));
      if (notRun) {
        const current = await deps.client.workflow.getHandle(gateWorkflowId(taskQueue, account)).describe().catch((err: unknown) => (ignoreGone(err), undefined));
        if (current?.runId === notRun && current.status.name === 'RUNNING') {
          // Retried by the local activity's policy, checking less often the longer it takes (a describe each time).
          const nextRetryDelay = Math.min(2_000, 250 * Context.current().info.attempt);
          throw ApplicationFailure.create({ type: 'GateContinuingAsNew', message: `the pacing gate's run ${notRun} is continuing as new`, nextRetryDelay, category: ApplicationFailureCategory.BENIGN });
        }
      }
      // The delivery's trace rides in the ask (one signal carries the asks of many deliveries).
      const trace = activeTraceparent();
      await ask(taskQueue, account, { ...request, ...(trace && { trace }), limits: config.limits, config });
    },
    async withdrawFromGate({ taskQueue, from, n, account }: { taskQueue: string; from: string; n: number; account?: string }): Promise<void> {
      await deps.client.workflow.getHandle(gateWorkflowId(taskQueue, activityAccount(account, taskQueue))).signal(gateWithdrawSignal, { from, n }).catch(ignoreGone);
    },
    /** Any failure but a gone workflow retries the whole batch: a repeated answer is never read. */
    async answerDeliveries(answers: Addressed[]): Promise<void> {
      await Promise.all(answers.map(({ to, answer }) => deps.client.workflow.getHandle(to).signal(gateAnswerSignal, answer).catch(ignoreGone)));
    },
  };
}

export type GateActivities = ReturnType<typeof createGateActivities>;
