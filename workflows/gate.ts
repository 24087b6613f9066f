/**
 * Pacing: how quote and creation calls keep to the provider's rolling-window limits (20
 * creations per minute, 100 quotes per 10 minutes, per API key) across any number of workers.
 *
 * One gate workflow per task queue (so per API key), `pacing-gate:<queue>`, makes every quote and
 * creation call itself, as an activity. A delivery asks by signal (`gateRequest`, sent by a local
 * activity with signal-with-start, together with the asks of other deliveries on the same worker
 * process) and waits for one `gateAnswer` signal: a quote, a delivery, a
 * failure that retrying cannot fix, `withdrawn`, or `again` (the gate continues as new without
 * its queue: ask its next run again, the place is kept). A quote asked with `create` that is
 * within the order's maximum price is followed by its creation at once, and answered with both
 * (asked with `answerOnce`, by the creation's answer alone when the creation goes out at once).
 * A cancelled delivery signals `gateWithdraw`; a call already out is answered when it ends. Every
 * signal is sent by an activity through the worker's client; a creation's answer by the creation's
 * own activity, the other answers in batches.
 *
 * Slots, in the Temporal server's time only. A call can reach the provider from when its
 * activity is scheduled (plus the delay it is given) until its schedule-to-close timeout; the
 * gate reads both ends as workflow time (the server's time of its workflow tasks), and holds the
 * slot until a window (+ margin) after the end. The server never starts the activity after its
 * schedule-to-start timeout, and the activity sends only while its call can still end within the
 * schedule-to-close timeout, timed on the worker's monotonic clock from its start: no worker's
 * wall clock is read (docs/deploying.md, "Clocks"). A slot that frees within the lead time gets
 * its call scheduled now, with the rest as delay.
 *
 * Order: food first, then by first request. A 429 pauses its family until Retry-After. A failure
 * of one order (a 5xx, no answer, a dead worker) sends that order alone into a growing backoff,
 * its place kept, and never holds the queue; only first failures of OUTAGE_AFTER different orders
 * in a row mean an outage: then one call at a time, with growing pauses, until an answer comes.
 * Identical orders share a valid quote. After an unclear creation the next attempt looks the
 * delivery up by reference before creating (Idempotency-Key = the delivery's workflow ID).
 * `PROVIDER_PACING=task-queue` uses Temporal's task-queue rate limit instead (the comparison).
 */
import { ActivityFailure, ApplicationFailure, CancellationScope, condition, continueAsNew, deprecatePatch, isCancellation, makeContinueAsNewFunc, proxyActivities, proxyLocalActivities, setCurrentDetails, setHandler, TimeoutFailure, workflowInfo } from '@temporalio/workflow';
import type { GateActivities } from '../activities/gate-activities';
import type { ProviderActivities } from '../activities/provider-activities';
import type { CreateDeliveryRequest, DeliveryRecord, Quote } from '../provider/schemas';
import { NON_RETRYABLE_PROVIDER_FAILURES, PROVIDER_FAILURE_TYPES, UNKNOWN_ACCOUNT } from '../contract/failures';
import { SLOT_MISSED, gateAnswerSignal, gateConfigureSignal, gateRequestSignal, gateStatusQuery, gateWakeSignal, gateWithdrawSignal, type GateAnswer, type GateConfig, type GatedFamily, type GateRequest } from '../contract/gate-messages';
import { GateState, type Addressed, type Call, type GateSnapshot, type Outcome } from './gate-state';
import { accountPriority } from '../contract/priorities';
import { parseGateWorkflowId } from '../contract/workflow-ids';
import { providerTaskQueues } from '../contract/task-queues';
import { inTraceOf } from './trace-context';

/**
 * The patches 0.3.0's gate asked `patched()` about, now deprecated (the new behavior always): the
 * gates of 0.3.0 are AUTO_UPGRADE, so at the switch to this build each replays its run here once,
 * with their markers, where they were recorded (test/histories/gate-0-3-0/); this build then pins
 * it. Remove both in the release after this one: a gate then moves only by continuing as new.
 */
const ONE_ANSWER_PATCH = 'gate-one-answer-for-quote-and-creation';
const PAUSE_ON_UNAUTHORIZED_PATCH = 'gate-pause-account-on-unauthorized';
/** How long an activity task may wait for a worker beyond its delay before the server drops it. */
export const START_SLACK_MS = 5_000;
const local = proxyLocalActivities<GateActivities>({ startToCloseTimeout: '10 seconds' });
/**
 * The gate's answers go out by (ordinary) activity on its own queue: a local activity would hold
 * the gate's workflow task open while its signals are sent, and calls whose slots came free in
 * the meantime would wait for it. While draining for continue-as-new they go by local activity:
 * the continue-as-new then follows in the same task, before orders asked again can keep it busy.
 */
const { answerDeliveries } = proxyActivities<GateActivities>({ startToCloseTimeout: '10 seconds', retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds' } });

export async function pacingGate(input: { taskQueue: string; config: GateConfig; resume?: GateSnapshot }): Promise<never> {
  const gate = new GateState(input.resume ?? GateState.empty(input.config).s, () => deprecatePatch(ONE_ANSWER_PATCH));
  // One gate per account (contract/workflow-ids.ts): its calls carry the account as their fairness key.
  const account = gateAccount(workflowInfo().workflowId, input.taskQueue);
  const outbox: Addressed[] = [];
  const inFlight = new Set<Promise<void>>();
  let changed = true;
  const post = (to: string, answer: GateAnswer | undefined, told = false) => {
    if (answer && !told) outbox.push({ to, answer });
    if (answer) gate.answer(to, answer);
    changed = true;
  };
  const track = (p: Promise<unknown>) => {
    const t: Promise<void> = p.then(() => void inFlight.delete(t));
    inFlight.add(t);
  };
  setHandler(gateRequestSignal, (requests) => requests.forEach((r) => post(r.from, gate.request(r, Date.now()))));
  setHandler(gateWithdrawSignal, (r) => post(r.from, gate.withdraw(r)));
  setHandler(gateConfigureSignal, (config) => post('', void (gate.s.config = config))); // a new worker's settings
  setHandler(gateWakeSignal, () => void (changed = true)); // a task in which to see targetWorkerDeploymentVersionChanged
  setHandler(gateStatusQuery, () => gate.status(Date.now()));

  for (let draining = false, moving = false; ; ) {
    changed = false;
    // Pinned to its build (worker/worker.ts): it moves to a new current version by continuing as new.
    moving ||= workflowInfo().targetWorkerDeploymentVersionChanged;
    draining ||= moving || workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= gate.s.config.historyLimit;
    if (draining) for (const w of gate.waiting.splice(0)) outbox.push({ to: w.from, answer: { n: w.n, again: true, unclear: w.unclear, quote: w.quote, run: workflowInfo().runId } });
    else {
      for (const call of gate.take(Date.now())) {
        track(
          inTraceOf(call.req.trace, `GateWait:${call.req.family}`, call.req.requestedAt, () => makeCall(input.taskQueue, account, gate, call)).then((answers) => {
            answers.forEach((a) => post(a.to, a.answer, a.told));
            changed = true; // the call's slot changed, answered or not
          }),
        );
      }
    }
    const batch = outbox.splice(0);
    if (batch.length > 0) track(draining ? local.answerDeliveries(batch) : answerDeliveries.executeWithOptions({ summary: `answer ${batch.length} deliveries` }, [batch]));
    const { counts, config } = gate.s;
    setCurrentDetails(`**pacing gate** · creations ${config.limits.creations.limit} per ${config.limits.creations.windowMs / 1000} s · quotes ${config.limits.quotes.limit} per ${config.limits.quotes.windowMs / 1000} s · ${gate.waiting.length} waiting · ${gate.inFlight.size} calls out · ${counts.calls} calls · ${counts.shared} quotes shared`);
    if (draining) {
      // Only with no call out: every slot's window is then in the snapshot, and no call's answer is left to a run that has ended.
      // Moving, the next run's first task goes to the version now current, which then pins it (@experimental in the SDK).
      const carryOn = moving ? makeContinueAsNewFunc<typeof pacingGate>({ initialVersioningBehavior: 'AUTO_UPGRADE' }) : continueAsNew<typeof pacingGate>;
      if (inFlight.size === 0 && !changed) return carryOn({ taskQueue: input.taskQueue, config: gate.s.config, resume: gate.s });
      await condition(() => changed || inFlight.size === 0);
      continue;
    }
    const next = gate.nextChangeAt(Date.now());
    if (next === undefined) await condition(() => changed);
    else await condition(() => changed, Math.max(1, next - Date.now()));
  }
}

/** The gate's account, from its ID; a gate started under any other ID fails at once, naming it (it would pace under no account's key). */
function gateAccount(workflowId: string, taskQueue: string): string {
  const account = parseGateWorkflowId(workflowId, taskQueue);
  if (account !== undefined) return account;
  throw ApplicationFailure.create({ type: UNKNOWN_ACCOUNT, message: `workflow ID ${JSON.stringify(workflowId)} is no pacing gate's of task queue ${taskQueue} (pacing-gate:<queue> or pacing-gate:<queue>@<account>)`, nonRetryable: true });
}

/** One call in its slot: scheduled now, sent at `notBefore` at the earliest, never after its schedule-to-close timeout. `told`: its activity sent that answer already. */
async function makeCall(taskQueue: string, account: string, gate: GateState, call: Call): Promise<(Addressed & { told?: boolean })[]> {
  const { req } = call;
  const delayMs = Math.max(0, call.notBefore - Date.now());
  const act = proxyActivities<ProviderActivities>({
    taskQueue: providerTaskQueues(taskQueue)[req.family],
    scheduleToStartTimeout: delayMs + START_SLACK_MS,
    // Started by delay + slack at the latest, it then waits its delay and has the call's time.
    scheduleToCloseTimeout: 2 * delayMs + START_SLACK_MS + gate.s.config.callTimeoutMs,
    retry: { maximumAttempts: 1 }, // each attempt takes a slot of its own
    priority: accountPriority(req.food, account),
    summary: `${req.family === 'quotes' ? 'quote' : 'create'} for ${req.from}${req.attempts ? `, attempt ${req.attempts + 1}` : ''}`,
  });
  const timing = { delayMs, sendWithinMs: delayMs + gate.s.config.callTimeoutMs };
  let outcome: Outcome;
  try {
    if (req.family === 'quotes') {
      const quote = await act.quoteInGate(req.order, timing);
      outcome = { kind: 'answered', quote, answer: { n: req.n, quote, shared: false } };
    } else {
      const answer = { n: req.n, quote: req.quote, ...(req.quoteShared && { shared: true as const }) };
      // The activity answers the order itself (no answer activity after it); one that cannot tell (test/fixtures' fakes) returns the record alone.
      const made = await act.createInGate({ request: req.order as CreateDeliveryRequest & { reference_number: string }, idempotencyKey: req.from, lookFirst: req.unclear }, timing, { workflowId: req.from, answer });
      const [delivery, told] = 'told' in made ? [made.delivery, made.told] : [made, false];
      outcome = { kind: 'answered', answer: { ...answer, delivery }, ...('told' in made && { afterCallMs: made.afterCallMs }) };
      if (told) return gate.done(call, outcome, Date.now()).map((a) => (a.to === req.from && 'delivery' in a.answer ? { ...a, told } : a));
    }
  } catch (err) {
    outcome = outcomeOf(err, req.n);
  }
  return gate.done(call, outcome, Date.now());
}

function outcomeOf(err: unknown, n: number): Outcome {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  // A revoked or wrong key pauses the account's calls instead of failing its orders.
  if (cause instanceof ApplicationFailure && cause.type === PROVIDER_FAILURE_TYPES.unauthorized) {
    deprecatePatch(PAUSE_ON_UNAUTHORIZED_PATCH);
    return { kind: 'unauthorized' };
  }
  if (cause instanceof TimeoutFailure) return { kind: cause.timeoutType === 'SCHEDULE_TO_START' ? 'not_made' : 'unclear' };
  if (!(cause instanceof ApplicationFailure)) return { kind: 'unclear' };
  const details = cause.details?.[0] as { status?: number; retryAfterMs?: number } | undefined;
  if (cause.type === SLOT_MISSED) return { kind: 'not_made' };
  if (cause.type === PROVIDER_FAILURE_TYPES.rate_limited) return { kind: 'rate_limited', retryAfterMs: details?.retryAfterMs ?? 1_000 };
  if (cause.type === PROVIDER_FAILURE_TYPES.unavailable) return { kind: (details?.status ?? 0) >= 500 ? 'unavailable' : 'unreachable' };
  if (cause.nonRetryable || NON_RETRYABLE_PROVIDER_FAILURES.includes(cause.type ?? '')) {
    return { kind: 'answered', answer: { n, failure: { type: cause.type ?? 'Error', message: cause.message } } };
  }
  return { kind: 'unclear' };
}

/** The delivery workflow's side: ask the gate, wait for its answer. */
export class GateCalls {
  private readonly answers = new Map<number, GateAnswer>();
  private n = 0;

  /** `onQuoted`: the quote of a request asked with `create`, while the gate goes on to create. */
  /** `account`: for a workflow whose ID names none (a quote without a delivery); a delivery's gate follows from its ID. */
  constructor(
    private readonly config: Pick<GateConfig, 'callTimeoutMs' | 'leadMs'>,
    onQuoted?: (quote: Quote, shared: boolean) => void,
    private readonly account?: string,
  ) {
    // Keyed by number: a repeated answer is for a number already taken, and never read.
    setHandler(gateAnswerSignal, (a) => void ('creating' in a ? onQuoted?.(a.quote, a.shared) : this.answers.set(a.n, a)));
  }

  /**
   * The call's answer; a failure retrying cannot fix is thrown, naming the provider's reason. A
   * quote asked with `create` may come back with the delivery too (the quote was within `maxPrice`).
   */
  async call(family: 'quotes', order: CreateDeliveryRequest, o: { food: boolean; fingerprint: string; create?: GateRequest['create'] }): Promise<{ quote: Quote; shared?: boolean; delivery?: DeliveryRecord }>;
  async call(family: 'creations', order: CreateDeliveryRequest, o: { food: boolean }): Promise<{ delivery: DeliveryRecord }>;
  async call(family: GatedFamily, order: CreateDeliveryRequest, o: { food: boolean; fingerprint?: string; create?: GateRequest['create'] }): Promise<{ quote?: Quote; shared?: boolean; delivery?: DeliveryRecord }> {
    const { workflowId: from, taskQueue } = workflowInfo();
    const requestedAt = Date.now();
    const mayCreate = family === 'creations' || o.create !== undefined;
    let quoted: Quote | undefined; // quoted, and its creation asked again (the gate continued as new meanwhile)
    let notRun: string | undefined; // the gate's run that said "again": ask its successor
    for (let unclear = false; ; ) {
      const asking = quoted ? 'creations' : family;
      const n = ++this.n;
      let answer: GateAnswer | undefined;
      try {
        await local.askGate({ taskQueue, request: { from, n, family: asking, food: o.food, requestedAt, order, ...(asking === 'quotes' && { fingerprint: o.fingerprint, create: o.create }), unclear }, notRun, ...(this.account !== undefined && { account: this.account }) });
        await condition(() => this.answers.has(n));
        answer = this.answers.get(n)!;
      } catch (err) {
        if (!isCancellation(err)) throw err;
        // A creation already on its way may create the delivery: wait for its end (bounded), so it can be cancelled.
        answer = await CancellationScope.nonCancellable(async () => {
          // The wait (and its timer) starts before the withdraw's local activity: on replay, a local
          // activity's result can come in one activation with a signal that arrived after it, so
          // no command may depend on which of the two came first.
          const callEnded = mayCreate ? condition(() => this.answers.has(n), 2 * this.config.leadMs + START_SLACK_MS + this.config.callTimeoutMs + 60_000) : undefined;
          await local.withdrawFromGate({ taskQueue, from, n, ...(this.account !== undefined && { account: this.account }) });
          await callEnded;
          return this.answers.get(n);
        });
        if (!answer || !('delivery' in answer)) throw err;
      }
      this.answers.delete(n);
      if ('failure' in answer) throw ApplicationFailure.create({ type: answer.failure.type, message: answer.failure.message, nonRetryable: true });
      if ('again' in answer) {
        unclear ||= answer.unclear;
        quoted ??= answer.quote;
        notRun = answer.run;
      } else if (!('withdrawn' in answer)) return quoted ? { ...answer, quote: quoted } : answer;
    }
  }
}
