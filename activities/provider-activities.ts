// activities/: provider calls as activities, the gate's messages as local activities, the start checks.
/**
 * Activities: one per provider call, built by a factory that receives the API client (so the
 * worker owns the key and tests can pass a client pointed at the simulator), or one client per
 * courier account: each call then uses the client of the account it works for
 * (activities/account-of.ts). Each honours the activity's cancellation signal and turns provider
 * errors into typed failures.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { ApplicationFailureCategory } from '@temporalio/common';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { ProviderClient } from '../provider/client';
import { isProviderError } from '../provider/errors';
import type { CreateDeliveryRequest, DeliveryRecord, Quote, UpdateDeliveryRequest } from '../provider/schemas';
import { SLOT_MISSED, gateAnswerSignal, type CreationTell } from '../contract/gate-messages';
import { withProviderFailures } from './failures';
import { ACCOUNT_PAUSED } from '../contract/failures';
import { UnknownAccountError } from '../accounts/registry';
import { activityAccount, unknownAccount } from './account-of';
import { AccountPauses, countPause, PAUSE_LINES } from './account-pauses';

/** The API client of each account (accounts/provider-clients.ts); a single client serves every account. */
export type ProviderFor = ProviderClient | ((account: string) => ProviderClient);

export interface CreateDeliveryInput {
  request: CreateDeliveryRequest & { reference_number: string };
  /** Derived from the workflow ID: every attempt, and every run of the same workflow, sends the same key. */
  idempotencyKey: string;
}

/** When a call the pacing gate makes may be sent (workflows/gate.ts), from the activity's start: not before `delayMs`, and only if the whole HTTP call ends within `sendWithinMs`. */
export type SlotTiming = { delayMs: number; sendWithinMs: number };

/** `lookFirst`: an earlier attempt may have reached the provider, so look the delivery up before creating. */
export type CreateInGateInput = CreateDeliveryInput & { lookFirst: boolean };

/**
 * `httpTimeoutMs`: the API client's timeout of one call; `pauses`: this process's paused accounts
 * (tests give their own clock); `accountLabel`: an account's metric label (the worker's
 * AccountLabels, metrics/account.ts; absent, its id: a process with no metrics of its own).
 */
export function createProviderActivities(providers: ProviderFor, o: { httpTimeoutMs?: number; pauses?: AccountPauses; accountLabel?: (account: string) => string } = {}) {
  const accountLabel = o.accountLabel ?? ((account: string) => account);
  const signal = () => Context.current().cancellationSignal;
  const pauses = o.pauses ?? new AccountPauses();
  /** The client of the account this activity works for; `explicit` from a workflow whose ID names none. */
  const providerFor = (explicit?: string, account = activityAccount(explicit)): ProviderClient => {
    if (typeof providers !== 'function') return providers;
    try {
      return providers(account);
    } catch (err) {
      if (err instanceof UnknownAccountError) throw unknownAccount(account);
      throw err;
    }
  };
  /**
   * Every call with an account's key, the gate's and the others, keeps this process's pause of
   * the account (activities/account-pauses.ts), the one record of it: a 401 starts it (one log
   * line, one count), any answer given to the key (below 500, not 401) ends it. `refusedAs`: what
   * a 401 throws instead, given the delay until the account's next probe.
   */
  const keyed = async <R>(account: string, call: () => Promise<R>, refusedAs?: (retryInMs: number) => Error): Promise<R> => {
    try {
      const result = await call();
      keyAccepted(account);
      return result;
    } catch (err) {
      if (isProviderError(err) && err.status !== undefined && err.status < 500) {
        if (err.kind !== 'unauthorized') keyAccepted(account);
        else {
          const retryInMs = keyRefused(account);
          if (refusedAs) throw refusedAs(retryInMs);
        }
      }
      throw err;
    }
  };
  const keyRefused = (account: string): number => {
    const { started, retryInMs } = pauses.refused(account);
    if (started) {
      const { log, metricMeter } = Context.current();
      log.warn(PAUSE_LINES.paused, { account, probeMs: pauses.probeMs });
      countPause(metricMeter, accountLabel(account));
    }
    return retryInMs;
  };
  const keyAccepted = (account: string) => {
    const pausedMs = pauses.accepted(account);
    if (pausedMs !== undefined) Context.current().log.info(PAUSE_LINES.resumed, { account, pausedMs });
  };
  /**
   * A call outside the pacing gate: while its account is paused, only the period's probe goes out
   * and the rest fail at once, retryable, their next attempt after the probe. (The gate holds its
   * own queue on a 401 instead, one call per period: workflows/gate-state.ts.)
   */
  const paused = async <R>(call: (provider: ProviderClient) => Promise<R>, explicit?: string): Promise<R> => {
    const account = activityAccount(explicit);
    const held = pauses.admit(account);
    if (held) throw accountPaused(account, held.retryInMs, 'waits for the next probe');
    return keyed(account, () => call(providerFor(explicit, account)), (retryInMs) => accountPaused(account, retryInMs, 'was refused'));
  };

  // A slot is timed on the monotonic clock, never the wall clock, which may be off (docs/deploying.md, "Clocks").
  const now = () => performance.now();
  /** Waits for the slot, then returns a check to run right before each send, and the time left of the slot's call. */
  const inSlot = async ({ delayMs, sendWithinMs }: SlotTiming) => {
    const start = now();
    if (delayMs > 0) await Context.current().sleep(delayMs);
    const check = () => {
      const late = now() - start + (o.httpTimeoutMs ?? 10_000) - sendWithinMs;
      if (late > 0) throw ApplicationFailure.create({ type: SLOT_MISSED, message: `not sent: the call could have ended ${Math.round(late)} ms after its slot`, nonRetryable: true });
    };
    return Object.assign(check, { leftMs: () => sendWithinMs - (now() - start) });
  };

  /**
   * Sends the gate's answer to the delivery workflow that asked, within the time left of the
   * activity (its schedule-to-close covers the slot's call) and a second at most. False when it
   * could not: the gate then answers by its own activity (a second answer is never read).
   */
  const tellCreated = async (tell: CreationTell, delivery: DeliveryRecord, leftMs: number): Promise<boolean> => {
    const waitMs = Math.min(1_000, leftMs - 100);
    if (waitMs <= 0) return false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const sent = Context.current()
      .client.workflow.getHandle(tell.workflowId)
      .signal(gateAnswerSignal, { ...tell.answer, delivery })
      .then(
        () => true,
        (err: unknown) => err instanceof WorkflowNotFoundError, // a workflow that is gone needs no answer
      );
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), waitMs)));
    return Promise.race([sent, late]).finally(() => clearTimeout(timer));
  };

  /** Finds the delivery an earlier attempt created and lost the answer of, if there is one. */
  const findEarlier = async (reference: string): Promise<DeliveryRecord | undefined> => {
    // The idempotency key covers that at a provider that honours it; for one that does not, look first.
    const existing = await providerFor().findDeliveryByReference(reference, { signal: signal() });
    if (existing) Context.current().log.info('found the delivery an earlier attempt created', { deliveryId: existing.id });
    return existing;
  };

  return {
    /** `account`: from a quote without a delivery (quoteOnly), whose workflow ID names none. */
    quoteDelivery: withProviderFailures(async (request: CreateDeliveryRequest, by?: { account?: string }): Promise<Quote> => paused((p) => p.quote(request, { signal: signal() }), by?.account)),

    createDelivery: withProviderFailures(async ({ request, idempotencyKey }: CreateDeliveryInput): Promise<DeliveryRecord> =>
      paused(async (provider) => {
        const ctx = Context.current();
        const existing = ctx.info.attempt > 1 ? await findEarlier(request.reference_number) : undefined;
        if (existing) return existing;
        const { delivery, replayed } = await provider.createDelivery(request, { idempotencyKey, signal: signal() });
        ctx.log.info('delivery created at the provider', { deliveryId: delivery.id, replayed });
        return delivery;
      }),
    ),

    /** A quote the pacing gate makes: one attempt in one slot. */
    quoteInGate: withProviderFailures(async (request: CreateDeliveryRequest, timing: SlotTiming): Promise<Quote> => {
      const check = await inSlot(timing);
      check();
      const account = activityAccount();
      return keyed(account, () => providerFor(undefined, account).quote(request, { signal: signal() }));
    }),

    /**
     * A creation the pacing gate makes; the lookup by reference uses the other calls' budget. With
     * `tell`, the activity answers the delivery workflow itself and says whether it did, and how
     * long that took after the provider's answer (`afterCallMs`, the worker's monotonic clock): the
     * gate's slot counts from the call's end, not from the tell's.
     */
    createInGate: withProviderFailures(async ({ request, idempotencyKey, lookFirst }: CreateInGateInput, timing: SlotTiming, tell?: CreationTell): Promise<DeliveryRecord | { delivery: DeliveryRecord; told: boolean; afterCallMs: number }> => {
      const check = await inSlot(timing);
      let delivery = lookFirst ? await findEarlier(request.reference_number) : undefined;
      if (!delivery) {
        check();
        const account = activityAccount();
        const created = await keyed(account, () => providerFor(undefined, account).createDelivery(request, { idempotencyKey, signal: signal() }));
        delivery = created.delivery;
        // The gate made the call: say for which delivery workflow (the key is its ID).
        Context.current().log.info('delivery created at the provider', { deliveryId: delivery.id, replayed: created.replayed, deliveryWorkflowId: idempotencyKey });
      }
      if (!tell) return delivery;
      const called = now();
      const told = await tellCreated(tell, delivery, check.leftMs());
      return { delivery, told, afterCallMs: Math.round(now() - called) };
    }),

    getDelivery: withProviderFailures(async (deliveryId: string): Promise<DeliveryRecord> => paused((p) => p.getDelivery(deliveryId, { signal: signal() }))),

    updateDelivery: withProviderFailures(
      async ({ deliveryId, patch }: { deliveryId: string; patch: UpdateDeliveryRequest }): Promise<DeliveryRecord> =>
        paused((p) => p.updateDelivery(deliveryId, patch, { signal: signal() })),
    ),

    cancelDelivery: withProviderFailures(async (deliveryId: string): Promise<DeliveryRecord> => paused((p) => p.cancelDelivery(deliveryId, { signal: signal() }))),
  };
}

export type ProviderActivities = ReturnType<typeof createProviderActivities>;

/**
 * Retryable, never final: the delivery's own retry policy brings the call back after the account's
 * next probe. Benign: the pause has its own line and count, so the SDK logs each held attempt at debug.
 */
function accountPaused(account: string, retryInMs: number, what: string): ApplicationFailure {
  return ApplicationFailure.create({
    category: ApplicationFailureCategory.BENIGN,
    type: ACCOUNT_PAUSED,
    message: `courier account ${account} is paused: the courier refuses its API key (401); this call ${what}, next attempt in ${Math.round(retryInMs / 1000)} s`,
    nonRetryable: false,
    nextRetryDelay: retryInMs,
  });
}
