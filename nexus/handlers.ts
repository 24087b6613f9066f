/**
 * The Nexus service `deliveries` (nexus/service.ts), served by the delivery worker on its
 * workflow task queue. Each operation does what the client library does, with the same checks
 * and failure types as the workflow:
 *  - a refused request never reaches a workflow (nexus/refusals.ts): a bad input, an unknown or
 *    removed account, any start the workflow's start check would refuse, an account the endpoint
 *    it came through does not serve; each a non-retryable handler error naming the account and field;
 *  - createDelivery is backed by the delivery workflow itself (WorkflowRunOperationHandler), so
 *    its result is the workflow's and cancelling the operation cancels the workflow;
 *  - the synchronous operations call the query and updates through the worker's client; a refused
 *    update fails the operation with the workflow's own failure as its cause.
 */
import * as nexus from 'nexus-rpc';
import { getClient, operationInfo, startWorkflow, WorkflowRunOperationHandler } from '@temporalio/nexus';
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { applicationFailureIn } from '../contract/failure-cause';
import { approveQuoteUpdate, rejectQuoteUpdate, statusQuery, updateDeliveryUpdate } from '../contract/delivery-messages';
import type { DeliveryState } from '../contract/delivery-types';
import { DeliveryOrderSchema } from '../contract/schemas';
import { accountPriority } from '../contract/priorities';
import { deliveryWorkflowId, startAccount } from '../contract/workflow-ids';
import { deliveryStartOptions } from '../workflows/start-options';
import type { delivery, quoteOnly } from '../workflows/delivery';
import { checkCreateDelivery, checkEndpoint, checkQuote, parse, type NexusRefusalChecks } from './refusals';
import { DeliveryReferenceInputSchema, QuoteInputSchema, RejectQuoteInputSchema, UpdateDeliveryInputSchema } from './schemas';
import { deliveriesService, type CreateDeliveryInput, type DeliveryReferenceInput, type QuoteInput } from './service';

/** The failure type of a createDelivery whose reference was used already (a reference is used once, ever). */
export const DELIVERY_ALREADY_STARTED = 'DeliveryAlreadyStarted';

/**
 * How long the workflow behind a quote may run: a quote normally ends within its slot's wait; one
 * whose account is removed from the registry after the handler's check would otherwise retry its
 * call for ever, with nobody waiting for it (the caller's operation times out long before).
 */
const QUOTE_TIMEOUT = '1 hour';

/** The failure type of an update or cancel sent to a delivery whose workflow has ended. */
export const DELIVERY_ENDED = 'DeliveryEnded';

/**
 * Runs `fn` on the delivery's workflow. An unknown reference is NOT_FOUND; a delivery whose
 * workflow has ended (updates and cancellation need a running one) fails the operation with
 * DeliveryEnded; a refused update fails it with the workflow's failure as cause.
 */
async function onDelivery<T>(checks: NexusRefusalChecks, { reference, account }: DeliveryReferenceInput, fn: (h: WorkflowHandle) => Promise<T>): Promise<T> {
  checkEndpoint(checks, operationInfo().endpoint, account);
  const handle = getClient().workflow.getHandle(deliveryWorkflowId(reference, account));
  try {
    return await fn(handle);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) {
      const ended = await handle.describe().then(
        (d) => d.status.name,
        () => undefined,
      );
      if (ended === undefined) throw new nexus.HandlerError('NOT_FOUND', `no delivery with reference ${reference}`, { retryableOverride: false });
      const cause = ApplicationFailure.create({ type: DELIVERY_ENDED, message: `the delivery ${reference} has ended (its workflow is ${ended}): the status operation says how`, nonRetryable: true });
      throw new nexus.OperationError('failed', cause.message, { cause });
    }
    if (err instanceof WorkflowUpdateFailedError) throw new nexus.OperationError('failed', err.cause?.message ?? err.message, { cause: err.cause });
    throw err;
  }
}

/** 0.3.0's quote input, the bare order, has no `order` field (DeliveryOrder is strict): the two forms never mix. */
const isQuoteInput = (input: unknown): input is QuoteInput => typeof input === 'object' && input !== null && 'order' in input;

/** The service's handlers, checking each request against the worker's registry, notification endpoints and endpoint account lists. */
export function createDeliveriesServiceHandler(checks: NexusRefusalChecks = {}) {
  return nexus.serviceHandler(deliveriesService, {
    async quote(ctx, input) {
      const { order, account } = isQuoteInput(input) ? parse(QuoteInputSchema, input) : { order: parse(DeliveryOrderSchema, input, 'order.'), account: undefined };
      checkQuote(checks, order, account, operationInfo().endpoint);
      const id = startAccount({ account });
      // The Nexus request ID names the quote: a request retried (a sync call has seconds, a quote
      // may wait longer for its slot) waits for the same quote, running or done, instead of asking for another.
      const workflowId = `quote:nexus:${ctx.requestId}`;
      try {
        return await getClient().workflow.execute<typeof quoteOnly>('quoteOnly', {
          taskQueue: operationInfo().taskQueue,
          workflowId,
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          workflowExecutionTimeout: QUOTE_TIMEOUT,
          // The account by argument, as the client library passes it: a quote's workflow ID does not name it.
          args: [order, { account: id }],
          staticSummary: `quote · ${order.destinations.length} stop(s)${order.is_food ? ' · food' : ''} · account ${id} · nexus`,
          priority: accountPriority(order.is_food, id),
        });
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return getClient().workflow.getHandle<typeof quoteOnly>(workflowId).result();
        if (err instanceof WorkflowFailedError) throw new nexus.OperationError('failed', applicationFailureIn(err)?.message ?? err.message, { cause: applicationFailureIn(err) ?? err.cause });
        throw err;
      }
    },

    createDelivery: new WorkflowRunOperationHandler(async (ctx, input: CreateDeliveryInput) => {
      checkCreateDelivery(checks, input, operationInfo().endpoint);
      try {
        // As the client library starts it (workflows/start-options.ts): a reference is used once, ever.
        return await startWorkflow<typeof delivery>(ctx, 'delivery', deliveryStartOptions(input));
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) {
          const cause = ApplicationFailure.create({ type: DELIVERY_ALREADY_STARTED, message: `a delivery with reference ${input.reference} exists already${input.account ? ` in account ${input.account}` : ''}: a reference is used once`, nonRetryable: true });
          throw new nexus.OperationError('failed', cause.message, { cause });
        }
        throw err;
      }
    }),

    async status(_ctx, input) {
      return onDelivery(checks, parse(DeliveryReferenceInputSchema, input), (h) => h.query(statusQuery));
    },

    async approveQuote(_ctx, input) {
      return onDelivery(checks, parse(DeliveryReferenceInputSchema, input), (h) => h.executeUpdate(approveQuoteUpdate));
    },

    async rejectQuote(_ctx, input) {
      const { reason, ...ref } = parse(RejectQuoteInputSchema, input);
      return onDelivery(checks, ref, (h) => h.executeUpdate(rejectQuoteUpdate, { args: [reason ?? 'rejected'] }));
    },

    async updateDelivery(_ctx, input) {
      const { update, ...ref } = parse(UpdateDeliveryInputSchema, input);
      return onDelivery(checks, ref, (h) => h.executeUpdate(updateDeliveryUpdate, { args: [update] }));
    },

    async cancel(_ctx, input): Promise<DeliveryState> {
      return onDelivery(checks, parse(DeliveryReferenceInputSchema, input), async (h) => {
        await h.cancel();
        return h.query(statusQuery);
      });
    },
  });
}
