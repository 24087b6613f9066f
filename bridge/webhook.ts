/**
 * One webhook, from raw request to delivered signal: signature over the raw bytes first (unsigned
 * bytes are never interpreted), then zod, then the route to the delivery's workflow and the signal.
 * Anything short of delivery is thrown as an HttpProblem; the server turns it into the answer.
 *
 * Each courier account has its own URL (bridge/server.ts) and is verified with its own secrets
 * only, read at each webhook (rotation without a restart). An account the bridge does not know is
 * verified against a decoy secret: its answer is a bad signature's, in the same time, so no
 * request can tell which accounts exist.
 *
 * Routing needs no visibility query: the workflow ID is deliveryWorkflowId(reference, account),
 * and a thin event carries only the provider's delivery id, so the reference_number is asked of
 * the provider once per delivery (with the account's own key: as the provider intends, details
 * are fetched through the API) and cached. Every cache is keyed by account: two accounts' ids
 * never meet.
 */
import type { IncomingMessage } from 'node:http';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { isProviderError } from '../provider/errors';
import { WebhookEventSchema, type WebhookEvent } from '../provider/schemas';
import { fieldIssues } from '../provider/validation';
import { generateWebhookSecret, verifyWebhook } from '../provider/webhook-signature';
import { statusChangedSignal } from '../contract/delivery-messages';
import { type StatusChange } from '../contract/delivery-types';
import { deliveryWorkflowId } from '../contract/workflow-ids';
import type { BridgeAccount, BridgeAccounts } from './accounts';
import { HttpProblem, type ReasonCode } from './outcomes';
import { ExpiringSet } from './negative-cache';
import { DeliveredEvents } from './recent';
import { ReferenceCache } from './reference-cache';

export interface WebhookHandlerOptions {
  temporal: Client;
  accounts: BridgeAccounts;
  maxBodyBytes: number;
  referenceCacheSize: number;
  deliveredIdsSize: number;
  /** Unknown deliveries and ended workflows remembered (bounded, expiring): replays cost no call. */
  negativeCacheSize: number;
  negativeCacheMs: number;
  /**
   * How long a call to Temporal may take (its retries included) before the webhook is answered
   * 503 + Retry-After: while a frontend or history process is down and the ring moves its shards,
   * the provider's own retry carries the event over instead of a request left hanging.
   */
  temporalTimeoutMs: number;
  now: () => number;
  /** Called when an answer came from the negative cache instead of the provider or Temporal. */
  onNegativeHit?: (kind: 'unknown_delivery' | 'workflow_closed') => void;
  /** Called when an account's secrets could not be read (a missing file): the webhook is answered as a bad signature, recorded as `secrets_unreadable`. */
  onSecretsError?: (account: string, err: Error) => void;
}

/** A webhook that needs no retry: the signal is in the workflow's history, or can change nothing. */
export interface Delivered {
  outcome: 'accepted' | 'duplicate' | 'workflow_closed';
  code: ReasonCode;
  workflowId: string;
}

/** Filled in as the request is understood, so a failure can still be shown with what was known. */
export interface Seen {
  event?: WebhookEvent;
  workflowId?: string;
}

/** (account, id) as one cache key: an account id never holds `\u0000`. */
const scoped = (account: string, id: string) => `${account}\u0000${id}`;

export function createWebhookHandler(o: WebhookHandlerOptions) {
  /** Signs nothing: an unknown account's webhook is checked against it, so it costs what a known one's does. */
  const decoy = [generateWebhookSecret()];
  const references = new ReferenceCache(o.referenceCacheSize, async (key) => {
    const cut = key.indexOf('\u0000');
    const account = o.accounts.get(key.slice(0, cut));
    if (!account) throw new HttpProblem(503, 'provider_unavailable', 'the account is no longer served');
    const record = await account.provider.getDelivery(key.slice(cut + 1));
    return record.reference_number ?? undefined;
  });
  const delivered = new DeliveredEvents(o.deliveredIdsSize);
  /** Delivery ids the provider does not know (404) or that carry no reference, for a short while. */
  const unknownDeliveries = new ExpiringSet(o.negativeCacheSize, o.negativeCacheMs, o.now);
  const noReference = new ExpiringSet(o.negativeCacheSize, o.negativeCacheMs, o.now);
  /** Workflow IDs seen closed: a late or replayed event is acknowledged without a signal or describe. */
  const closedWorkflows = new ExpiringSet(o.negativeCacheSize, o.negativeCacheMs, o.now);
  /** Signals under way, by event id: a copy arriving meanwhile waits for the first instead of signalling too. */
  const inFlight = new Map<string, Promise<Delivered>>();

  /**
   * The account's secrets, or the decoy for an unknown account or one without secrets (the same
   * answer, the same work). Secrets that cannot be read (a file missing or unreadable right now)
   * give the decoy too, `unreadable`: a 503 would tell anyone that the account exists, and the
   * courier retries a 401 as it retries a 503 (docs/accounts.md).
   */
  function secretsOf(account: BridgeAccount | undefined): { secrets: readonly string[]; unreadable?: true } {
    if (!account) {
      o.accounts.decoyRead();
      return { secrets: decoy };
    }
    try {
      const secrets = account.webhookSecrets();
      return { secrets: secrets.length > 0 ? secrets : decoy };
    } catch (err) {
      o.onSecretsError?.(account.id, err as Error);
      return { secrets: decoy, unreadable: true };
    }
  }

  /** `account`: the id the request's URL names, undefined when it names none the bridge serves. */
  async function handle(req: IncomingMessage, seen: Seen, accountId: string | undefined): Promise<Delivered> {
    const contentType = (header(req, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/json') throw new HttpProblem(415, 'unsupported_media_type', 'content type must be application/json');
    const raw = await readBody(req, o.maxBodyBytes);

    const account = accountId === undefined ? undefined : o.accounts.get(accountId);
    const id = header(req, 'webhook-id');
    const { secrets, unreadable } = secretsOf(account);
    const verified = verifyWebhook(secrets, { id, timestamp: header(req, 'webhook-timestamp'), signature: header(req, 'webhook-signature') }, raw, o.now());
    if (!verified.ok) throw new HttpProblem(401, verified.reason, `signature not accepted: ${verified.reason}`, {}, unreadable ? 'secrets_unreadable' : verified.reason);
    // Only the decoy was tried: nobody holds it; said again so no change above can let the webhook through.
    if (unreadable) throw new HttpProblem(401, 'no_matching_signature', 'signature not accepted: no_matching_signature', {}, 'secrets_unreadable');
    // Only the decoy could have matched, and nobody holds it; said again so no change above can let an unknown account through.
    if (!account) throw new HttpProblem(401, 'no_matching_signature', 'signature not accepted: no_matching_signature');

    let json: unknown;
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new HttpProblem(400, 'invalid_json', 'body is not valid JSON');
    }
    const parsed = WebhookEventSchema.safeParse(json);
    if (!parsed.success) throw new HttpProblem(400, 'invalid_event', 'body is not a webhook event of the contract', { details: fieldIssues(parsed.error) });
    const event = (seen.event = parsed.data);
    if (event.id !== id) throw new HttpProblem(400, 'id_mismatch', 'webhook-id does not match the event id');

    const eventKey = scoped(account.id, event.id);
    const known = delivered.get(eventKey);
    if (known !== undefined) return { outcome: 'duplicate', code: 'already_delivered', workflowId: (seen.workflowId = known) };
    const earlier = inFlight.get(eventKey);
    if (earlier) {
      const first = await earlier.catch(() => undefined);
      if (first?.outcome === 'accepted') return { outcome: 'duplicate', code: 'already_delivered', workflowId: (seen.workflowId = first.workflowId) };
    }
    const attempt = deliver(account.id, event, seen);
    inFlight.set(eventKey, attempt);
    try {
      const result = await attempt;
      if (result.outcome === 'accepted') delivered.add(eventKey, result.workflowId);
      return result;
    } finally {
      if (inFlight.get(eventKey) === attempt) inFlight.delete(eventKey);
    }
  }

  async function deliver(account: string, event: WebhookEvent, seen: Seen): Promise<Delivered> {
    const workflowId = (seen.workflowId = deliveryWorkflowId(await referenceOf(account, event), account));
    if (closedWorkflows.has(workflowId)) {
      o.onNegativeHit?.('workflow_closed');
      return { outcome: 'workflow_closed', code: 'workflow_closed', workflowId };
    }
    try {
      await o.temporal.withDeadline(Date.now() + o.temporalTimeoutMs, () => o.temporal.workflow.getHandle(workflowId).signal(statusChangedSignal, toStatusChange(event)));
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw new HttpProblem(503, 'temporal_unavailable', 'Temporal is unavailable', { workflow_id: workflowId });
      // The delivery's story is over; a late or repeated event cannot change it, and a retry
      // would fail the same way for an hour. Acknowledge, and say so.
      if (await isClosed(workflowId)) {
        closedWorkflows.add(workflowId);
        return { outcome: 'workflow_closed', code: 'workflow_closed', workflowId };
      }
      throw new HttpProblem(503, 'workflow_not_started', 'workflow not started yet', { workflow_id: workflowId });
    }
    return { outcome: 'accepted', code: 'signal_delivered', workflowId };
  }

  async function referenceOf(account: string, event: WebhookEvent): Promise<string> {
    const deliveryId = scoped(account, event.data.delivery_id);
    if (unknownDeliveries.has(deliveryId)) {
      o.onNegativeHit?.('unknown_delivery');
      throw new HttpProblem(503, 'unknown_delivery', 'unknown delivery');
    }
    if (noReference.has(deliveryId)) {
      o.onNegativeHit?.('unknown_delivery');
      throw new HttpProblem(503, 'no_reference', 'the delivery has no reference number, so no workflow to route to');
    }
    let reference: string | undefined;
    try {
      reference = await references.get(deliveryId);
    } catch (err) {
      if (err instanceof HttpProblem) throw err;
      if (isProviderError(err) && err.kind === 'not_found') {
        unknownDeliveries.add(deliveryId);
        throw new HttpProblem(503, 'unknown_delivery', 'unknown delivery');
      }
      if (isProviderError(err) && err.kind === 'unauthorized') throw new HttpProblem(503, 'provider_unavailable', 'the provider rejected our API key while looking up the delivery');
      throw new HttpProblem(503, 'provider_unavailable', 'the provider is unavailable to look up the delivery');
    }
    if (!reference) noReference.add(deliveryId);
    if (!reference) throw new HttpProblem(503, 'no_reference', 'the delivery has no reference number, so no workflow to route to');
    return reference;
  }

  async function isClosed(workflowId: string): Promise<boolean> {
    try {
      const d = await o.temporal.withDeadline(Date.now() + o.temporalTimeoutMs, () => o.temporal.workflow.getHandle(workflowId).describe());
      return d.status.name !== 'RUNNING';
    } catch {
      return false;
    }
  }

  return {
    handle,
    sizes: { referenceCache: () => references.size, deliveredEvents: () => delivered.size, unknownDeliveries: () => unknownDeliveries.size + noReference.size, closedWorkflows: () => closedWorkflows.size },
  };
}

function toStatusChange(event: WebhookEvent): StatusChange {
  return {
    deliveryId: event.data.delivery_id,
    destinationId: event.type === 'destination.status_changed' ? event.data.destination_id : undefined,
    status: event.data.status,
    eventId: event.id,
    occurredAt: event.created_at,
    source: 'webhook',
  };
}

export function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The raw body, up to `limit` bytes. Settles exactly once whatever the client does: over the
 * limit (413), connection reset or closed before the end (aborted). What is left unread is the
 * server's to discard.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(new HttpProblem(413, 'body_too_large', `body over ${limit} bytes`));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        stop();
        reject(new HttpProblem(413, 'body_too_large', `body over ${limit} bytes`));
      } else chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      resolve(Buffer.concat(chunks));
    };
    const onClose = () => {
      stop();
      reject(new HttpProblem(400, 'aborted', 'the request ended before its body was complete'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('close', onClose);
  });
}
