// provider/: the courier's API contract (schemas, lifecycle, limits), its typed client, webhook signatures and OpenAPI; imports nothing of ours.
/**
 * The provider contract (../shared/provider-contract.md) as zod schemas, defined once.
 *
 * The API client validates responses with these, the simulator validates requests with them,
 * the workflows use the inferred types, and docs/openapi.json is generated from them. Every
 * part the provider does not state itself (an "assumed" part of the contract) lives here, so a
 * real provider's exact names can be dropped in without touching workflows.
 *
 * Schemas here are pure (no clock, no I/O) so that workflow code may use them. Rules that need
 * the current time (a pickup time not in the past) live in `rules.ts`.
 */
import { z } from 'zod';

/** Every schema with an `id` here becomes a component of the OpenAPI document. */
export const contractRegistry = z.registry<{ id: string; description?: string }>();

function component<T extends z.ZodType>(schema: T, id: string, description: string): T {
  contractRegistry.add(schema, { id, description });
  return schema;
}

// ---------------------------------------------------------------------------------------------
// Enumerations. Known values are listed; statuses read *from* the provider accept any string,
// because the contract says an unknown future value must be kept and shown, not crash anything.

export const DELIVERY_STATUSES = ['CREATED', 'ASSIGNED', 'UPCOMING', 'PICKED_UP', 'DELIVERED', 'CANCELED'] as const;
export const DESTINATION_STATUSES = ['PENDING', 'IN_TRANSIT', 'DELIVERED', 'FAILED', 'CANCELED'] as const;
export const ORDER_STATUSES = ['OPEN', 'INVOICED', 'CANCELED'] as const;
export const PACKAGE_TYPES = ['SMALL', 'MEDIUM', 'LARGE', 'XLARGE'] as const;

export type KnownDeliveryStatus = (typeof DELIVERY_STATUSES)[number];
export type KnownDestinationStatus = (typeof DESTINATION_STATUSES)[number];
export type KnownOrderStatus = (typeof ORDER_STATUSES)[number];
/** A status as the provider may send it: a known value, or a future one kept verbatim. */
export type DeliveryStatus = KnownDeliveryStatus | (string & {});
export type DestinationStatus = KnownDestinationStatus | (string & {});
export type OrderStatus = KnownOrderStatus | (string & {});

function openStatus<T extends string>(known: readonly T[], what: string) {
  return z
    .string()
    .min(1)
    .max(64)
    .meta({
      description: `${what}. Known values: ${known.join(', ')}. Unknown future values are kept and shown.`,
      examples: [known[0]],
    }) as unknown as z.ZodType<T | (string & {}), string>;
}

export const DeliveryStatusSchema = openStatus(DELIVERY_STATUSES, 'Delivery status');
export const DestinationStatusSchema = openStatus(DESTINATION_STATUSES, 'Destination status');
export const OrderStatusSchema = openStatus(ORDER_STATUSES, 'Order status');
export const PackageTypeSchema = component(z.enum(PACKAGE_TYPES), 'PackageType', 'Parcel size of a destination.');

// ---------------------------------------------------------------------------------------------
// Scalars and limits

export const LIMITS = {
  maxDestinations: 100,
  maxNameLength: 100,
  maxAddressLength: 300,
  maxReferenceLength: 64,
  maxCommentLength: 500,
  maxEmailLength: 254,
} as const;

/** ISO 8601 timestamp in UTC (`Z` suffix), as the contract requires for times. */
export const UtcTimestamp = z.iso.datetime({ offset: false, message: 'must be an ISO 8601 UTC timestamp such as 2026-01-31T12:00:00Z' });
/** E.164: a leading +, a non-zero country digit, at most 15 digits in all. */
export const E164Phone = z
  .string()
  .regex(/^\+[1-9]\d{1,14}$/, { message: 'must be an E.164 phone number: + then 2 to 15 digits, e.g. +4915112345678' });

/**
 * A character a reference must not hold, with its name, or undefined. A reference becomes the
 * delivery's workflow ID, a search attribute, a CLI table cell and a log field, so anything that
 * breaks a line or reorders text is refused: C0 controls (tab and newline included), DEL, C1
 * controls, the line and paragraph separators U+2028/U+2029, the bidirectional embedding,
 * override and isolate controls (they make one reference display as another), and a lone UTF-16
 * surrogate (not a character at all; it cannot be sent as UTF-8).
 */
export function forbiddenReferenceCharacter(text: string): { codePoint: string; what: string; index: number } | undefined {
  let index = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const what =
      cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f)
        ? 'a control character'
        : cp === 0x2028 || cp === 0x2029
          ? 'a line or paragraph separator'
          : (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)
            ? 'a bidirectional control character'
            : cp >= 0xd800 && cp <= 0xdfff
              ? 'a lone surrogate (not well-formed Unicode)'
              : undefined;
    if (what) return { codePoint: `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`, what, index };
    index += ch.length;
  }
  return undefined;
}

/**
 * The order system's reference: any Unicode text (`ORD-€42`, `注文-1001`, emoji) of 1 to 64
 * UTF-16 code units, without the characters above. The contract says "at most 64 chars"; code
 * units are the stricter reading (an emoji counts 2), so a provider counting either way accepts
 * every reference we send. The delivery's Idempotency-Key is derived from it (provider/client.ts),
 * never sent as it is.
 */
const referenceTooLong = `must be at most ${LIMITS.maxReferenceLength} characters (UTF-16 code units: an emoji counts 2)`;
export const ReferenceNumber = z
  .string()
  .min(1, { message: 'must not be empty' })
  // zod's max counts code points (as JSON Schema's maxLength does): it goes into the OpenAPI
  // document, and the check below adds the code-unit reading.
  .max(LIMITS.maxReferenceLength, { message: referenceTooLong })
  .superRefine((text, ctx) => {
    if (text.length > LIMITS.maxReferenceLength && [...text].length <= LIMITS.maxReferenceLength) ctx.addIssue({ code: 'custom', message: referenceTooLong });
    const bad = forbiddenReferenceCharacter(text);
    if (bad) ctx.addIssue({ code: 'custom', message: `must not contain ${bad.what} (${bad.codePoint} at position ${bad.index})` });
  })
  .meta({
    description: `1 to ${LIMITS.maxReferenceLength} UTF-16 code units of Unicode text; no control characters (C0, DEL, C1), line or paragraph separators (U+2028/9), bidirectional controls (U+202A–U+202E, U+2066–U+2069) or lone surrogates.`,
    examples: ['ORD-1042'],
  });
/**
 * A reference as the provider stores it: any string of at most 64 characters (the provider takes
 * any JSON string). Records are read leniently so that a delivery another system created under
 * the same key with such a reference can never make a list or a reconciliation fail.
 */
export const StoredReferenceNumber = z.string().min(1).max(LIMITS.maxReferenceLength);
export const CurrencyCode = z.string().regex(/^[A-Z]{3}$/, { message: 'must be an ISO 4217 code such as EUR' });
/** An amount of money as an integer in the currency's smallest unit (cents for EUR). */
export const MinorUnits = z.number().int().nonnegative();

export const PriceSchema = component(
  z.object({ amount: MinorUnits, currency: CurrencyCode }).strict(),
  'Price',
  'A price as an integer in minor units of an ISO 4217 currency.',
);

// ---------------------------------------------------------------------------------------------
// Requests

const name = z.string().trim().min(1).max(LIMITS.maxNameLength);
const optionalLocationFields = {
  first_name: name.optional(),
  email: z.email().max(LIMITS.maxEmailLength).optional(),
  comment: z.string().max(LIMITS.maxCommentLength).optional(),
};

export const PickupLocationSchema = component(
  z
    .object({
      last_name: name,
      company: z.string().max(LIMITS.maxNameLength),
      address: z.string().trim().min(1).max(LIMITS.maxAddressLength),
      phone: E164Phone.optional(),
      ...optionalLocationFields,
    })
    .strict(),
  'PickupLocation',
  'Where the courier collects the parcels. Personal data.',
);

export const DestinationLocationSchema = component(
  z
    .object({
      last_name: name,
      company: z.string().max(LIMITS.maxNameLength),
      phone: E164Phone,
      address: z.string().trim().min(1).max(LIMITS.maxAddressLength),
      ...optionalLocationFields,
    })
    .strict(),
  'DestinationLocation',
  'Where a parcel goes and who receives it. Personal data.',
);

const timeWindowFields = {
  time_window_start: UtcTimestamp,
  time_window_end: UtcTimestamp,
};

/** A time window must end after it starts (both are UTC ISO strings, so Date parsing is exact). */
function windowInOrder(d: { time_window_start?: string; time_window_end?: string }): boolean {
  if (!d.time_window_start || !d.time_window_end) return true;
  return Date.parse(d.time_window_end) > Date.parse(d.time_window_start);
}
const windowIssue = { message: 'must be after time_window_start', path: ['time_window_end'] };

export const DestinationRequestSchema = component(
  z
    .object({
      location: DestinationLocationSchema,
      package_type: PackageTypeSchema,
      ...timeWindowFields,
      reference_number: ReferenceNumber.optional(),
    })
    .strict()
    .refine(windowInOrder, windowIssue),
  'DestinationRequest',
  'One destination of a delivery request.',
);

export const CreateDeliveryRequestSchema = component(
  z
    .object({
      desired_pickup_time: UtcTimestamp,
      pickup_location: PickupLocationSchema,
      destinations: z
        .array(DestinationRequestSchema)
        .min(1, { message: 'must have at least one destination' })
        .max(LIMITS.maxDestinations, { message: `must have at most ${LIMITS.maxDestinations} destinations` }),
      is_food: z.boolean(),
      reference_number: ReferenceNumber.optional(),
    })
    .strict(),
  'CreateDeliveryRequest',
  'Body of POST /v1/deliveries, and of POST /v1/quotes (the same information).',
);

export const QuoteRequestSchema = CreateDeliveryRequestSchema;

/** A change to one existing destination, addressed by its id. */
export const DestinationUpdateSchema = component(
  z
    .object({
      id: z.string().min(1),
      location: DestinationLocationSchema.optional(),
      package_type: PackageTypeSchema.optional(),
      time_window_start: UtcTimestamp.optional(),
      time_window_end: UtcTimestamp.optional(),
      reference_number: ReferenceNumber.optional(),
    })
    .strict(),
  'DestinationUpdate',
  'A change to one existing destination, by id. A new time window is checked against the unchanged bound.',
);

export const UpdateDeliveryRequestSchema = component(
  z
    .object({
      desired_pickup_time: UtcTimestamp.optional(),
      pickup_location: PickupLocationSchema.optional(),
      is_food: z.boolean().optional(),
      destinations: z.array(DestinationUpdateSchema).min(1).max(LIMITS.maxDestinations).optional(),
    })
    .strict()
    .refine((u) => Object.values(u).some((v) => v !== undefined), { message: 'must change at least one field' }),
  'UpdateDeliveryRequest',
  'Body of PATCH /v1/deliveries/{id}. Allowed while the delivery is CREATED or ASSIGNED.',
);

// ---------------------------------------------------------------------------------------------
// Records

export const DestinationRecordSchema = component(
  z.object({
    id: z.string().min(1),
    status: DestinationStatusSchema,
    tracking_url: z.url(),
    location: DestinationLocationSchema,
    package_type: PackageTypeSchema,
    ...timeWindowFields,
    reference_number: StoredReferenceNumber.nullable(),
    updated_at: UtcTimestamp,
  }),
  'DestinationRecord',
  'A destination as the provider stores it, with its own status and tracking link.',
);

export const DeliveryRecordSchema = component(
  z.object({
    id: z.string().min(1),
    status: DeliveryStatusSchema,
    reference_number: StoredReferenceNumber.nullable(),
    is_food: z.boolean(),
    desired_pickup_time: UtcTimestamp,
    pickup_location: PickupLocationSchema,
    price: PriceSchema,
    created_at: UtcTimestamp,
    updated_at: UtcTimestamp,
    destinations: z.array(DestinationRecordSchema).min(1),
  }),
  'DeliveryRecord',
  'A delivery as the provider stores it.',
);

export const QuoteSchema = component(
  z.object({ price: PriceSchema, expires_at: UtcTimestamp }),
  'Quote',
  'An instant quote, valid for 15 minutes.',
);

export const OrderRecordSchema = component(
  z.object({
    id: z.string().min(1),
    delivery_id: z.string().min(1),
    amount: MinorUnits,
    currency: CurrencyCode,
    status: OrderStatusSchema,
    created_at: UtcTimestamp,
  }),
  'OrderRecord',
  'The billing order the provider opens for each created delivery.',
);

function page<T extends z.ZodType>(item: T, id: string) {
  return component(
    z.object({
      data: z.array(item),
      page: z.number().int().min(1),
      page_size: z.number().int().min(1),
      has_more: z.boolean(),
    }),
    id,
    'One page of a list, newest first.',
  );
}
export const DeliveryListSchema = page(DeliveryRecordSchema, 'DeliveryList');
export const OrderListSchema = page(OrderRecordSchema, 'OrderList');

export const KeyCheckSchema = component(z.object({ valid: z.literal(true) }), 'KeyCheck', 'Answer of GET /v1/health/token for a valid key.');

// ---------------------------------------------------------------------------------------------
// Webhooks (thin events: the identifier and the new status; details are fetched through the API)

export const WEBHOOK_EVENT_TYPES = ['delivery.status_changed', 'destination.status_changed'] as const;

const eventBase = { id: z.string().regex(/^evt_[A-Za-z0-9_-]+$/), created_at: UtcTimestamp };

export const DeliveryStatusChangedEventSchema = z.object({
  ...eventBase,
  type: z.literal('delivery.status_changed'),
  data: z.object({ delivery_id: z.string().min(1), status: DeliveryStatusSchema }),
});
export const DestinationStatusChangedEventSchema = z.object({
  ...eventBase,
  type: z.literal('destination.status_changed'),
  data: z.object({ delivery_id: z.string().min(1), destination_id: z.string().min(1), status: DestinationStatusSchema }),
});
export const WebhookEventSchema = component(
  z.discriminatedUnion('type', [DeliveryStatusChangedEventSchema, DestinationStatusChangedEventSchema]),
  'WebhookEvent',
  'Body of a webhook, signed with the Standard Webhooks scheme.',
);

// ---------------------------------------------------------------------------------------------
// Errors

export const ERROR_CODES = [
  'invalid_json',
  'unauthorized',
  'not_found',
  'method_not_allowed',
  'conflict',
  'idempotency_conflict',
  'validation_failed',
  'payload_too_large',
  'unsupported_media_type',
  'rate_limited',
  'internal_error',
  'service_unavailable',
] as const;

export const FieldIssueSchema = z.object({ field: z.string(), message: z.string() });
export const ErrorBodySchema = component(
  z.object({
    error: z.object({
      code: z.string().min(1).meta({ description: `Known codes: ${ERROR_CODES.join(', ')}` }),
      message: z.string(),
      details: z.array(FieldIssueSchema).optional(),
    }),
  }),
  'ErrorBody',
  'Body of every error answer.',
);

// ---------------------------------------------------------------------------------------------
// Inferred types

export type PackageType = z.infer<typeof PackageTypeSchema>;
export type Price = z.infer<typeof PriceSchema>;
export type PickupLocation = z.infer<typeof PickupLocationSchema>;
export type DestinationLocation = z.infer<typeof DestinationLocationSchema>;
export type DestinationRequest = z.infer<typeof DestinationRequestSchema>;
export type CreateDeliveryRequest = z.infer<typeof CreateDeliveryRequestSchema>;
export type QuoteRequest = CreateDeliveryRequest;
export type DestinationUpdate = z.infer<typeof DestinationUpdateSchema>;
export type UpdateDeliveryRequest = z.infer<typeof UpdateDeliveryRequestSchema>;
export type DestinationRecord = z.infer<typeof DestinationRecordSchema>;
export type DeliveryRecord = z.infer<typeof DeliveryRecordSchema>;
export type Quote = z.infer<typeof QuoteSchema>;
export type OrderRecord = z.infer<typeof OrderRecordSchema>;
export type DeliveryList = z.infer<typeof DeliveryListSchema>;
export type OrderList = z.infer<typeof OrderListSchema>;
export type WebhookEvent = z.infer<typeof WebhookEventSchema>;
export type FieldIssue = z.infer<typeof FieldIssueSchema>;
export type ErrorBody = z.infer<typeof ErrorBodySchema>;
export type ErrorCode = (typeof ERROR_CODES)[number];
