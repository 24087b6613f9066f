/**
 * The provider's /v1 API (contract § Call families). Handlers are synchronous: the body is
 * already read and parsed, auth and rate limits are done by server.ts. Every record is built
 * from the types inferred from provider/schemas.ts, so answers have the contract's layout.
 */
import { z } from 'zod';
import { canCancel, canUpdate } from '../provider/lifecycle';
import { IDEMPOTENCY_TTL_MS, QUOTE_VALIDITY_MS, type CallFamily } from '../provider/limits';
import { pickupTimeIssues } from '../provider/rules';
import {
  CreateDeliveryRequestSchema,
  QuoteRequestSchema,
  UpdateDeliveryRequestSchema,
  type CreateDeliveryRequest,
  type DeliveryRecord,
  type DestinationRecord,
  type FieldIssue,
  type KeyCheckSchema,
  type OrderRecord,
  type Quote,
} from '../provider/schemas';
import { fieldIssues } from '../provider/validation';
import type { Caller } from './auth';
import { iso } from './clock';
import type { SimContext } from './context';
import { type Endpoint, errorReply, type Reply, type RouteTable, validationReply } from './http-util';
import { priceFor } from './pricing';
import { canonicalJson, newId, type StoredDelivery } from './store';

export interface ApiCall {
  caller: Caller;
  params: string[];
  query: URLSearchParams;
  body: unknown;
  idempotencyKey: string | undefined;
}

type Handler = (ctx: SimContext, call: ApiCall) => Reply;
export type ApiEndpoint = Endpoint<Handler> & { family: CallFamily };

const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

const PageQuerySchema = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  page_size: z.coerce.number().int().min(1).max(100).default(20),
});

/** Query parameters as a plain object, without empty values. */
function queryObject(q: URLSearchParams, names: readonly string[]): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const n of names) {
    const v = q.get(n);
    out[n] = v === null || v === '' ? undefined : v;
  }
  return out;
}

function notFound(what: string, id: string): Reply {
  return errorReply(404, 'not_found', `no ${what} with id ${id}`);
}

/** Shape issues plus the time rule, so one 422 names everything wrong at once. */
function shapeIssues(error: z.ZodError, body: unknown, now: number): FieldIssue[] {
  const raw = body !== null && typeof body === 'object' ? (body as Record<string, unknown>).desired_pickup_time : undefined;
  return [...fieldIssues(error), ...(typeof raw === 'string' ? pickupTimeIssues(raw, now) : [])];
}

function buildDelivery(ctx: SimContext, caller: Caller, req: CreateDeliveryRequest): StoredDelivery {
  const at = iso(ctx.now());
  const price = priceFor(req, ctx.currency);
  const destinations: DestinationRecord[] = req.destinations.map((d) => {
    const id = newId('dst');
    return {
      id,
      status: 'PENDING',
      tracking_url: `${ctx.publicBaseUrl}/track/${id}`,
      location: d.location,
      package_type: d.package_type,
      time_window_start: d.time_window_start,
      time_window_end: d.time_window_end,
      reference_number: d.reference_number ?? null,
      updated_at: at,
    };
  });
  const record: DeliveryRecord = {
    id: newId('del'),
    status: 'CREATED',
    reference_number: req.reference_number ?? null,
    is_food: req.is_food,
    desired_pickup_time: req.desired_pickup_time,
    pickup_location: req.pickup_location,
    price,
    created_at: at,
    updated_at: at,
    destinations,
  };
  const order: OrderRecord = { id: newId('ord'), delivery_id: record.id, amount: price.amount, currency: price.currency, status: 'OPEN', created_at: at };
  return { scope: caller.scope, fingerprint: caller.fingerprint, record, order };
}

const createDelivery: Handler = (ctx, { caller, body, idempotencyKey }) => {
  const parsed = CreateDeliveryRequestSchema.safeParse(body);
  if (!parsed.success) return validationReply(shapeIssues(parsed.error, body, ctx.now()));
  const now = ctx.now();
  const fault = ctx.faults.reference_faults[parsed.data.reference_number ?? ''];
  if (fault === 500) return errorReply(500, 'internal_error', 'injected fault: this reference always fails');
  if (fault === 422) return validationReply([{ field: 'reference_number', message: 'injected fault: refused for this reference' }]);

  // Idempotency comes before the time rule: a replay must answer even once the pickup time passed.
  const key = ctx.faults.ignore_idempotency_keys ? undefined : idempotencyKey;
  let canonicalBody: string | undefined;
  if (key !== undefined) {
    if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      return validationReply([{ field: 'Idempotency-Key', message: `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters` }]);
    }
    canonicalBody = canonicalJson(body);
    const prior = ctx.store.findIdempotency(caller.scope, key, now);
    if (prior) {
      if (prior.canonicalBody !== canonicalBody) {
        return errorReply(409, 'idempotency_conflict', 'this Idempotency-Key was already used with a different body');
      }
      const first = ctx.store.delivery(caller.scope, prior.deliveryId);
      if (first) return { status: 200, body: first.record };
    }
  }

  const timeIssues = pickupTimeIssues(parsed.data.desired_pickup_time, now);
  if (timeIssues.length > 0) return validationReply(timeIssues);

  const sd = buildDelivery(ctx, caller, parsed.data);
  ctx.store.add(sd);
  if (key !== undefined && canonicalBody !== undefined) {
    ctx.store.rememberIdempotency(caller.scope, key, { canonicalBody, deliveryId: sd.record.id, expiresAt: now + ctx.scale.real(IDEMPOTENCY_TTL_MS) }, now);
  }
  ctx.auto.track(sd);
  return { status: 201, body: sd.record };
};

const getDelivery: Handler = (ctx, { caller, params }) => {
  const id = params[0] ?? '';
  const sd = ctx.store.delivery(caller.scope, id);
  return sd ? { status: 200, body: sd.record } : notFound('delivery', id);
};

const listDeliveries: Handler = (ctx, { caller, query }) => {
  const q = queryObject(query, ['page', 'page_size', 'status', 'reference_number']);
  const parsed = PageQuerySchema.safeParse(q);
  if (!parsed.success) return validationReply(fieldIssues(parsed.error));
  const page = ctx.store.listDeliveries(caller.scope, { status: q.status, reference_number: q.reference_number }, parsed.data.page, parsed.data.page_size);
  return { status: 200, body: page };
};

const updateDelivery: Handler = (ctx, { caller, params, body }) => {
  const id = params[0] ?? '';
  const sd = ctx.store.delivery(caller.scope, id);
  if (!sd) return notFound('delivery', id);
  const parsed = UpdateDeliveryRequestSchema.safeParse(body);
  if (!parsed.success) return validationReply(shapeIssues(parsed.error, body, ctx.now()));
  const r = sd.record;
  if (!canUpdate(r.status)) return errorReply(409, 'conflict', `delivery is ${r.status}; updates are allowed only while CREATED or ASSIGNED`);
  const u = parsed.data;

  const issues = pickupTimeIssues(u.desired_pickup_time, ctx.now());
  const byId = new Map(r.destinations.map((d) => [d.id, d]));
  const seen = new Set<string>();
  u.destinations?.forEach((du, i) => {
    const d = byId.get(du.id);
    if (!d) return void issues.push({ field: `destinations[${i}].id`, message: 'no destination with this id in this delivery' });
    if (seen.has(du.id)) return void issues.push({ field: `destinations[${i}].id`, message: 'this destination is listed twice' });
    seen.add(du.id);
    // A new bound is checked against the unchanged one.
    const start = du.time_window_start ?? d.time_window_start;
    const end = du.time_window_end ?? d.time_window_end;
    if (Date.parse(end) <= Date.parse(start)) {
      issues.push(
        du.time_window_end !== undefined
          ? { field: `destinations[${i}].time_window_end`, message: 'must be after time_window_start' }
          : { field: `destinations[${i}].time_window_start`, message: 'must be before time_window_end' },
      );
    }
  });
  if (issues.length > 0) return validationReply(issues);

  const at = iso(ctx.now());
  if (u.desired_pickup_time !== undefined) r.desired_pickup_time = u.desired_pickup_time;
  if (u.pickup_location !== undefined) r.pickup_location = u.pickup_location;
  if (u.is_food !== undefined) r.is_food = u.is_food;
  for (const du of u.destinations ?? []) {
    // Mutated in place: the store's destination index points at these objects.
    const d = byId.get(du.id) as DestinationRecord;
    if (du.location !== undefined) d.location = du.location;
    if (du.package_type !== undefined) d.package_type = du.package_type;
    if (du.time_window_start !== undefined) d.time_window_start = du.time_window_start;
    if (du.time_window_end !== undefined) d.time_window_end = du.time_window_end;
    if (du.reference_number !== undefined) d.reference_number = du.reference_number;
    d.updated_at = at;
  }
  r.price = priceFor(r, ctx.currency);
  sd.order.amount = r.price.amount;
  sd.order.currency = r.price.currency;
  r.updated_at = at;
  return { status: 200, body: r };
};

const cancelDelivery: Handler = (ctx, { caller, params }) => {
  const id = params[0] ?? '';
  const sd = ctx.store.delivery(caller.scope, id);
  if (!sd) return notFound('delivery', id);
  if (!canCancel(sd.record.status)) return errorReply(409, 'conflict', `delivery is ${sd.record.status}; it can be cancelled only before PICKED_UP`);
  ctx.lifecycle.setDelivery(sd, 'CANCELED');
  return { status: 200, body: sd.record };
};

const createQuote: Handler = (ctx, { body }) => {
  const parsed = QuoteRequestSchema.safeParse(body);
  if (!parsed.success) return validationReply(shapeIssues(parsed.error, body, ctx.now()));
  const now = ctx.now();
  const timeIssues = pickupTimeIssues(parsed.data.desired_pickup_time, now);
  if (timeIssues.length > 0) return validationReply(timeIssues);
  const quote: Quote = { price: priceFor(parsed.data, ctx.currency), expires_at: iso(now + ctx.scale.real(QUOTE_VALIDITY_MS)) };
  return { status: 200, body: quote };
};

const listOrders: Handler = (ctx, { caller, query }) => {
  const q = queryObject(query, ['page', 'page_size', 'delivery_id']);
  const parsed = PageQuerySchema.safeParse(q);
  if (!parsed.success) return validationReply(fieldIssues(parsed.error));
  return { status: 200, body: ctx.store.listOrders(caller.scope, q.delivery_id, parsed.data.page, parsed.data.page_size) };
};

const getOrder: Handler = (ctx, { caller, params }) => {
  const id = params[0] ?? '';
  const order = ctx.store.order(caller.scope, id);
  return order ? { status: 200, body: order } : notFound('order', id);
};

const checkKey: Handler = () => {
  const body: z.infer<typeof KeyCheckSchema> = { valid: true };
  return { status: 200, body };
};

const other = (body: ApiEndpoint['body'], handle: Handler): ApiEndpoint => ({ family: 'other', body, handle });

export const API_ROUTES: readonly RouteTable<ApiEndpoint>[] = [
  { pattern: /^\/v1\/deliveries$/, methods: { GET: other('none', listDeliveries), POST: { family: 'creations', body: 'json', handle: createDelivery } } },
  { pattern: /^\/v1\/deliveries\/([^/]+)$/, methods: { GET: other('none', getDelivery), PATCH: other('json', updateDelivery) } },
  { pattern: /^\/v1\/deliveries\/([^/]+)\/actions\/cancel$/, methods: { POST: other('optional', cancelDelivery) } },
  { pattern: /^\/v1\/quotes$/, methods: { POST: { family: 'quotes', body: 'json', handle: createQuote } } },
  { pattern: /^\/v1\/orders$/, methods: { GET: other('none', listOrders) } },
  { pattern: /^\/v1\/orders\/([^/]+)$/, methods: { GET: other('none', getOrder) } },
  { pattern: /^\/v1\/health\/token$/, methods: { GET: other('none', checkKey) } },
];
