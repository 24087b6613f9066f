/**
 * An order system's workflow, in its own namespace (`orders`), that has its delivery made by
 * the delivery orchestrator through the Nexus endpoint `deliveries`: a quote (synchronous), then
 * the delivery (asynchronous: the operation's result is the DeliveryResult once the delivery has
 * ended). The signal `cancelDelivery` cancels the operation, which cancels the delivery; the
 * workflow then reads how it ended with the `status` operation.
 *
 * Workflow code: it imports only the service definition (nexus/service.ts, no zod) and types.
 */
import { CancellationScope, createNexusServiceClient, defineSignal, isCancellation, setHandler } from '@temporalio/workflow';
import { deliveriesService, type DeliveryReferenceInput, type QuoteOutput, type RejectQuoteInput, type UpdateDeliveryInput } from '../../nexus/service';
import type { DeliveryOrder, DeliveryResult, DeliveryState, DeliveryWorkflowInput } from '../../contract/delivery-types';
import type { Price } from '../../provider/schemas';

/** The endpoint `npm start` and `npm run cluster` create. */
export const DELIVERIES_ENDPOINT = 'deliveries';

export const cancelDeliverySignal = defineSignal('cancelDelivery');

export interface OrderInput {
  /** The order system's reference: the delivery is `delivery:<reference>` (`delivery@<account>:<reference>`) on the other side. */
  reference: string;
  /** The courier account to quote and deliver in (absent: `default`); an endpoint with an account list serves only those. */
  account?: string;
  order: DeliveryOrder;
  maxPrice?: Price;
  /** Ask for a quote first and carry it into the delivery (default true). */
  quoteFirst?: boolean;
  /** Default DELIVERIES_ENDPOINT. */
  endpoint?: string;
  /** The delivery's follow-up settings (e.g. `endGraceMs`: its result comes that long after its end). */
  followUp?: DeliveryWorkflowInput['followUp'];
  /** Where the delivery tells the order system of its changes: one of its account's notification endpoints (docs/notifications.md). */
  notify?: DeliveryWorkflowInput['notify'];
}

export interface OrderOutcome {
  reference: string;
  quote?: QuoteOutput;
  /** The delivery's final record, when it ran to its end. */
  delivered?: DeliveryResult;
  /** The delivery's state after the cancellation settled, when the order cancelled it. */
  cancelled?: DeliveryState;
}

export async function orderWorkflow(input: OrderInput): Promise<OrderOutcome> {
  const deliveries = createNexusServiceClient({ service: deliveriesService, endpoint: input.endpoint ?? DELIVERIES_ENDPOINT });
  const { reference, account, order, maxPrice, followUp, notify } = input;

  const quote = input.quoteFirst === false ? undefined : await deliveries.executeOperation('quote', { order, account }, { scheduleToCloseTimeout: '15 minutes' });

  const delivery = new CancellationScope();
  setHandler(cancelDeliverySignal, () => delivery.cancel());
  try {
    const delivered = await delivery.run(async () => {
      const operation = await deliveries.startOperation(
        'createDelivery',
        // A quote with a fingerprint is used by the delivery while valid: no second quote is asked for.
        { reference, account, order, maxPrice, followUp, notify, quote: quote?.fingerprint ? { ...quote, fingerprint: quote.fingerprint } : undefined },
        { summary: `delivery for order ${reference}` },
      );
      return operation.result();
    });
    return { reference, quote, delivered };
  } catch (err) {
    // The operation waits for the delivery workflow to settle its cancellation before it reports it.
    if (!isCancellation(err)) throw err;
    return { reference, quote, cancelled: await deliveries.executeOperation('status', { reference, account }) };
  }
}

/** The synchronous operations on a delivery, by name with their inputs. */
export type DeliveryRequest =
  | { operation: 'status' | 'approveQuote' | 'cancel'; input: DeliveryReferenceInput }
  | { operation: 'rejectQuote'; input: RejectQuoteInput }
  | { operation: 'updateDelivery'; input: UpdateDeliveryInput };

/**
 * One synchronous operation on a delivery, as a support tool of the order system would send it
 * (a person approves a quote over the maximum, changes a package, cancels). Returns the
 * delivery's state as the operation answers it; a refused one fails with the workflow's reason.
 */
export async function deliveryRequestWorkflow(endpoint: string, request: DeliveryRequest): Promise<DeliveryState> {
  const deliveries = createNexusServiceClient({ service: deliveriesService, endpoint });
  const options = { scheduleToCloseTimeout: '1 minute' } as const;
  switch (request.operation) {
    case 'rejectQuote':
      return deliveries.executeOperation('rejectQuote', request.input, options);
    case 'updateDelivery':
      return deliveries.executeOperation('updateDelivery', request.input, options);
    case 'status':
      return deliveries.executeOperation('status', request.input, options);
    case 'approveQuote':
      return deliveries.executeOperation('approveQuote', request.input, options);
    case 'cancel':
      return deliveries.executeOperation('cancel', request.input, options);
  }
}
