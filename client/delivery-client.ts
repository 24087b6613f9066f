/**
 * The client library for order systems: start, quote, follow, update, approve, cancel and watch
 * deliveries. Everything goes through Temporal (the workflow owns the provider calls and their
 * rate limits), except `checkKey`, which asks the provider directly.
 *
 * Input is validated before any workflow starts; an error names the field and the rule.
 */
import {
  Client,
  Connection,
  type ConnectionOptions,
  WorkflowExecutionAlreadyStartedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WithStartWorkflowOperation,
  type WorkflowHandle,
} from '@temporalio/client';
import { connectClient } from '../temporal/client-connection';
import { CancelledFailure, TerminatedFailure } from '@temporalio/common';
import { ProviderClient } from '../provider/client';
import { providerConfigFromEnv, type ProviderConfig } from '../provider/config';
import { pickupTimeIssues } from '../provider/rules';
import {
  ReferenceNumber,
  UpdateDeliveryRequestSchema,
  type FieldIssue,
  type Price,
  type Quote,
  type UpdateDeliveryRequest,
} from '../provider/schemas';
import { describeIssues, fieldIssues } from '../provider/validation';
import { approveQuoteUpdate, rejectQuoteUpdate, startCheckedUpdate, statusQuery, updateDeliveryUpdate } from '../contract/delivery-messages';
import { timelineTotal, type CarriedQuote, type DeliveryOrder, type DeliveryResult, type DeliveryState, type DeliveryWorkflowInput, type FollowUpSettings, type TimelineEntry } from '../contract/delivery-types';
import { DeliveryOrderSchema, DeliveryWorkflowInputSchema } from '../contract/schemas';
import { deliveryStartOptions } from '../workflows/start-options';
import { quoteFingerprint } from '../workflows/quote-fingerprint';
import * as SearchAttributes from '../contract/search-attributes';
import { accountPriority } from '../contract/priorities';
import { applicationFailureIn, failureTypeIn, reasonOf } from '../contract/failure-cause';
import { UNKNOWN_ACCOUNT, WORKFLOW_FAILURE_TYPES } from '../contract/failures';
import { deliveryWorkflowId, parseDeliveryWorkflowId, startAccount } from '../contract/workflow-ids';
import { ACCOUNT_ID, ACCOUNT_ID_RULE } from '../contract/accounts';
import { dataConverterFromEnv } from '../temporal/payload-codec';
import type { NotifySettings } from '../contract/notification-types';
import { temporalSettingsFromEnv, type TemporalSettings } from '../temporal/connection';
import { startTraceId } from './trace-id';
import { activeTracing, installTracing, tracingClientInterceptors } from '../tracing/install';

/** Bad input: nothing was started or changed. `issues` name each field and rule. */
export class InvalidInputError extends Error {
  constructor(
    what: string,
    readonly issues: FieldIssue[],
  ) {
    super(`invalid ${what}: ${describeIssues(issues)}`);
    this.name = 'InvalidInputError';
  }
}

/**
 * A start (or a quote) the workers refused: an account their registry does not have (or no longer
 * has), or any other issue of the workflow's start check (docs/architecture.md, "Refused before it
 * starts"). Nothing was quoted or created and no delivery is open; `issues` name each field.
 */
export class DeliveryRefusedError extends InvalidInputError {
  constructor(
    readonly account: string,
    issues: FieldIssue[],
    readonly reference?: string,
  ) {
    super(`${reference === undefined ? 'quote' : `delivery ${reference}`} for account ${account}`, issues);
    this.name = 'DeliveryRefusedError';
  }
}

export class DeliveryNotFoundError extends Error {
  constructor(
    readonly reference: string,
    readonly account: string,
  ) {
    super(`no delivery with reference ${reference} in account ${account}`);
    this.name = 'DeliveryNotFoundError';
  }
}

/** The workflow or the provider refused a request (an update, an approval, a key, a quote). */
export class DeliveryRequestRejectedError extends Error {
  constructor(
    message: string,
    readonly type?: string,
  ) {
    super(message);
    this.name = 'DeliveryRequestRejectedError';
  }
}

export interface StartOptions {
  /** Chosen by the order system: Unicode, 1 to 64 UTF-16 code units, no control characters (README "References"). Starting twice with it in one account never makes a second delivery. */
  reference: string;
  /** The courier account (docs/accounts.md); absent: the client's own (`account` option, default `default`). */
  account?: string;
  /** The most to pay without approval; over it the workflow waits for approveQuote. */
  maxPrice?: Price;
  approvalTimeoutMs?: number;
  /** When to ask the provider instead of waiting for webhooks (defaults suit production). */
  followUp?: Partial<FollowUpSettings>;
  /** A quote from `quote()` for this same order: used while valid, so no second quote is asked for. */
  quote?: CarriedQuote;
  /**
   * Who is told of every change: an order workflow by signal (`workflowId`, `signal`), an HTTP
   * endpoint by the name the operator configured (`endpoint`; never a URL). docs/notifications.md.
   */
  notify?: NotifySettings;
}

export interface StartedDelivery {
  reference: string;
  account: string;
  workflowId: string;
  /** true when a delivery with this reference existed already; nothing new was started. */
  alreadyStarted: boolean;
  /**
   * true when a worker's start check passed before this returned; false when none answered within
   * `startCheckTimeoutMs` (no worker polling): the delivery is started, and its workflow refuses it
   * itself, as its failure, if it must.
   */
  checked: boolean;
}

export interface DeliverySummary {
  reference: string;
  account: string;
  workflowId: string;
  workflowStatus: string;
  deliveryStatus?: string;
  deliveryId?: string;
  startTime: Date;
}

export interface WatchUpdate {
  state: DeliveryState;
  /** Timeline entries that are new since the previous update. */
  changes: TimelineEntry[];
}

/** The workflow's own contract (contract/schemas.ts): the client refuses what the workflow would refuse, before starting it. */
const StartOptionsSchema = DeliveryWorkflowInputSchema.pick({ reference: true, account: true, maxPrice: true, approvalTimeoutMs: true, followUp: true, quote: true, notify: true });

/** A delivery: its reference, in the client's account; or its reference and account. */
export type DeliveryRef = string | { reference: string; account?: string };

export interface DeliveryClientOptions {
  temporal: Client;
  taskQueue: string;
  /** The account of every call that names none (DELIVERY_ACCOUNT for the CLI); default `default`. */
  account?: string;
  /** For checkKey; created from the environment when absent. */
  provider?: ProviderClient;
  /** Closed by close(), when the client made it. */
  connection?: Connection;
  /** Follow-up settings for every start of this client; a start's own `followUp` wins field by field. */
  followUp?: Partial<FollowUpSettings>;
  /** How long startDelivery waits for a worker's start check (default 10 s); see StartedDelivery.checked. */
  startCheckTimeoutMs?: number;
}

export const DEFAULT_START_CHECK_TIMEOUT_MS = 10_000;

export class DeliveryClient {
  private readonly temporal: Client;
  private readonly taskQueue: string;
  private provider?: ProviderClient;
  private readonly connection?: Connection;
  private readonly followUp?: Partial<FollowUpSettings>;
  private readonly account: string;
  private readonly startCheckTimeoutMs: number;

  constructor(o: DeliveryClientOptions) {
    this.account = startAccount(o);
    this.startCheckTimeoutMs = o.startCheckTimeoutMs ?? DEFAULT_START_CHECK_TIMEOUT_MS;
    this.followUp = o.followUp;
    this.temporal = o.temporal;
    this.taskQueue = o.taskQueue;
    this.provider = o.provider;
    this.connection = o.connection;
  }

  /**
   * Connects with the environment's settings; with none, to the local stack. With
   * OTEL_EXPORTER_OTLP_ENDPOINT set, each call is traced and its trace carried into the workflow
   * (tracing/install.ts); a caller with its own OpenTelemetry SDK passes its own `temporal` Client
   * with the SDK's OpenTelemetryWorkflowClientInterceptor instead (docs/monitoring.md, "Traces").
   */
  static async connect(settings: { temporal?: TemporalSettings; provider?: ProviderConfig; account?: string; startCheckTimeoutMs?: number } = {}): Promise<DeliveryClient> {
    const t = settings.temporal ?? temporalSettingsFromEnv();
    const dataConverter = dataConverterFromEnv();
    installTracing('delivery-client');
    const connection = await connectClient({ ...(t.connectionOptions as ConnectionOptions), connectTimeout: 5_000 });
    const provider = settings.provider ? new ProviderClient(settings.provider) : undefined;
    return new DeliveryClient({ temporal: new Client({ connection, namespace: t.namespace, dataConverter, interceptors: tracingClientInterceptors() }), taskQueue: t.taskQueue, connection, provider, account: settings.account, startCheckTimeoutMs: settings.startCheckTimeoutMs });
  }

  async close(): Promise<void> {
    await this.provider?.close();
    await this.connection?.close();
    await activeTracing()?.spanProcessor.forceFlush(); // a short-lived caller (the CLI) exits right after
  }

  /**
   * Starts the delivery and waits for the worker's start check (Update-with-Start): a start the
   * workers refuse (an account their registry does not have, a field their check refuses) throws
   * DeliveryRefusedError, and the refused workflow has ended already.
   */
  startDelivery(order: DeliveryOrder, options: StartOptions): Promise<StartedDelivery> {
    return this.start(order, options, false);
  }

  private async start(order: DeliveryOrder, options: StartOptions, afterRefusal: boolean): Promise<StartedDelivery> {
    const followUp = this.followUp || options.followUp ? { ...this.followUp, ...options.followUp } : undefined;
    const input = validateStart(order, { ...options, account: options.account ?? this.account, followUp }, Date.now());
    const account = startAccount(input);
    const workflowId = deliveryWorkflowId(input.reference, account);
    const started = (checked: boolean, alreadyStarted = false): StartedDelivery => ({ reference: input.reference, account, workflowId, alreadyStarted, checked });
    // FAIL: a running delivery with this reference is not sent the update; a closed one is refused by
    // REJECT_DUPLICATE, unless it was a refused start (afterRefusal: its run may be followed).
    const reuse = afterRefusal ? ({ workflowIdReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY' } as const) : {};
    const startWorkflowOperation = new WithStartWorkflowOperation('delivery', { taskQueue: this.taskQueue, ...deliveryStartOptions(input), ...reuse, workflowIdConflictPolicy: 'FAIL' });
    const asked = Date.now();
    try {
      await this.temporal.withDeadline(asked + this.startCheckTimeoutMs, () => this.temporal.workflow.executeUpdateWithStart(startCheckedUpdate, { startWorkflowOperation }));
      return started(true);
    } catch (err) {
      // A refused start of this reference (the account added since, a field corrected) left a failed
      // run that quoted and created nothing: this start takes the reference, once.
      if (err instanceof WorkflowExecutionAlreadyStartedError && !afterRefusal && (await this.refusedBefore(workflowId))) return this.start(order, options, true);
      if (err instanceof WorkflowExecutionAlreadyStartedError) return started(true, true);
      if (err instanceof WorkflowUpdateFailedError && failureTypeIn(err.cause) === WORKFLOW_FAILURE_TYPES.invalidInput) {
        throw new DeliveryRefusedError(account, issuesOf(err.cause) ?? [{ field: 'input', message: reasonOf(err.cause)?.message ?? err.message }], input.reference);
      }
      // No worker answered in time: started all the same if the server took the start. The start
      // and the update are one call, so a deadline may leave the start's answer unread as well: ask
      // the server: a workflow of this ID started since this call is this start's (conflict policy
      // FAIL refuses a running one, REJECT_DUPLICATE a closed one; 5 s for the server's clock).
      if ((err instanceof WorkflowUpdateRPCTimeoutOrCancelledError || isDeadline(err)) && (await this.temporal.workflow.getHandle(workflowId).describe().then((d) => d.startTime.getTime() >= asked - 5_000, () => false))) return started(false);
      throw err;
    }
  }

  /** Whether the workflow's latest run is a refused start: failed by its start check (InvalidDeliveryInput), which quotes and creates nothing. */
  private async refusedBefore(workflowId: string): Promise<boolean> {
    const d = await this.temporal.workflow.getHandle(workflowId).describe();
    if (d.status.name !== 'FAILED') return false;
    const { history } = await this.temporal.workflowService.getWorkflowExecutionHistoryReverse({ namespace: this.temporal.options.namespace, execution: { workflowId, runId: d.runId }, maximumPageSize: 1 });
    return history?.events?.[0]?.workflowExecutionFailedEventAttributes?.failure?.applicationFailureInfo?.type === WORKFLOW_FAILURE_TYPES.invalidInput;
  }

  /**
   * A price for this order, without creating anything (same rate-limited path as deliveries).
   * Pass it to startDelivery({ quote }) for the same order and no second quote is asked for.
   */
  async quote(order: DeliveryOrder, { account = this.account }: { account?: string } = {}): Promise<Quote & { fingerprint?: string }> {
    const parsed = DeliveryOrderSchema.safeParse(order);
    if (!parsed.success) throw new InvalidInputError('order', fieldIssues(parsed.error));
    if (!ACCOUNT_ID.test(account)) throw new InvalidInputError('account', [{ field: 'account', message: ACCOUNT_ID_RULE }]);
    try {
      return await this.temporal.workflow.execute('quoteOnly', {
        taskQueue: this.taskQueue,
        workflowId: `quote:${crypto.randomUUID()}`,
        // The account by argument: a quote's workflow ID does not name it.
        args: [parsed.data, { account }],
        staticSummary: `quote · ${parsed.data.destinations.length} stop(s)${parsed.data.is_food ? ' · food' : ''} · account ${account}`,
        priority: accountPriority(parsed.data.is_food, account),
      });
    } catch (err) {
      if (err instanceof WorkflowFailedError && failureTypeIn(err.cause) === UNKNOWN_ACCOUNT) {
        throw new DeliveryRefusedError(account, [{ field: 'account', message: reasonOf(err.cause)?.message ?? err.message }]);
      }
      throw explainFailure(err);
    }
  }

  async getStatus(delivery: DeliveryRef): Promise<DeliveryState> {
    return this.withHandle(delivery, (h) => h.query(statusQuery));
  }

  /** The id of the trace the delivery's start carried (docs/monitoring.md, "A delivery's trace"); undefined when it was started without tracing. */
  async traceId(delivery: DeliveryRef): Promise<string | undefined> {
    return this.withHandle(delivery, (h) => startTraceId(this.temporal, h.workflowId));
  }

  /** Waits for the delivery to end and returns its final record. */
  async result(delivery: DeliveryRef): Promise<DeliveryResult> {
    return this.withHandle(delivery, async (h) => {
      try {
        return (await h.result()) as DeliveryResult;
      } catch (err) {
        if (err instanceof WorkflowFailedError && (err.cause instanceof CancelledFailure || err.cause instanceof TerminatedFailure)) {
          return h.query(statusQuery);
        }
        throw explainFailure(err);
      }
    });
  }

  async updateDelivery(delivery: DeliveryRef, patch: UpdateDeliveryRequest): Promise<DeliveryState> {
    const parsed = UpdateDeliveryRequestSchema.safeParse(patch);
    if (!parsed.success) throw new InvalidInputError('update', fieldIssues(parsed.error));
    return this.withHandle(delivery, (h) => h.executeUpdate(updateDeliveryUpdate, { args: [parsed.data] }));
  }

  async approveQuote(delivery: DeliveryRef): Promise<DeliveryState> {
    return this.withHandle(delivery, (h) => h.executeUpdate(approveQuoteUpdate));
  }

  async rejectQuote(delivery: DeliveryRef, reason = 'rejected'): Promise<DeliveryState> {
    return this.withHandle(delivery, (h) => h.executeUpdate(rejectQuoteUpdate, { args: [reason] }));
  }

  /**
   * Cancels the delivery (workflow cancellation). With `wait`, returns the state once the
   * workflow has settled it: cancelled, cancelled before creation, or refused by the provider
   * (then the workflow follows the delivery to its real end and the state says so).
   */
  async cancelDelivery(delivery: DeliveryRef, { wait = true }: { wait?: boolean } = {}): Promise<DeliveryState> {
    return this.withHandle(delivery, async (h) => {
      await h.cancel();
      if (!wait) return h.query(statusQuery);
      const deadline = Date.now() + 120_000;
      for (;;) {
        const s = await h.query(statusQuery);
        if (s.cancellation || s.phase === 'ended') return s;
        if (Date.now() > deadline) return s;
        await sleep(200);
      }
    });
  }

  /**
   * Yields each change of the delivery until it ends (or `signal` aborts), asking the workflow
   * every `intervalMs`: for a person at a terminal. Order systems are told instead, by signal or
   * webhook (`notify`), and never poll (docs/notifications.md).
   */
  async *watch(delivery: DeliveryRef, { intervalMs = 500, signal }: { intervalMs?: number; signal?: AbortSignal } = {}): AsyncGenerator<WatchUpdate> {
    const { reference, account } = this.ref(delivery);
    let seen = 0;
    let lastPhase: string | undefined;
    for (;;) {
      if (signal?.aborted) return;
      const state = await this.getStatus({ reference, account });
      // Positions count dropped entries too: the timeline keeps only its newest entries.
      if (timelineTotal(state) > seen || state.phase !== lastPhase) {
        yield { state, changes: newSince(state, seen) };
        seen = timelineTotal(state);
        lastPhase = state.phase;
      }
      if (state.phase === 'ended') return;
      const description = await this.temporal.workflow.getHandle(deliveryWorkflowId(reference, account)).describe();
      if (description.status.name !== 'RUNNING') {
        const final = await this.getStatus({ reference, account });
        if (timelineTotal(final) > seen) yield { state: final, changes: newSince(final, seen) };
        return;
      }
      await sleep(intervalMs, signal);
    }
  }

  /**
   * Deliveries known to Temporal, newest first, found through their search attributes. `account`:
   * that account's only (a `default` delivery has DeliveryAccount from its first upsert on; before
   * it, from its workflow ID's form).
   */
  async list({ status, account, limit = 50 }: { status?: string; account?: string; limit?: number } = {}): Promise<DeliverySummary[]> {
    const clauses = [`WorkflowType = 'delivery'`];
    if (status) clauses.push(`DeliveryStatus = '${status.replace(/'/g, '')}'`);
    if (account !== undefined) {
      if (!ACCOUNT_ID.test(account)) throw new InvalidInputError('account', [{ field: 'account', message: ACCOUNT_ID_RULE }]);
      // Without the attribute yet: a start that did not set it, before its first upsert; its ID says whose it is.
      clauses.push(`(DeliveryAccount = '${account}' OR DeliveryAccount IS NULL)`);
    }
    const out: DeliverySummary[] = [];
    for await (const wf of this.temporal.workflow.list({ query: clauses.join(' AND ') })) {
      const parsed = parseDeliveryWorkflowId(wf.workflowId);
      // An ID not of our forms (a start the workflow refused) is this account's only if its attribute says so.
      const owner = parsed?.account ?? wf.typedSearchAttributes.get(SearchAttributes.DeliveryAccount);
      if (account !== undefined && owner !== account) continue;
      out.push({
        reference: parsed?.reference ?? wf.workflowId,
        account: owner ?? '(none)',
        workflowId: wf.workflowId,
        workflowStatus: wf.status.name,
        deliveryStatus: wf.typedSearchAttributes.get(SearchAttributes.DeliveryStatus),
        deliveryId: wf.typedSearchAttributes.get(SearchAttributes.DeliveryId),
        startTime: wf.startTime,
      });
      if (out.length >= limit) break;
    }
    return out;
  }

  /** Resolves when the provider accepts the configured API key; rejects with a clear reason if not. */
  async checkKey(): Promise<{ valid: true; baseUrl: string }> {
    this.provider ??= new ProviderClient(providerConfigFromEnv());
    await this.provider.checkKey();
    return { valid: true, baseUrl: this.provider.baseUrl };
  }

  /** The reference and account a call names, checked: an error names the field. */
  private ref(delivery: DeliveryRef): { reference: string; account: string } {
    const { reference, account = this.account } = typeof delivery === 'string' ? { reference: delivery } : delivery;
    const ref = ReferenceNumber.safeParse(reference);
    if (!ref.success) throw new InvalidInputError('reference', fieldIssues(ref.error).map((i) => ({ ...i, field: 'reference' })));
    if (!ACCOUNT_ID.test(account)) throw new InvalidInputError('account', [{ field: 'account', message: ACCOUNT_ID_RULE }]);
    return { reference, account };
  }

  private async withHandle<T>(delivery: DeliveryRef, fn: (h: WorkflowHandle) => Promise<T>): Promise<T> {
    const { reference, account } = this.ref(delivery);
    try {
      return await fn(this.temporal.workflow.getHandle(deliveryWorkflowId(reference, account)));
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new DeliveryNotFoundError(reference, account);
      throw explainFailure(err);
    }
  }
}

function validateStart(order: DeliveryOrder, options: StartOptions, nowMs: number): DeliveryWorkflowInput {
  const issues: FieldIssue[] = [];
  const o = StartOptionsSchema.safeParse(options);
  if (!o.success) issues.push(...fieldIssues(o.error));
  if (order && typeof order === 'object' && 'reference_number' in order) {
    issues.push({ field: 'order.reference_number', message: 'is set from the reference option; leave it out of the order' });
  }
  const parsed = DeliveryOrderSchema.safeParse(order);
  if (!parsed.success) issues.push(...fieldIssues(parsed.error).map((i) => ({ ...i, field: `order.${i.field}` })));
  else issues.push(...pickupTimeIssues(parsed.data.desired_pickup_time, nowMs).map((i) => ({ ...i, field: `order.${i.field}` })));
  if (o.success && parsed.success && o.data.quote) {
    if (o.data.quote.fingerprint !== quoteFingerprint(parsed.data)) issues.push({ field: 'quote', message: 'was obtained for other inputs than this order' });
    if (Date.parse(o.data.quote.expires_at) <= nowMs) issues.push({ field: 'quote.expires_at', message: 'has passed: ask for a new quote' });
  }
  if (issues.length > 0 || !o.success || !parsed.success) throw new InvalidInputError('delivery', issues);
  const { quote, ...rest } = o.data;
  return { reference: rest.reference, ...(rest.account !== undefined && { account: rest.account }), order: parsed.data, maxPrice: rest.maxPrice, approvalTimeoutMs: rest.approvalTimeoutMs, followUp: rest.followUp, quote, notify: rest.notify };
}

/** The `{ field, message }` issues an InvalidDeliveryInput failure carries (contract/failures.ts). */
function issuesOf(failure: unknown): FieldIssue[] | undefined {
  const details = applicationFailureIn(failure)?.details?.[0];
  return Array.isArray(details) && details.length > 0 ? (details as FieldIssue[]) : undefined;
}

function isDeadline(err: unknown): boolean {
  return (err as { code?: number } | undefined)?.code === 4 || /deadline/i.test((err as Error | undefined)?.message ?? ''); // gRPC DEADLINE_EXCEEDED
}

/** Turns Temporal's failure wrappers into the reason a person needs. */
function explainFailure(err: unknown): unknown {
  if (err instanceof WorkflowUpdateFailedError || err instanceof WorkflowFailedError) {
    return new DeliveryRequestRejectedError(reasonOf(err.cause)?.message ?? err.message, failureTypeIn(err.cause));
  }
  return err;
}

/** Ends early when `signal` aborts; its listener is removed either way (one per poll would pile up on a long watch). */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The timeline entries after position `seen` that the state still holds. */
function newSince(state: DeliveryState, seen: number): DeliveryState['timeline'] {
  return state.timeline.slice(Math.max(0, seen - (state.timelineDropped?.count ?? 0)));
}
