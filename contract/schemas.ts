/**
 * The delivery workflow's contract as zod schemas: what a starter sends, what the workflow
 * answers, and the arguments of its messages. The client library and the start checks validate
 * with them, and docs/workflow-contract.json (JSON Schema, for clients in any language) is
 * generated from them (`npm run workflow-schema`).
 *
 * Workflow code imports only the types from here: zod and every contract schema cost about 27 ms
 * of CPU and 1 MiB per workflow instance (docs/benchmarks.md), so the workflow has its input
 * checked by a local activity (activities/start-checks.ts) instead.
 */
import { z } from 'zod';
import {
  CreateDeliveryRequestSchema,
  DestinationLocationSchema,
  DestinationRequestSchema,
  DestinationUpdateSchema,
  DESTINATION_STATUSES,
  DELIVERY_STATUSES,
  PackageTypeSchema,
  PickupLocationSchema,
  PriceSchema,
  QuoteSchema,
  ReferenceNumber,
  UpdateDeliveryRequestSchema,
  contractRegistry,
} from '../provider/schemas';
import { ACCOUNT_ID, ACCOUNT_ID_RULE } from './accounts';
import { startAccount } from './workflow-ids';
import type { CarriedQuote, DeliveryState, DeliveryWorkflowInput, FollowUpSettings, StatusChange } from './delivery-types';
import { DEFAULT_NOTIFY_SIGNAL, NOTIFICATION_TYPES, type NotifySettings } from './notification-types';
import type { DeliveryNotification } from './delivery-types';

/** Every schema with an `id` here is a definition of docs/workflow-contract.json. */
export const workflowContractRegistry = z.registry<{ id: string; description?: string }>();

function definition<T extends z.ZodType>(schema: T, id: string, description: string): T {
  workflowContractRegistry.add(schema, { id, description });
  return schema;
}

// The provider's schemas the workflow's messages use, under the same names as in docs/openapi.json.
for (const schema of [PickupLocationSchema, DestinationLocationSchema, DestinationRequestSchema, DestinationUpdateSchema, PriceSchema, QuoteSchema, UpdateDeliveryRequestSchema, PackageTypeSchema]) {
  const meta = contractRegistry.get(schema);
  if (meta) workflowContractRegistry.add(schema, meta);
}

const openStatus = (known: readonly string[], what: string) =>
  z.string().min(1).max(64).meta({ description: `${what}. Known values: ${known.join(', ')}. Unknown future values are kept and shown.` });
const isoTime = z.string().meta({ description: 'ISO 8601 timestamp (UTC)' });

// ---------------------------------------------------------------------------------------------
// Start

export const DeliveryOrderSchema = definition(
  CreateDeliveryRequestSchema.omit({ reference_number: true }).strict(),
  'DeliveryOrder',
  'The order in the provider\'s format, without reference_number (the workflow sets it from the reference). Personal data.',
);

export const FollowUpSchema = definition(
  z
    .object({
      quietMs: z.number().int().min(1_000).optional().meta({ description: 'Ask the provider when no webhook has come for this long (ms). Default 900000.' }),
      windowGraceMs: z.number().int().min(0).optional().meta({ description: 'Ask when a destination\'s time window ended this long ago without it ending (ms). Default 900000.' }),
      jitter: z.number().min(0).max(0.9).optional().meta({ description: 'Each quiet wait is shortened by up to this fraction at random. Default 0.2.' }),
      endGraceMs: z
        .number()
        .int()
        .min(0)
        .max(24 * 3_600_000)
        .optional()
        .meta({ description: 'After the delivery ends, the workflow stays open up to this long (ms), while an earlier status is missing from its timeline, so that a late status still lands on the timeline and is notified. Default 600000.' }),
    })
    .strict(),
  'FollowUpSettings',
  'When the workflow asks the provider for the truth instead of waiting for webhooks. Defaults suit production.',
);

export const CarriedQuoteSchema = definition(
  QuoteSchema.extend({
    fingerprint: z.string().regex(/^[0-9a-f]{64}$/, { message: 'must be the fingerprint quote() returned' }),
  }),
  'CarriedQuote',
  'A quote from the quoteOnly workflow for the same order: used while valid, so no second quote is asked for. For other inputs, or about to expire, the workflow asks for a new one.',
);

/** No control characters: these names end up in headers, logs and the Web UI. */
const printable = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((v) => !/[\p{Cc}\u2028\u2029]/u.test(v), { message: 'must not contain control characters' });

export const NotifySchema = definition(
  z
    .object({
      workflowId: printable(1_000).optional().meta({ description: 'An order workflow in the same namespace, signalled on every change.' }),
      signal: printable(200).optional().meta({ description: `The signal's name. Default ${DEFAULT_NOTIFY_SIGNAL}.` }),
      endpoint: z
        .string()
        .refine((v) => !/[:/]/.test(v), { message: 'must be the name of an endpoint the operator configured (DELIVERY_NOTIFY_ENDPOINTS), not a URL' })
        .pipe(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/, { message: 'must be an endpoint name: letters, digits, _ . - (1 to 63, starting with a letter or digit)' }))
        .optional()
        .meta({ description: 'An HTTP endpoint by the name the operator configured (DELIVERY_NOTIFY_ENDPOINTS on the worker); never a URL. Unknown names fail the start.' }),
      parent: z.boolean().optional().meta({ description: 'A delivery started as a child workflow notifies its parent unless this is false.' }),
    })
    .strict()
    .refine((n) => n.signal === undefined || n.workflowId !== undefined || n.parent !== false, { message: 'signal needs a workflowId (or a parent to signal)', path: ['signal'] }),
  'NotifySettings',
  'Who is told of every change of the delivery (DeliveryNotification): an order workflow by signal, an operator-configured HTTP endpoint by signed webhook, or both.',
);

export const APPROVAL_TIMEOUT_LIMITS_MS = { min: 1_000, max: 7 * 24 * 3_600_000 } as const;

export const DeliveryWorkflowInputSchema = definition(
  z
    .object({
      reference: ReferenceNumber.meta({ description: 'Chosen by the order system, used once ever within its account. The workflow ID must be `delivery:<reference>` for the default account and `delivery@<account>:<reference>` for any other; it is also the provider\'s reference_number.' }),
      account: z
        .string()
        .regex(ACCOUNT_ID, { message: ACCOUNT_ID_RULE })
        .optional()
        .meta({ description: `The courier account the delivery belongs to, one the worker's registry has (DELIVERY_ACCOUNTS_FILE). Absent: \`${startAccount({})}\`, whose IDs keep the form of 0.2.0. An unknown account fails the start with InvalidDeliveryInput naming \`account\`.` }),
      order: DeliveryOrderSchema,
      maxPrice: PriceSchema.optional().meta({ description: 'The most to pay without approval; a quote over it waits for the approveQuote update.' }),
      quote: CarriedQuoteSchema.optional(),
      approvalTimeoutMs: z
        .number()
        .int()
        .min(APPROVAL_TIMEOUT_LIMITS_MS.min)
        .max(APPROVAL_TIMEOUT_LIMITS_MS.max)
        .optional()
        .meta({ description: 'How long to wait for approveQuote / rejectQuote (ms). Default 1800000.' }),
      followUp: FollowUpSchema.optional(),
      historyLimit: z.number().int().min(100).max(10_000).optional().meta({ description: 'Continue as new once a run\'s history has this many events. Default 1500.' }),
      notify: NotifySchema.optional(),
    })
    .strict(),
  'DeliveryWorkflowInput',
  'The one argument of the `delivery` workflow. Checked in the workflow\'s first task: a bad field fails the workflow with the non-retryable InvalidDeliveryInput failure before any provider call.',
);

// ---------------------------------------------------------------------------------------------
// State, result and status query

export const TimelineEntrySchema = definition(
  z.object({
    at: isoTime.meta({ description: 'Workflow time at which the change was applied' }),
    subject: z.string().meta({ description: '`delivery`, a destination id, or `workflow` for the workflow\'s own steps' }),
    status: z.string().optional(),
    note: z.string().optional(),
    source: z.enum(['provider', 'webhook', 'reconciliation', 'workflow']),
    eventId: z.string().optional(),
    occurredAt: isoTime.optional(),
    late: z.boolean().optional().meta({ description: 'A webhook that came after a later status of the same subject (retried, overtaken); the status did not move back' }),
    notification: z
      .object({
        sequence: z.number().int().min(1),
        type: z.enum(NOTIFICATION_TYPES),
        to: z.record(z.string(), z.enum(['pending', 'sent', 'not_found', 'gone', 'failed'])),
      })
      .optional()
      .meta({ description: 'The notification this step made, and its fate per target: `workflow:<id>` (signal) or `endpoint:<name>` (webhook)' }),
  }),
  'TimelineEntry',
  'One step of the delivery\'s timeline.',
);

export const DestinationStateSchema = definition(
  z.object({
    id: z.string(),
    status: openStatus(DESTINATION_STATUSES, 'Destination status'),
    trackingUrl: z.string(),
    referenceNumber: z.string().nullable(),
    packageType: PackageTypeSchema,
    timeWindowStart: isoTime,
    timeWindowEnd: isoTime,
  }),
  'DestinationState',
  'A destination as the workflow knows it. No personal data.',
);

export const CancellationOutcomeSchema = definition(
  z.object({
    requestedAt: isoTime,
    outcome: z.enum(['before_creation', 'cancelled', 'refused']),
    reason: z.string().optional(),
  }),
  'CancellationOutcome',
  'What a cancellation did: nothing was created yet, cancelled at the provider, or refused by it (then the delivery is followed to its real end).',
);

export const DeliveryStateSchema = definition(
  z.object({
    reference: z.string(),
    phase: z.enum(['quoting', 'awaiting_approval', 'creating', 'following', 'cancelling', 'ended']),
    deliveryId: z.string().optional(),
    status: openStatus(DELIVERY_STATUSES, 'Delivery status').optional(),
    destinations: z.array(DestinationStateSchema),
    quote: QuoteSchema.optional(),
    price: PriceSchema.optional(),
    isFood: z.boolean(),
    cancellation: CancellationOutcomeSchema.optional(),
    timeline: z.array(TimelineEntrySchema),
  }),
  'DeliveryState',
  'The answer of the `status` query, of the three updates, and the workflow\'s result once the delivery has ended. No personal data.',
);

// ---------------------------------------------------------------------------------------------
// Notifications (contract/notification-types.ts)

export const DeliveryNotificationSchema = definition(
  z.object({
    type: z.enum(NOTIFICATION_TYPES),
    eventId: z.string().meta({ description: 'Stable across retries: the webhook-id header. A receiver ignores an event id it has seen.' }),
    sequence: z.number().int().min(1).meta({ description: '1, 2, 3, … per delivery, kept across continue-as-new.' }),
    reference: z.string(),
    deliveryId: z.string().optional(),
    at: isoTime.meta({ description: 'Workflow time of the change' }),
    change: z
      .object({
        subject: z.string().meta({ description: '`delivery`, a destination id, `quote`, `update` or `cancellation`' }),
        status: z.string().optional(),
        previousStatus: z.string().optional(),
        late: z.boolean().optional(),
        source: z.enum(['provider', 'webhook', 'reconciliation']).optional(),
        providerEventId: z.string().optional(),
        occurredAt: isoTime.optional(),
        trackingUrl: z.string().optional(),
        quote: QuoteSchema.optional(),
        maxPrice: PriceSchema.optional(),
        fields: z.array(z.string()).optional(),
        failureType: z.string().optional(),
        cancellation: CancellationOutcomeSchema.optional(),
        outcome: z.enum(['completed', 'cancelled', 'failed']).optional(),
      })
      .meta({ description: 'What changed; fields that do not apply to the type are absent.' }),
    state: DeliveryStateSchema.omit({ timeline: true }).meta({ description: 'The delivery as it is after the change, without the timeline. No personal data.' }),
    result: DeliveryStateSchema.optional().meta({ description: 'delivery.ended only: the workflow\'s final result' }),
  }),
  'DeliveryNotification',
  `The argument of the order workflow's signal (default ${DEFAULT_NOTIFY_SIGNAL}) and the \`data\` of a notification webhook. One per change, in \`sequence\` order per delivery. No personal data.`,
);

// ---------------------------------------------------------------------------------------------
// Signal and update arguments

export const StatusChangeSchema = definition(
  z.object({
    deliveryId: z.string(),
    destinationId: z.string().optional().meta({ description: 'Absent for a change of the delivery itself' }),
    status: z.string().min(1),
    eventId: z.string().optional().meta({ description: 'The provider\'s event id (duplicates are ignored)' }),
    occurredAt: isoTime.optional(),
    source: z.enum(['provider', 'webhook', 'reconciliation']),
  }),
  'StatusChange',
  'The argument of the `statusChanged` signal (the webhook bridge sends it).',
);

export const RejectReasonSchema = definition(z.string().max(500), 'RejectReason', 'The argument of the `rejectQuote` update: why the quote was rejected.');

// ---------------------------------------------------------------------------------------------
// The schemas and the hand-written message types must stay the same shape.

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShapes: [
  Same<z.output<typeof DeliveryWorkflowInputSchema>, Omit<DeliveryWorkflowInput, 'resume'>>,
  Same<z.output<typeof DeliveryStateSchema>, DeliveryState>,
  Same<z.output<typeof StatusChangeSchema>, StatusChange>,
  Same<z.output<typeof FollowUpSchema>, Partial<FollowUpSettings>>,
  Same<z.output<typeof CarriedQuoteSchema>, CarriedQuote>,
  Same<z.output<typeof NotifySchema>, NotifySettings>,
  Same<z.output<typeof DeliveryNotificationSchema>, DeliveryNotification>,
] = [true, true, true, true, true, true, true];
void sameShapes;
