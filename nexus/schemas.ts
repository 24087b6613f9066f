/**
 * The Nexus service's inputs as zod schemas, checked by its handlers (nexus/handlers.ts) and
 * described in docs/workflow-contract.json under `x-temporal-nexus` (`npm run workflow-schema`).
 * The operations reuse the workflow's own schemas: createDelivery takes DeliveryWorkflowInput, the
 * others return DeliveryState as the query and the updates do. Not for workflow code (zod).
 */
import { z } from 'zod';
import { ACCOUNT_ID, ACCOUNT_ID_RULE } from '../contract/accounts';
import { startAccount } from '../contract/workflow-ids';
import { ReferenceNumber, UpdateDeliveryRequestSchema } from '../provider/schemas';
import { DeliveryOrderSchema, RejectReasonSchema, workflowContractRegistry } from '../contract/schemas';
import { DELIVERIES_SERVICE, type DeliveryReferenceInput, type QuoteInput, type RejectQuoteInput, type UpdateDeliveryInput } from './service';

const reference = ReferenceNumber.meta({ description: 'The reference the delivery was created with (its workflow is `delivery:<reference>`, or `delivery@<account>:<reference>` for an account other than `default`).' });
const account = z.string().regex(ACCOUNT_ID, { message: ACCOUNT_ID_RULE }).optional().meta({ description: `The courier account the delivery was created in. Absent: \`${startAccount({})}\`.` });

export const QuoteInputSchema = z.object({ order: DeliveryOrderSchema, account: account.meta({ description: `The courier account to quote in, one the worker's registry has (and, with endpoint account lists, one the endpoint serves). Absent: \`${startAccount({})}\`.` }) }).strict();
workflowContractRegistry.add(QuoteInputSchema, { id: 'NexusQuoteInput', description: 'The input of the Nexus operation quote. A bare DeliveryOrder (the input before accounts) is still taken, quoted in `default`.' });

export const DeliveryReferenceInputSchema = z.object({ reference, account }).strict();
workflowContractRegistry.add(DeliveryReferenceInputSchema, { id: 'NexusDeliveryReference', description: 'The input of the Nexus operations status, approveQuote and cancel.' });

export const RejectQuoteInputSchema = z.object({ reference, account, reason: RejectReasonSchema.optional() }).strict();
workflowContractRegistry.add(RejectQuoteInputSchema, { id: 'NexusRejectQuoteInput', description: 'The input of the Nexus operation rejectQuote; reason defaults to "rejected".' });

export const UpdateDeliveryInputSchema = z.object({ reference, account, update: UpdateDeliveryRequestSchema }).strict();
workflowContractRegistry.add(UpdateDeliveryInputSchema, { id: 'NexusUpdateDeliveryInput', description: 'The input of the Nexus operation updateDelivery.' });

type Json = Record<string, unknown>;

/** The `x-temporal-nexus` section of docs/workflow-contract.json. */
export function nexusServiceDocument(ref: (id: string) => Json): Json {
  const sync = (input: Json, output: Json, does: string) => ({ kind: 'synchronous', input, output, does });
  return {
    service: DELIVERIES_SERVICE,
    endpoint: 'any name; `npm start` and `npm run cluster` create `deliveries` targeting the worker\'s namespace and task queue (DELIVERY_TASK_QUEUE), or, with DELIVERY_NEXUS_ENDPOINTS_FILE, each endpoint the file lists, serving its accounts only (docs/accounts.md)',
    failures:
      'Every refusal comes before anything starts, synchronously, never retried. ' +
      'A bad input, an unknown or removed account, or any start the delivery workflow\'s start check would refuse is a non-retryable BAD_REQUEST handler error caused by the ApplicationFailure InvalidDeliveryInput (details[0] is [{ field, message }]); ' +
      'an account the endpoint does not serve (DELIVERY_NEXUS_ENDPOINTS_FILE) a non-retryable UNAUTHORIZED handler error caused by the ApplicationFailure AccountNotAllowed (details[0] the same list, field `account`); ' +
      'an unknown reference a non-retryable NOT_FOUND handler error; an update or cancel for a delivery whose workflow has ended a failed operation caused by DeliveryEnded; a refused update, a failed quote, or a delivery workflow that fails (QuoteRejected, QuoteApprovalTimedOut, ...), a failed operation caused by the workflow\'s failure (same types as the workflow); ' +
      'a cancelled delivery a cancelled operation. Failure messages and details are encrypted like every payload when the deployment sets DELIVERY_PAYLOAD_KEYS: callers need the same codec (docs/payload-encryption.md).',
    operations: {
      quote: sync(ref('NexusQuoteInput'), ref('CarriedQuote'), 'a price for the order in its account through the same paced path as a delivery\'s quote; creates nothing; pass it as createDelivery\'s quote (no fingerprint, so not carried, when the worker paces by task queue instead of the gate). A bare DeliveryOrder is still taken, quoted in `default`.'),
      createDelivery: {
        kind: 'asynchronous (backed by the workflow `delivery:<reference>`, or `delivery@<account>:<reference>` for an account other than `default`)',
        input: ref('DeliveryWorkflowInput'),
        output: ref('DeliveryState'),
        does: 'starts the delivery workflow; the result is the delivery\'s final state once it ends. Cancelling the operation cancels the workflow: nothing created, cancelled at the provider, or the provider\'s refusal recorded and the delivery followed to its end. A reference already used fails the operation with DeliveryAlreadyStarted.',
      },
      status: sync(ref('NexusDeliveryReference'), ref('DeliveryState'), 'the status query'),
      approveQuote: sync(ref('NexusDeliveryReference'), ref('DeliveryState'), 'the approveQuote update (while awaiting approval)'),
      rejectQuote: sync(ref('NexusRejectQuoteInput'), ref('DeliveryState'), 'the rejectQuote update (while awaiting approval)'),
      updateDelivery: sync(ref('NexusUpdateDeliveryInput'), ref('DeliveryState'), 'the updateDelivery update (while CREATED or ASSIGNED)'),
      cancel: sync(ref('NexusDeliveryReference'), ref('DeliveryState'), 'requests the workflow\'s cancellation and returns the state as it is then; cancellation says how it ended once settled'),
    },
  };
}

// The schemas and the service's types must stay the same shape.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShapes: [
  Same<z.output<typeof QuoteInputSchema>, QuoteInput>,
  Same<z.output<typeof DeliveryReferenceInputSchema>, DeliveryReferenceInput>,
  Same<z.output<typeof RejectQuoteInputSchema>, RejectQuoteInput>,
  Same<z.output<typeof UpdateDeliveryInputSchema>, UpdateDeliveryInput>,
] = [true, true, true, true];
void sameShapes;
