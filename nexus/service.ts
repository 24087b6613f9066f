// nexus/: the Nexus service `deliveries` for order systems in other namespaces (definition, input schemas, handlers).
/**
 * The Nexus service `deliveries`: the delivery workflow's operations for order systems that run
 * in their own Temporal namespace (workflows, signals and queries stop at a namespace's edge; a
 * Nexus operation crosses it, started durably, its result called back when it ends).
 *
 * Shared by the callers (order workflows: `createNexusServiceClient({ service: deliveriesService,
 * endpoint })`) and the handlers (nexus/handlers.ts, served by the delivery worker). Imported by
 * workflow code, so it holds only the definition and types: no zod (contract/schemas.ts says why),
 * the checks run in the handlers. docs/any-language.md describes it for other languages, and
 * docs/workflow-contract.json (`x-temporal-nexus`) gives every operation's input and output.
 */
import * as nexus from 'nexus-rpc';
import type { UpdateDeliveryRequest, Quote } from '../provider/schemas';
import type { CarriedQuote, DeliveryOrder, DeliveryResult, DeliveryState, DeliveryWorkflowInput } from '../contract/delivery-types';

export const DELIVERIES_SERVICE = 'deliveries';

/** The input of `createDelivery`: the delivery workflow's own input (contract/schemas.ts, DeliveryWorkflowInput). */
export type CreateDeliveryInput = Omit<DeliveryWorkflowInput, 'resume'>;

/**
 * The input of `quote`: the order, and the courier account to quote it in (absent: `default`).
 * A bare DeliveryOrder, 0.3.0's input, is still taken and quoted in `default`, so that callers
 * built before accounts keep working.
 */
export interface QuoteInput {
  order: DeliveryOrder;
  account?: string;
}

/** Names the delivery of the other operations. */
export interface DeliveryReferenceInput {
  reference: string;
  /** The courier account the delivery belongs to; absent: `default`. */
  account?: string;
}

export interface RejectQuoteInput extends DeliveryReferenceInput {
  /** Why the quote was rejected (at most 500 characters). Default "rejected". */
  reason?: string;
}

export interface UpdateDeliveryInput extends DeliveryReferenceInput {
  update: UpdateDeliveryRequest;
}

/**
 * `quote`'s answer: pass it as createDelivery's `quote` for the same order and no second quote is
 * asked for. It has a fingerprint (CarriedQuote) when the worker paces through the gate, as it does by default.
 */
export type QuoteOutput = Quote & { fingerprint?: CarriedQuote['fingerprint'] };

export const deliveriesService = nexus.service(DELIVERIES_SERVICE, {
  /** Synchronous: a price for the order in its account, through the same paced path as a delivery's quote; creates nothing. */
  quote: nexus.operation<QuoteInput | DeliveryOrder, QuoteOutput>(),
  /**
   * Asynchronous: starts the delivery workflow (`delivery:<reference>`, or `delivery@<account>:<reference>`); its result is the
   * DeliveryResult once the delivery ends. Cancelling the operation cancels the delivery, with the
   * workflow's guarantees (nothing created, cancelled at the provider, or the refusal recorded).
   */
  createDelivery: nexus.operation<CreateDeliveryInput, DeliveryResult>(),
  /** Synchronous: the `status` query. */
  status: nexus.operation<DeliveryReferenceInput, DeliveryState>(),
  /** Synchronous: the `approveQuote` update (only while the delivery awaits approval). */
  approveQuote: nexus.operation<DeliveryReferenceInput, DeliveryState>(),
  /** Synchronous: the `rejectQuote` update (only while the delivery awaits approval). */
  rejectQuote: nexus.operation<RejectQuoteInput, DeliveryState>(),
  /** Synchronous: the `updateDelivery` update (while CREATED or ASSIGNED). */
  updateDelivery: nexus.operation<UpdateDeliveryInput, DeliveryState>(),
  /**
   * Synchronous: asks the delivery workflow to cancel and returns its state as it is then. How the
   * cancellation ended (before creation, cancelled at the provider, refused) is in the state's
   * `cancellation` once settled, and in createDelivery's result.
   */
  cancel: nexus.operation<DeliveryReferenceInput, DeliveryState>(),
});

export type DeliveriesService = typeof deliveriesService;
