/**
 * The /_sim control API: a local test tool with NO authentication. It can read every key's
 * data and rewrite any delivery, so it must never be reachable from outside the machine (the
 * simulator binds 127.0.0.1 by default for this reason), and the server lets through only
 * requests with its own Host, no foreign Origin, and JSON on every POST/PUT (provider/http-guard.ts),
 * so no web page can drive it or read it. It never returns an API key or a webhook secret, only
 * their fingerprints. Not rate limited, not in the request log. The dashboard (GET /_sim, dashboard.ts)
 * drives these same routes from its own origin.
 */
import { z } from 'zod';
import { fieldIssues } from '../provider/validation';
import { secretFingerprint, WebhookSecretSchema } from '../provider/webhook-signature';
import { ACCOUNT_ID_RULE } from '../contract/accounts';
import { AccountRegistrationSchema, type SimAccount, SimAccountIdSchema } from './accounts';
import type { SimContext } from './context';
import { dashboardPage, dashboardView } from './dashboard';
import { FaultsPatchSchema, mergeFaults } from './faults';
import { type Endpoint, errorReply, type Reply, type RouteTable, validationReply } from './http-util';

export interface ControlCall {
  params: string[];
  query: URLSearchParams;
  body: unknown;
}
type Handler = (ctx: SimContext, call: ControlCall) => Reply;
export type ControlEndpoint = Endpoint<Handler>;

const AdvanceSchema = z
  .object({
    destination_id: z.string().min(1).optional(),
    /** Any string: tests may send statuses the contract does not know yet. */
    status: z.string().min(1).max(64).optional(),
  })
  .strict();

/** The caller chooses the secret: it is never shown again, so one made up here would be of no use. */
const WebhookEndpointSchema = z
  .object({
    url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).nullable(),
    secret: WebhookSecretSchema.optional(),
  })
  .strict()
  .refine((b) => b.url === null || b.secret !== undefined, { message: 'is required with a url (whsec_<base64 of 24-64 bytes>)', path: ['secret'] });

function sinceParams(query: URLSearchParams): { since: number; limit: number } {
  const since = Number(query.get('since') ?? 0);
  const limit = Number(query.get('limit') ?? Number.POSITIVE_INFINITY);
  return { since: Number.isInteger(since) && since > 0 ? since : 0, limit: limit > 0 ? limit : Number.POSITIVE_INFINITY };
}

const advance: Handler = (ctx, { params, body }) => {
  const id = params[0] ?? '';
  const sd = ctx.store.anyDelivery(id);
  if (!sd) return errorReply(404, 'not_found', `no delivery with id ${id}`);
  const parsed = AdvanceSchema.safeParse(body ?? {});
  if (!parsed.success) return validationReply(fieldIssues(parsed.error));
  const { destination_id, status } = parsed.data;
  let changed: boolean;
  if (destination_id !== undefined) {
    const d = sd.record.destinations.find((x) => x.id === destination_id);
    if (!d) return errorReply(404, 'not_found', `delivery ${id} has no destination ${destination_id}`);
    changed = status !== undefined ? ctx.lifecycle.setDestination(sd, d, status) : ctx.lifecycle.stepDestination(sd, d);
  } else {
    changed = status !== undefined ? ctx.lifecycle.setDelivery(sd, status) : ctx.lifecycle.step(sd);
  }
  // Setting the current status again is a harmless no-op; only "no next step" is a conflict.
  if (!changed && status === undefined) return errorReply(409, 'conflict', 'no next step on the happy path from the current status');
  return { status: 200, body: sd.record };
};

const endpointView = (ctx: SimContext) => {
  const e = ctx.webhooks.endpoint;
  return { url: e?.url ?? null, secret_fingerprint: e ? secretFingerprint(e.secret) : null };
};

const setWebhookEndpoint: Handler = (ctx, { body }) => {
  const parsed = WebhookEndpointSchema.safeParse(body);
  if (!parsed.success) return validationReply(fieldIssues(parsed.error));
  const { url, secret } = parsed.data;
  ctx.webhooks.endpoint = url === null || secret === undefined ? null : { url, secret };
  return { status: 200, body: endpointView(ctx) };
};

/** An account as the control API shows it: fingerprints, never the key or the secret. */
const accountView = (a: SimAccount) => ({
  id: a.id,
  key_fingerprint: a.keyDigest.slice(0, 12),
  webhook_url: a.webhook?.url ?? null,
  secret_fingerprint: a.webhook ? secretFingerprint(a.webhook.secret) : null,
  limits: a.limits,
});

const accountId = (params: string[]) => SimAccountIdSchema.safeParse(params[0] ?? '');

/** Registers or updates the account: its key (replacing the one before), webhook endpoint and limits. */
const putAccount: Handler = (ctx, { params, body }) => {
  const id = accountId(params);
  if (!id.success) return validationReply([{ field: 'id', message: ACCOUNT_ID_RULE }]);
  const parsed = AccountRegistrationSchema.safeParse(body);
  if (!parsed.success) return validationReply(fieldIssues(parsed.error));
  const result = ctx.registerAccount(id.data, parsed.data);
  if (!result.ok) return errorReply(409, 'conflict', result.message);
  return { status: result.created ? 201 : 200, body: accountView(result.account) };
};

const getAccount: Handler = (ctx, { params }) => {
  const a = ctx.accounts.get(params[0] ?? '');
  return a ? { status: 200, body: accountView(a) } : errorReply(404, 'not_found', `no account ${params[0] ?? ''}`);
};

/** Removes the account: its key is refused from now on; its deliveries stay (their webhooks go to the simulator's endpoint). */
const deleteAccount: Handler = (ctx, { params }) => {
  const a = ctx.removeAccount(params[0] ?? '');
  return a ? { status: 200, body: accountView(a) } : errorReply(404, 'not_found', `no account ${params[0] ?? ''}`);
};

const setFaults: Handler = (ctx, { body }) => {
  const parsed = FaultsPatchSchema.safeParse(body ?? {});
  if (!parsed.success) return validationReply(fieldIssues(parsed.error));
  ctx.faults = mergeFaults(ctx.faults, parsed.data);
  return { status: 200, body: ctx.faults };
};

const requests: Handler = (ctx, { query }) => {
  const { since, limit } = sinceParams(query);
  const { entries, next } = ctx.requests.since(since, limit);
  return { status: 200, body: { data: entries, next } };
};

const webhooks: Handler = (ctx, { query }) => {
  const { since, limit } = sinceParams(query);
  const { entries, next } = ctx.webhooks.attempts.since(since, limit);
  return { status: 200, body: { data: entries, next, events: ctx.webhooks.dispatchList(), endpoint: ctx.webhooks.endpoint?.url ?? null } };
};

const deliveries: Handler = (ctx) => ({
  status: 200,
  body: { data: ctx.store.all().map((sd) => ({ key_fingerprint: sd.fingerprint, account: ctx.accounts.ofScope(sd.scope)?.id ?? null, delivery: sd.record, order: sd.order })) },
});

const FailReadsSchema = z.object({ count: z.number().int().min(0).max(1_000) }).strict();

/** The next `count` reads of one delivery answer 503: a provider that cannot serve it for a while. */
const failReads: Handler = (ctx, { params, body }) => {
  const id = params[0] ?? '';
  if (!ctx.store.anyDelivery(id)) return errorReply(404, 'not_found', `no delivery with id ${id}`);
  const parsed = FailReadsSchema.safeParse(body);
  if (!parsed.success) return validationReply(fieldIssues(parsed.error));
  ctx.failReads.set(id, parsed.data.count);
  return { status: 200, body: { delivery_id: id, failing_reads: parsed.data.count } };
};

const reset: Handler = (ctx) => {
  ctx.reset();
  return { status: 200, body: { reset: true, faults: ctx.faults } };
};

const json = (body: Endpoint<Handler>['body'], handle: Handler): ControlEndpoint => ({ body, handle });

export const CONTROL_ROUTES: readonly RouteTable<ControlEndpoint>[] = [
  { pattern: /^\/_sim\/?$/, methods: { GET: json('none', (ctx) => ({ status: 200, ...dashboardPage(ctx) })) } },
  { pattern: /^\/_sim\/overview$/, methods: { GET: json('none', (ctx) => ({ status: 200, body: dashboardView(ctx) })) } },
  { pattern: /^\/_sim\/deliveries$/, methods: { GET: json('none', deliveries) } },
  { pattern: /^\/_sim\/deliveries\/([^/]+)\/advance$/, methods: { POST: json('optional', advance) } },
  { pattern: /^\/_sim\/deliveries\/([^/]+)\/fail-reads$/, methods: { POST: json('json', failReads) } },
  { pattern: /^\/_sim\/webhook-endpoint$/, methods: { PUT: json('json', setWebhookEndpoint), GET: json('none', (ctx) => ({ status: 200, body: endpointView(ctx) })) } },
  { pattern: /^\/_sim\/accounts$/, methods: { GET: json('none', (ctx) => ({ status: 200, body: { data: ctx.accounts.all().map(accountView) } })) } },
  { pattern: /^\/_sim\/accounts\/([^/]+)$/, methods: { PUT: json('json', putAccount), GET: json('none', getAccount), DELETE: json('none', deleteAccount) } },
  { pattern: /^\/_sim\/faults$/, methods: { POST: json('optional', setFaults), GET: json('none', (ctx) => ({ status: 200, body: ctx.faults })) } },
  { pattern: /^\/_sim\/requests$/, methods: { GET: json('none', requests) } },
  { pattern: /^\/_sim\/webhooks$/, methods: { GET: json('none', webhooks) } },
  { pattern: /^\/_sim\/reset$/, methods: { POST: json('optional', reset) } },
];
