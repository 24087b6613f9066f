/**
 * The Nexus service `deliveries` (nexus/service.ts), served by the delivery worker on its
 * workflow task queue. Each operation does what the client library does, with the same checks
 * and failure types as the workflow:
 *  - a bad input never reaches a workflow: a non-retryable BAD_REQUEST handler error caused by
 *    the ApplicationFailure `InvalidDeliveryInput`, its details[0] the `{ field, message }` list;
 *  - createDelivery is backed by the delivery workflow itself (WorkflowRunOperationHandler), so
 *    its result is the workflow's and cancelling the operation cancels the workflow;
 *  - the synchronous operations call the query and updates through the worker's client; a refused
 *    update fails the operation with the workflow's own failure as its cause.
 */
import * as nexus from 'nexus-rpc';
import { getClient, operationInfo, startWorkflow, WorkflowRunOperationHandler } from '@temporalio/nexus';
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { z } from 'zod';
import { deliveryInputIssues } from '../activities/start-checks';
import { WORKFLOW_FAILURE_TYPES } from '../contract/failures';
import { applicationFailureIn } from '../contract/failure-cause';
import { approveQuoteUpdate, rejectQuoteUpdate, statusQuery, updateDeliveryUpdate } from '../contract/delivery-messages';
import type { DeliveryState } from '../contract/delivery-types';
import { DeliveryOrderSchema } from '../contract/schemas';
import { deliveryPriority } from '../contract/priorities';
import { deliveryWorkflowId } from '../contract/workflow-ids';
import type { FieldIssue } from '../provider/schemas';
import { describeIssues, fieldIssues } from '../provider/validation';
import { deliveryStartOptions } from '../workflows/start-options';
import type { delivery, quoteOnly } from '../workflows/delivery';
import { DeliveryReferenceInputSchema, RejectQuoteInputSchema, UpdateDeliveryInputSchema } from './schemas';
import { deliveriesService, type CreateDeliveryInput, type DeliveryReferenceInput } from './service';

/** The failure type of a createDelivery whose reference was used already (a reference is used once, ever). */
export const DELIVERY_ALREADY_STARTED = 'DeliveryAlreadyStarted';

/** Bad input: nothing was started or changed; the cause carries the workflow's own failure type and the issues. */
function invalidInput(issues: FieldIssue[]): nexus.HandlerError {
  const message = `invalid delivery input, nothing was quoted or created: ${describeIssues(issues)}`;
  const cause = ApplicationFailure.create({ type: WORKFLOW_FAILURE_TYPES.invalidInput, message, nonRetryable: true, details: [issues] });
  return new nexus.HandlerError('BAD_REQUEST', message, { cause, retryableOverride: false });
}

/** The input parsed with the schema, or the BAD_REQUEST error naming each field (`prefix` before each path). */
function parse<T extends z.ZodType>(schema: T, input: unknown, prefix = ''): z.output<T> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw invalidInput(fieldIssues(parsed.error).map((i) => ({ ...i, field: i.field === '(body)' ? prefix.replace(/\.$/, '') || 'input' : prefix + i.field })));
}

/** The failure type of an update or cancel sent to a delivery whose workflow has ended. */
export const DELIVERY_ENDED = 'DeliveryEnded';

/**
 * Runs `fn` on the delivery's workflow. An unknown reference is NOT_FOUND; a delivery whose
 * workflow has ended (updates and cancellation need a running one) fails the operation with
 * DeliveryEnded; a refused update fails it with the workflow's failure as cause.
 */
async function onDelivery<T>({ reference, account }: DeliveryReferenceInput, fn: (h: WorkflowHandle) => Promise<T>): Promise<T> {
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

/** createDelivery's check: the workflow's own (its first task would refuse the same), before anything starts. */
export function checkCreateDelivery(input: CreateDeliveryInput, nowMs = Date.now()): void {
  const issues = deliveryInputIssues(input, nowMs);
  if (issues.length > 0) throw invalidInput(issues);
}

export const deliveriesServiceHandler = nexus.serviceHandler(deliveriesService, {
  async quote(ctx, order) {
    const parsed = parse(DeliveryOrderSchema, order, 'order.');
    try {
      // The Nexus request ID names the quote: a request retried (a sync call has seconds, a quote
      // may wait longer for its slot) waits for the same quote, running or done, instead of asking for another.
      return await getClient().workflow.execute<typeof quoteOnly>('quoteOnly', {
        taskQueue: operationInfo().taskQueue,
        workflowId: `quote:nexus:${ctx.requestId}`,
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
        args: [parsed],
        staticSummary: `quote · ${parsed.destinations.length} stop(s)${parsed.is_food ? ' · food' : ''} · nexus`,
        priority: deliveryPriority(parsed.is_food),
      });
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return getClient().workflow.getHandle<typeof quoteOnly>(`quote:nexus:${ctx.requestId}`).result();
      if (err instanceof WorkflowFailedError) throw new nexus.OperationError('failed', applicationFailureIn(err)?.message ?? err.message, { cause: applicationFailureIn(err) ?? err.cause });
      throw err;
    }
  },

  createDelivery: new WorkflowRunOperationHandler(async (ctx, input: CreateDeliveryInput) => {
    checkCreateDelivery(input);
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
    return onDelivery(parse(DeliveryReferenceInputSchema, input), (h) => h.query(statusQuery));
  },

  async approveQuote(_ctx, input) {
    return onDelivery(parse(DeliveryReferenceInputSchema, input), (h) => h.executeUpdate(approveQuoteUpdate));
  },

  async rejectQuote(_ctx, input) {
    const { reason, ...ref } = parse(RejectQuoteInputSchema, input);
    return onDelivery(ref, (h) => h.executeUpdate(rejectQuoteUpdate, { args: [reason ?? 'rejected'] }));
  },

  async updateDelivery(_ctx, input) {
    const { update, ...ref } = parse(UpdateDeliveryInputSchema, input);
    return onDelivery(ref, (h) => h.executeUpdate(updateDeliveryUpdate, { args: [update] }));
  },

  async cancel(_ctx, input): Promise<DeliveryState> {
    return onDelivery(parse(DeliveryReferenceInputSchema, input), async (h) => {
      await h.cancel();
      return h.query(statusQuery);
    });
  },
});
