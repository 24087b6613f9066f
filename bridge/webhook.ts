/**
 * One webhook, from raw request to delivered signal: signature over the raw bytes first (unsigned
 * bytes are never interpreted), then zod, then the route to `delivery:<reference>` and the signal.
 * Anything short of delivery is thrown as an HttpProblem; the server turns it into the answer.
 *
 * Routing needs no visibility query: the workflow ID is `delivery:<reference>`, and a thin event
 * carries only the provider's delivery id, so the reference_number is asked of the provider once
 * per delivery (as the provider intends: details are fetched through the API) and cached.
 */
import type { IncomingMessage } from 'node:http';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { ProviderClient } from '../provider/client';
import { isProviderError } from '../provider/errors';
import { WebhookEventSchema, type WebhookEvent } from '../provider/schemas';
import { fieldIssues } from '../provider/validation';
import { verifyWebhook } from '../provider/webhook-signature';
import { statusChangedSignal } from '../contract/delivery-messages';
import { type StatusChange } from '../contract/delivery-types';
import { deliveryWorkflowId } from '../contract/workflow-ids';
import { HttpProblem, type ReasonCode } from './outcomes';
import { ExpiringSet } from './negative-cache';
import { DeliveredEvents } from './recent';
import { ReferenceCache } from './reference-cache';

export interface WebhookHandlerOptions {
  temporal: Client;
  provider: ProviderClient;
  secrets: readonly string[];
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

export function createWebhookHandler(o: WebhookHandlerOptions) {
  const references = new ReferenceCache(o.referenceCacheSize, async (deliveryId) => {
    const record = await o.provider.getDelivery(deliveryId);
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

  async function handle(req: IncomingMessage, seen: Seen): Promise<Delivered> {
    const contentType = (header(req, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/json') throw new HttpProblem(415, 'unsupported_media_type', 'content type must be application/json');
    const raw = await readBody(req, o.maxBodyBytes);

    const id = header(req, 'webhook-id');
    const verified = verifyWebhook(o.secrets, { id, timestamp: header(req, 'webhook-timestamp'), signature: header(req, 'webhook-signature') }, raw, o.now());
    if (!verified.ok) throw new HttpProblem(401, verified.reason, `signature not accepted: ${verified.reason}`);

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

    const known = delivered.get(event.id);
    if (known !== undefined) return { outcome: 'duplicate', code: 'already_delivered', workflowId: (seen.workflowId = known) };
    const earlier = inFlight.get(event.id);
    if (earlier) {
      const first = await earlier.catch(() => undefined);
      if (first?.outcome === 'accepted') return { outcome: 'duplicate', code: 'already_delivered', workflowId: (seen.workflowId = first.workflowId) };
    }
    const attempt = deliver(event, seen);
    inFlight.set(event.id, attempt);
    try {
      const result = await attempt;
      if (result.outcome === 'accepted') delivered.add(event.id, result.workflowId);
      return result;
    } finally {
      if (inFlight.get(event.id) === attempt) inFlight.delete(event.id);
    }
  }

  async function deliver(event: WebhookEvent, seen: Seen): Promise<Delivered> {
    const workflowId = (seen.workflowId = deliveryWorkflowId(await referenceOf(event)));
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

  async function referenceOf(event: WebhookEvent): Promise<string> {
    const deliveryId = event.data.delivery_id;
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
