/**
 * One workflow per delivery: quote → price guard → create → follow → end.
 *
 * Cancelling the workflow cancels the delivery:
 *  - before creation, nothing is created;
 *  - while the creation call is in flight, it is allowed to finish, then the delivery is
 *    cancelled at the provider, so no delivery is ever left behind;
 *  - after creation, the provider is asked to cancel in a non-cancellable scope; if it refuses
 *    (already picked up), the refusal is recorded and the delivery is followed to its real end.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  ContinueAsNew,
  continueAsNew,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { ProviderActivities } from '../activities/provider-activities';
import { canUpdate, isTerminalDestination } from '../provider/lifecycle';
import { formatMoney, withinMaxPrice } from '../provider/money';
import type { CallFamily } from '../provider/limits';
import type { CreateDeliveryRequest, DeliveryRecord, Quote, UpdateDeliveryRequest } from '../provider/schemas';
import { describeIssues, fieldIssues } from '../provider/validation';
import { NON_RETRYABLE_PROVIDER_FAILURES, PROVIDER_FAILURE_TYPES, WORKFLOW_FAILURE_TYPES } from '../contract/failures';
import { applicationFailureIn, failureTypeIn } from '../contract/failure-cause';
import { approveQuoteUpdate, rejectQuoteUpdate, statusChangedSignal, statusQuery, updateDeliveryUpdate } from '../contract/delivery-messages';
import { type DeliveryResult, type DeliveryState, type DeliveryWorkflowInput, type CarriedQuote, type FollowUpSettings, type StatusChange, type TimelineEntry } from '../contract/delivery-types';
import { DeliveryId, QuotedPrice } from '../contract/search-attributes';
import { deliveryDetails } from './details';
import { DeliverySearch } from './search-attributes';
import { startChecks } from './start-checks';
import { DeliveryTracker, type TrackedChange } from './state';
import { Notifier } from './notifier';
import type { NotificationType } from '../contract/notification-types';
import type { NotificationChange } from '../contract/delivery-types';
import { accountPriority } from '../contract/priorities';
import { startAccount } from '../contract/workflow-ids';
import { providerTaskQueues } from '../contract/task-queues';
import { GateCalls } from './gate';
import type { PacingSettings } from '../contract/gate-messages';
import { quoteFingerprint } from './quote-fingerprint';
import type { GateActivities } from '../activities/gate-activities';

/** Default wait for a person to approve a quote over the order's maximum price. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 30 * 60_000;
/** Each run stays well under 2,000 events; Temporal may suggest continuing sooner. */
export const DEFAULT_HISTORY_LIMIT = 1_500;
export const DEFAULT_FOLLOW_UP: FollowUpSettings = { quietMs: 15 * 60_000, windowGraceMs: 15 * 60_000, jitter: 0.2, endGraceMs: 10 * 60_000 };
/** At continue-as-new, how long to let notifications in flight finish, so the next run does not send them again. */
const NOTIFY_SETTLE_MS = 30_000;
/** Never poll more often than this, whatever the settings say. */
const MIN_CHECK_MS = 1_000;
/** Changes that arrive before the delivery id is known are held, up to this many. */
const PENDING_CHANGES_LIMIT = 1_000;

/**
 * Provider calls retry until they succeed or fail for good: a 429 waits for the provider's
 * Retry-After (the failure's nextRetryDelay), an outage backs off to one attempt a minute. No
 * schedule-to-close limit, so a long Retry-After (up to the 10-minute quote window) always fits;
 * start-to-close covers one HTTP call (10 s client timeout) plus a lookup on retries.
 */
const providerCall: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', nonRetryableErrorTypes: NON_RETRYABLE_PROVIDER_FAILURES },
};

/**
 * Food first for every provider call as well (task-queue pacing, updates, reads): the delivery's
 * Temporal priority; within it, the account is the fairness key, so one account's backlog on a
 * shared queue does not starve another's calls (a server without fairness ignores the key).
 */
function providerActivities(food: boolean, account: string) {
  const queues = providerTaskQueues(workflowInfo().taskQueue);
  const options = (family: CallFamily): ActivityOptions => ({ ...providerCall, taskQueue: queues[family], priority: accountPriority(food, account) });
  return {
    quotes: proxyActivities<ProviderActivities>(options('quotes')),
    creations: proxyActivities<ProviderActivities>(options('creations')),
    other: proxyActivities<ProviderActivities>(options('other')),
    /** Options for one call, with the summary the Web UI shows on its event. */
    labelled(family: CallFamily, summary: string, extra: ActivityOptions = {}): ActivityOptions {
      return { ...options(family), summary, ...extra };
    },
  };
}

/** The worker's pacing settings, recorded once in the history (configuration stays out of workflow inputs); `account`: for a workflow whose ID names none. */
const pacingSettings = (account?: string) => {
  const local = proxyLocalActivities<GateActivities>({ startToCloseTimeout: '10 seconds' });
  return account === undefined ? local.pacingSettings() : local.pacingSettings({ account });
};

/** A quote without a delivery: the same paced path (the account's gate) as the delivery workflow's quote. */
export async function quoteOnly(order: CreateDeliveryRequest, o: { account?: string } = {}): Promise<Quote | CarriedQuote> {
  // Named to every call: a quote's workflow ID names no account (contract/workflow-ids.ts).
  const account = startAccount(o);
  const act = providerActivities(order.is_food, account);
  const pacing = await pacingSettings(account);
  if (pacing.pacing !== 'gate') return act.quotes.quoteDelivery.executeWithOptions(act.labelled('quotes', `quote ${order.destinations.length} stop(s)`), [order, { account }]);
  const fingerprint = quoteFingerprint(order);
  const { quote } = await new GateCalls(pacing, undefined, account).call('quotes', order, { food: order.is_food, fingerprint });
  return { ...quote, fingerprint };
}

export async function delivery(input: DeliveryWorkflowInput): Promise<DeliveryResult> {
  // Read before the first local activity: on replay, code after one may run a workflow task
  // earlier than it first did, and so see an earlier Date.now().
  const startedAt = Date.now();
  // Input, workflow ID and search attributes, whoever started it (workflows/start-checks.ts).
  const checked = startChecks(input);
  if (!checked.readable) await checked.passed;
  const tracker = input.resume ? new DeliveryTracker(input.resume.tracker) : DeliveryTracker.start(input);
  const state = tracker.state;
  const notifier = new Notifier(input.notify, input.resume?.notifier, state.timeline, (text) => tracker.note(new Date(), text));
  /** Tells the order system of a change (once the start is checked: nothing is told of a refused start). */
  const tell = (type: NotificationType, change: NotificationChange, entry: TimelineEntry, result?: DeliveryResult) => notifier.outbox.add(type, change, state, entry, result);
  tracker.onChange = (c) => tellChange(c);
  const act = providerActivities(input.order.is_food === true, startAccount(input));
  const request = { ...input.order, reference_number: input.reference };
  const pending: StatusChange[] = [];
  const followUp: FollowUpSettings = { ...DEFAULT_FOLLOW_UP, ...input.followUp };
  /** When the last status signal came, applied or not: any webhook shows that webhooks get through. */
  let lastSignalAt = input.resume?.lastSignalAt ?? Date.now();
  /** Destinations whose passed time window has been reconciled once already. */
  const windowsChecked = new Set<string>(input.resume?.windowsChecked);
  const historyLimit = input.historyLimit ?? DEFAULT_HISTORY_LIMIT;
  const historyIsLong = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= historyLimit;
  let decision: { approved: true } | { approved: false; reason: string } | undefined;

  const now = () => new Date();
  /** The Web UI's current details follow the state (not a history event: free to refresh). */
  const refreshDetails = () => setCurrentDetails(deliveryDetails(state));
  const setPhase = (phase: DeliveryState['phase']) => {
    state.phase = phase;
    refreshDetails();
  };
  const search = new DeliverySearch(input);
  if (input.resume) search.statusSearch = input.resume.statusSearch;
  const statusChanged = () => search.status(state.status, tracker.ended);
  const endBeforeCreation = (note: string) => {
    state.cancellation = { requestedAt: now().toISOString(), outcome: 'before_creation' };
    tell('cancellation.outcome', { subject: 'cancellation', cancellation: state.cancellation }, tracker.note(now(), note));
    setPhase('ended');
  };
  function tellChange(c: TrackedChange): void {
    const e = c.entry;
    if (c.kind === 'destination') tell('destination.tracking_link', { subject: e.subject, status: e.status, trackingUrl: c.trackingUrl, source: sourceOf(e) }, e);
    else {
      const type = e.subject === 'delivery' ? 'delivery.status_changed' : 'destination.status_changed';
      tell(type, { subject: e.subject, status: e.status, previousStatus: c.previousStatus, late: e.late, source: sourceOf(e), providerEventId: e.eventId, occurredAt: e.occurredAt }, e);
    }
  }
  /** Records the quote once, whichever message brings it first. */
  const takeQuote = (quote: Quote, shared = false): boolean => {
    if (state.quote) return false;
    state.quote = quote;
    // QuotedPrice goes out with the creation's upsert, or when the quote waits for approval: one action fewer.
    if (shared) tracker.note(now(), 'reusing the valid quote of an identical order: no quote asked for');
    tracker.note(now(), `quoted ${formatMoney(quote.price)}`);
    return true;
  };
  const takeRecord = (record: DeliveryRecord, source: 'provider' | 'reconciliation' = 'provider') => {
    tracker.applyRecord(record, source, now());
    statusChanged();
    refreshDetails();
  };

  setHandler(statusQuery, () => state);

  setHandler(statusChangedSignal, (change) => {
    lastSignalAt = Date.now();
    if (state.deliveryId === undefined) {
      if (pending.length < PENDING_CHANGES_LIMIT) pending.push(change);
      return;
    }
    tracker.apply(change, now());
    statusChanged();
    refreshDetails();
  });

  const awaitingApproval = () => {
    if (state.phase !== 'awaiting_approval') throw new Error(`no quote is waiting for approval (the delivery is ${state.phase})`);
  };
  setHandler(
    approveQuoteUpdate,
    () => {
      decision = { approved: true };
      tracker.note(now(), 'quote approved');
      return state;
    },
    { validator: awaitingApproval },
  );
  setHandler(
    rejectQuoteUpdate,
    (reason: string) => {
      decision = { approved: false, reason: reason || 'rejected' };
      tracker.note(now(), `quote rejected: ${decision.reason}`);
      return state;
    },
    { validator: (_reason: string) => awaitingApproval() },
  );

  setHandler(
    updateDeliveryUpdate,
    async (patch: UpdateDeliveryRequest) => {
      const fields = Object.keys(patch);
      let record: DeliveryRecord;
      try {
        record = await act.other.updateDelivery.executeWithOptions(act.labelled('other', `update ${fields.join(', ')}`), [{ deliveryId: state.deliveryId!, patch }]);
      } catch (err) {
        const failureType = failureTypeIn(err);
        tell('update.refused', { subject: 'update', fields, failureType }, tracker.note(now(), `update of ${fields.join(', ')} refused${failureType ? ` (${failureType})` : ''}`));
        throw err;
      }
      takeRecord(record);
      tell('update.applied', { subject: 'update', fields }, tracker.note(now(), `updated: ${fields.join(', ')}`));
      return state;
    },
    { validator: (patch: UpdateDeliveryRequest) => validateUpdate(state, patch) },
  );

  let pacing: PacingSettings;
  let gate: GateCalls | undefined;
  try {
    const result = await quoteCreateFollow();
    await endGrace();
    await end('completed', result);
    return result;
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    if (isCancellation(err) && state.deliveryId !== undefined) await endGrace(); // cancelled at the provider: late statuses still count
    await end(isCancellation(err) ? 'cancelled' : 'failed', undefined, failureTypeIn(err));
    throw err;
  }

  /** The delivery's life: quote, price guard, create, follow to the end. */
  async function quoteCreateFollow(): Promise<DeliveryResult> {
    if (input.resume) {
      notifier.start();
      return await follow();
    }

    // 1. Quote, 2. price guard. A cancellation here, from the first workflow task on, ends the
    // workflow with nothing created, and its state says so.
    let created: DeliveryRecord | undefined;
    try {
      await checked.passed; // before any provider call or pacing request
      notifier.start();
      pacing = await pacingSettings();
      search.statusSearch = pacing.statusSearch;
      // The gate tells of the quote while it goes on to create (a quote within the maximum price).
      gate = pacing.pacing === 'gate' ? new GateCalls(pacing, (quote, shared) => takeQuote(quote, shared) && setPhase('creating')) : undefined;
      refreshDetails();
      const { quote, delivery, shared } = await obtainQuote();
      takeQuote(quote, shared);
      // Created right after the quote (within the maximum price): a cancellation meanwhile is handled by follow().
      created = delivery;
      if (!created && input.maxPrice) await priceGuard(input, quote);
      // A cancellation that arrived with the quote's result still counts as "before creation".
      if (!created && CancellationScope.current().consideredCancelled) throw new CancelledFailure('cancellation requested before creation');
    } catch (err) {
      if (isCancellation(err)) endBeforeCreation('cancelled before creation: nothing was created');
      throw err;
    }

    // 3. Create. Non-cancellable once the request may have reached the provider: we must learn
    // the delivery's id so that a cancellation can reach it.
    setPhase('creating');
    const record = created ?? (await create());
    search.change(() => {
      takeRecord(record);
      search.set({ key: DeliveryId, value: record.id });
      if (state.quote) search.set({ key: QuotedPrice, value: state.quote.price.amount });
      tracker.applyInProviderOrder(pending.splice(0), now());
      statusChanged();
    });
    setPhase('following');
    return await follow();
  }

  /**
   * After the end, the workflow stays open for up to `endGraceMs`, so that a status arriving late (a
   * webhook retried after an outage) lands on the timeline and is told, not lost as workflow_closed.
   * It waits only while an earlier step is missing from the timeline: none at the end, no grace (and
   * no timer); the last missing one heard, it closes (a webhook refused once comes back seconds later).
   */
  async function endGrace(): Promise<void> {
    if (followUp.endGraceMs > 0 && tracker.mayHearLate) await CancellationScope.nonCancellable(() => condition(() => !tracker.mayHearLate, followUp.endGraceMs, { summary: 'grace for late statuses' }));
  }

  /** The last notification, and every target has had it (or given up) before the workflow closes. */
  async function end(outcome: 'completed' | 'cancelled' | 'failed', result?: DeliveryResult, failureType?: string): Promise<void> {
    if (!notifier.started) return; // a refused start tells nothing
    search.end(state.status);
    const entry = tracker.note(now(), `ended: ${outcome}${failureType ? ` (${failureType})` : ''}`);
    tell('delivery.ended', { subject: 'delivery', status: state.status, outcome, failureType }, entry, result ?? state);
    await notifier.finish();
  }

  /**
   * A quote the order carries for the same inputs, one shared by an identical order, or a new one.
   * Through the gate, the delivery comes with it when the quote is within the maximum price: the
   * gate creates right after quoting, at the order's place in its queue.
   */
  async function obtainQuote(): Promise<{ quote: Quote; shared?: boolean; delivery?: DeliveryRecord }> {
    const summary = `quote ${request.destinations.length} stop(s)`;
    if (!gate) return { quote: await act.quotes.quoteDelivery.executeWithOptions(act.labelled('quotes', summary), [request]) };
    const fingerprint = quoteFingerprint(request);
    if (input.quote) {
      const left = Date.parse(input.quote.expires_at) - startedAt;
      if (input.quote.fingerprint === fingerprint && left >= pacing.quoteMinRemainingMs) {
        tracker.note(now(), 'using the quote the order carries: no quote asked for');
        return { quote: { price: input.quote.price, expires_at: input.quote.expires_at } };
      }
      tracker.note(now(), input.quote.fingerprint === fingerprint ? 'the quote the order carries is about to expire: asking for a new one' : 'the quote the order carries is for other inputs: asking for a new one');
    }
    // One answer when the creation goes out at once; the quote first only when it waits for a slot (its status says so meanwhile).
    return gate.call('quotes', request, { food: request.is_food, fingerprint, create: { maxPrice: input.maxPrice, answerOnce: true } });
  }

  async function create(): Promise<DeliveryRecord> {
    const summary = `create delivery ref ${input.reference}`;
    const idempotencyKey = workflowInfo().workflowId;
    if (!gate) {
      return CancellationScope.nonCancellable(() => act.creations.createDelivery.executeWithOptions(act.labelled('creations', summary), [{ request, idempotencyKey }]));
    }
    try {
      // The gate makes the call (idempotency key = this workflow's ID); a cancellation while it is out waits for it.
      return (await gate.call('creations', request, { food: request.is_food })).delivery;
    } catch (err) {
      if (isCancellation(err)) endBeforeCreation('cancelled before the delivery was created: nothing was created');
      throw err;
    }
  }

  /** 4. Follow until the delivery ends, or until the workflow is cancelled. */
  async function follow(): Promise<DeliveryResult> {
    try {
      if (CancellationScope.current().consideredCancelled) throw new CancelledFailure('cancellation requested while the delivery was being created');
      await followWithReconciliation();
      // Webhooks may arrive out of order: the delivery's end can overtake a destination's.
      // Their own webhooks would now find the workflow closed, so this last read must succeed.
      if (state.destinations.some((d) => !isTerminalDestination(d.status))) await reconcile('the delivery ended with destinations still open', true);
    } catch (err) {
      if (!isCancellation(err)) throw err;
      await cancelAtProvider(err);
    }
    setPhase('ended');
    // An update that is still talking to the provider finishes before the workflow closes.
    await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
    return state;
  }

  /** Carries the whole state into a fresh run once this one's history is long. */
  async function continueWithState(): Promise<never> {
    await condition(allHandlersFinished); // an update in flight finishes in this run
    // Notifications in flight finish here if they can; what is left the next run sends (again, same event id).
    if (!notifier.outbox.idle) await condition(() => notifier.outbox.idle, NOTIFY_SETTLE_MS);
    tracker.note(now(), `continuing as new after ${workflowInfo().historyLength} events`);
    return continueAsNew<typeof delivery>({ ...input, resume: { tracker: tracker.snapshot(), windowsChecked: [...windowsChecked], lastSignalAt, notifier: notifier.outbox.snapshot(), statusSearch: search.statusSearch } });
  }

  /**
   * Waits for the delivery to end, asking the provider for the truth when no webhook has come
   * for `quietMs` (jittered) or when a destination's time window has passed by `windowGraceMs`
   * without it ending. Reads go through the rate-limited queue for the provider's other calls.
   */
  async function followWithReconciliation(): Promise<void> {
    if (!input.resume) lastSignalAt = Date.now(); // the quiet clock starts when there is a delivery to hear about
    while (!tracker.ended) {
      if (historyIsLong()) await continueWithState();
      // One timer per check, not one per webhook: a signal only moves the quiet deadline, which
      // is looked at when the timer fires. That keeps the history small for busy deliveries.
      const quietMs = Math.max(MIN_CHECK_MS, followUp.quietMs * (1 - followUp.jitter * Math.random()));
      const windowDue = nextWindowDeadline();
      const dueAt = Math.min(lastSignalAt + quietMs, windowDue?.at ?? Infinity);
      await condition(() => tracker.ended || historyIsLong(), Math.max(MIN_CHECK_MS, dueAt - Date.now()), { summary: 'next reconciliation check' });
      if (tracker.ended) return;
      if (historyIsLong()) continue;
      const windowPassed = windowDue !== undefined && Date.now() >= windowDue.at;
      const quietPassed = Date.now() >= lastSignalAt + quietMs;
      if (!windowPassed && !quietPassed) continue; // webhooks arrived meanwhile
      if (windowPassed) windowDue.ids.forEach((id) => windowsChecked.add(id));
      await reconcile(windowPassed ? `time window of ${windowDue.ids.join(', ')} passed without news` : `no webhook for ${Math.round(quietMs / 1000)} s`);
      lastSignalAt = Date.now();
    }
  }

  /** The earliest passed-window check still to do, and which destinations it is for. */
  function nextWindowDeadline(): { at: number; ids: string[] } | undefined {
    let at = Infinity;
    const ids: string[] = [];
    for (const d of state.destinations) {
      if (isTerminalDestination(d.status) || windowsChecked.has(d.id)) continue;
      const due = Date.parse(d.timeWindowEnd) + followUp.windowGraceMs;
      if (due < at) {
        at = due;
        ids.length = 0;
      }
      if (due === at) ids.push(d.id);
    }
    return ids.length ? { at, ids } : undefined;
  }

  /**
   * Reads the delivery and applies the provider's truth. A follow-up read gives up after a while
   * (the next check tries again; webhooks keep applying meanwhile). The last read of an ended
   * delivery (`untilRead`) has no next check: it retries under the provider-call policy (1 s
   * doubling to one attempt a minute) until the provider answers, so every destination ends in
   * the provider's state; only a failure that no retry can mend (a revoked key, an unknown
   * delivery) ends it, noted in the timeline.
   */
  async function reconcile(reason: string, untilRead = false): Promise<void> {
    tracker.note(now(), `reconciling: ${reason}`);
    try {
      const options = act.labelled('other', `reconcile: ${reason}`, untilRead ? {} : { scheduleToCloseTimeout: '5 minutes' });
      const record = await act.other.getDelivery.executeWithOptions(options, [state.deliveryId!]);
      takeRecord(record, 'reconciliation');
    } catch (err) {
      if (isCancellation(err)) throw err;
      tracker.note(now(), untilRead ? `the last reconciliation read failed for good (${(err as Error).message})` : `reconciliation read failed (${(err as Error).message}); will try again`);
    }
  }

  async function priceGuard(input: DeliveryWorkflowInput, quote: Quote): Promise<void> {
    const max = input.maxPrice!;
    if (max.currency !== quote.price.currency) {
      throw ApplicationFailure.create({
        type: WORKFLOW_FAILURE_TYPES.currencyMismatch,
        message: `the quote is in ${quote.price.currency} but the maximum price is in ${max.currency}; nothing was created`,
        nonRetryable: true,
      });
    }
    if (withinMaxPrice(quote.price, max)) return;

    setPhase('awaiting_approval');
    search.set({ key: QuotedPrice, value: quote.price.amount });
    const timeoutMs = input.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
    const waiting = tracker.note(now(), `quote ${formatMoney(quote.price)} is over the maximum ${formatMoney(max)}: waiting up to ${Math.round(timeoutMs / 1000)} s for approval`);
    tell('quote.awaiting_approval', { subject: 'quote', quote, maxPrice: max }, waiting);
    const decided = await condition(() => decision !== undefined, timeoutMs, { summary: 'wait for approveQuote or rejectQuote' });
    if (!decided) {
      tracker.note(now(), 'no approval in time: nothing was created');
      setPhase('ended');
      throw ApplicationFailure.create({
        type: WORKFLOW_FAILURE_TYPES.quoteNotApproved,
        message: `the quote of ${formatMoney(quote.price)} is over the maximum of ${formatMoney(max)} and was not approved within ${Math.round(timeoutMs / 1000)} s; nothing was created`,
        nonRetryable: true,
      });
    }
    if (decision && !decision.approved) {
      setPhase('ended');
      throw ApplicationFailure.create({
        type: WORKFLOW_FAILURE_TYPES.quoteRejected,
        message: `the quote of ${formatMoney(quote.price)} was rejected (${decision.reason}); nothing was created`,
        nonRetryable: true,
      });
    }
  }

  async function cancelAtProvider(cancellation: unknown): Promise<void> {
    const requestedAt = now().toISOString();
    setPhase('cancelling');
    try {
      const cancelled = await CancellationScope.nonCancellable(() =>
        act.other.cancelDelivery.executeWithOptions(act.labelled('other', `cancel ${state.deliveryId}`), [state.deliveryId!]),
      );
      takeRecord(cancelled);
      state.cancellation = { requestedAt, outcome: 'cancelled' };
      tell('cancellation.outcome', { subject: 'cancellation', cancellation: state.cancellation }, tracker.note(now(), 'cancelled at the provider'));
      setPhase('ended');
    } catch (err) {
      if (!isConflict(err)) throw err;
      const reason = applicationFailureIn(err)?.message ?? 'the provider refused';
      state.cancellation = { requestedAt, outcome: 'refused', reason };
      tell('cancellation.outcome', { subject: 'cancellation', cancellation: state.cancellation }, tracker.note(now(), `the provider refused to cancel (${reason}); following the delivery to its end`));
      setPhase('following');
      // The workflow's own scope is cancelled now; keep following outside of it.
      await CancellationScope.nonCancellable(() => condition(() => tracker.ended));
      return;
    }
    throw cancellation;
  }
}

function sourceOf(e: TimelineEntry): NotificationChange['source'] {
  return e.source === 'workflow' ? undefined : e.source;
}

function isConflict(err: unknown): boolean {
  return failureTypeIn(err) === PROVIDER_FAILURE_TYPES.conflict;
}

/**
 * The contract's schemas, loaded on first use. Each workflow instance evaluates its own copy of
 * every module it imports at start (the SDK's reusable V8 context keeps module state apart), and
 * zod with all the contract's schemas cost about 27 ms of CPU and 1 MiB of heap per instance
 * (docs/benchmarks.md, scale). Only a workflow asked for an update needs them, so only it pays.
 */
function contractSchemas(): typeof import('../provider/schemas') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a lazy, synchronous load (validators cannot await)
  return require('../provider/schemas') as typeof import('../provider/schemas');
}

/** Synchronous update validator: rejects a bad or disallowed change before it reaches history. */
function validateUpdate(state: DeliveryState, patch: UpdateDeliveryRequest): void {
  const parsed = contractSchemas().UpdateDeliveryRequestSchema.safeParse(patch);
  if (!parsed.success) throw new Error(`invalid update: ${describeIssues(fieldIssues(parsed.error))}`);
  if (state.deliveryId === undefined || state.phase !== 'following') {
    throw new Error(`the delivery cannot be updated yet or any more (it is ${state.phase})`);
  }
  if (state.status === undefined || !canUpdate(state.status)) {
    throw new Error(`the delivery cannot be updated once it is ${state.status}: updates are allowed while CREATED or ASSIGNED`);
  }
  (patch.destinations ?? []).forEach((d, i) => {
    if (!state.destinations.some((x) => x.id === d.id)) throw new Error(`invalid update: destinations[${i}].id: no destination ${d.id} in this delivery`);
  });
}
