/**
 * The webhook bridge: verifies a provider webhook's signature over the raw bytes, parses it,
 * and signals the workflow of that delivery. It answers 2xx only once the signal is delivered;
 * when the workflow (or the delivery) cannot be found yet it answers 503 with Retry-After, so the
 * provider's own retries carry the event over.
 *
 * Routing needs no visibility query: the workflow ID is `delivery:<reference>`, and a thin event
 * carries only the provider's delivery id, so the bridge asks the provider for the delivery's
 * reference_number once (as the provider intends: details are fetched through the API) and
 * caches it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { ProviderClient } from '../provider/client';
import { isProviderError } from '../provider/errors';
import { WebhookEventSchema, type WebhookEvent } from '../provider/schemas';
import { fieldIssues } from '../provider/validation';
import { verifyWebhook } from '../provider/webhook-signature';
import { statusChangedSignal, type StatusChange } from '../workflows/messages';
import { deliveryWorkflowId } from '../workflows/task-queues';
import { ReferenceCache } from './reference-cache';

export const WEBHOOK_PATH = '/webhooks/delivery';

export interface BridgeOptions {
  temporal: Client;
  /** Used only to learn a delivery's reference number. */
  provider: ProviderClient;
  /** Every secret currently accepted (more than one during rotation). */
  secrets: readonly string[];
  maxBodyBytes?: number;
  /** Seconds the provider is asked to wait before retrying an event we could not deliver yet. */
  retryAfterSeconds?: number;
  referenceCacheSize?: number;
  now?: () => number;
  log?: (entry: Record<string, unknown>) => void;
}

export type WebhookOutcome = 'accepted' | 'workflow_closed' | 'rejected' | 'retry_later';

export interface Bridge {
  server: Server;
  listen(port?: number, host?: string): Promise<string>;
  close(): Promise<void>;
}

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers?: Record<string, string>;
}

class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(reason);
  }
}

export function createBridge(o: BridgeOptions): Bridge {
  if (o.secrets.length === 0) throw new Error('the bridge needs at least one webhook secret (DELIVERY_WEBHOOK_SECRETS)');
  const maxBodyBytes = o.maxBodyBytes ?? 64 * 1024;
  const retryAfter = String(o.retryAfterSeconds ?? 5);
  const now = o.now ?? Date.now;
  const log = o.log ?? ((entry) => process.stdout.write(JSON.stringify(entry) + '\n'));
  const references = new ReferenceCache(o.referenceCacheSize ?? 10_000, async (deliveryId) => {
    const record = await o.provider.getDelivery(deliveryId);
    return record.reference_number ?? undefined;
  });

  async function handleWebhook(req: IncomingMessage): Promise<Answer> {
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (contentType !== 'application/json') throw new HttpProblem(415, 'content type must be application/json');
    const raw = await readBody(req, maxBodyBytes);

    // Verify before parsing anything: unsigned bytes are never interpreted.
    const verified = verifyWebhook(
      o.secrets,
      { id: header(req, 'webhook-id'), timestamp: header(req, 'webhook-timestamp'), signature: header(req, 'webhook-signature') },
      raw,
      now(),
    );
    if (!verified.ok) throw new HttpProblem(401, `signature not accepted: ${verified.reason}`);

    let json: unknown;
    try {
      json = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new HttpProblem(400, 'body is not valid JSON');
    }
    const parsed = WebhookEventSchema.safeParse(json);
    if (!parsed.success) throw new HttpProblem(400, 'body is not a webhook event of the contract', { details: fieldIssues(parsed.error) });
    const event = parsed.data;
    if (event.id !== header(req, 'webhook-id')) throw new HttpProblem(400, 'webhook-id does not match the event id');

    const reference = await referenceOf(event);
    const workflowId = deliveryWorkflowId(reference);
    try {
      await o.temporal.workflow.getHandle(workflowId).signal(statusChangedSignal, toStatusChange(event));
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw new HttpProblem(503, 'Temporal is unavailable', { workflow_id: workflowId });
      if (await isClosed(workflowId)) {
        // The delivery's story is over; a late or repeated event cannot change it, and a retry
        // would fail the same way for an hour. Acknowledge, and say so.
        return { status: 200, body: { outcome: 'workflow_closed', workflow_id: workflowId } };
      }
      throw new HttpProblem(503, 'workflow not started yet', { workflow_id: workflowId });
    }
    return { status: 200, body: { outcome: 'accepted', workflow_id: workflowId } };
  }

  async function referenceOf(event: WebhookEvent): Promise<string> {
    let reference: string | undefined;
    try {
      reference = await references.get(event.data.delivery_id);
    } catch (err) {
      if (isProviderError(err) && err.kind === 'not_found') throw new HttpProblem(503, 'unknown delivery');
      if (isProviderError(err) && err.kind === 'unauthorized') throw new HttpProblem(503, 'the provider rejected our API key while looking up the delivery');
      throw new HttpProblem(503, 'the provider is unavailable to look up the delivery');
    }
    if (!reference) throw new HttpProblem(503, 'the delivery has no reference number, so no workflow to route to');
    return reference;
  }

  async function isClosed(workflowId: string): Promise<boolean> {
    try {
      const d = await o.temporal.workflow.getHandle(workflowId).describe();
      return d.status.name !== 'RUNNING';
    } catch {
      return false;
    }
  }

  const server = createServer((req, res) => {
    const started = now();
    void route(req)
      .catch((err: unknown): Answer => {
        if (err instanceof HttpProblem) {
          return {
            status: err.status,
            body: { outcome: err.status === 503 ? 'retry_later' : 'rejected', reason: err.reason, ...err.extra },
            headers: err.status === 503 ? { 'retry-after': retryAfter } : undefined,
          };
        }
        return { status: 500, body: { outcome: 'retry_later', reason: 'internal error' } };
      })
      .then((answer) => {
        send(res, answer);
        if (req.url?.startsWith(WEBHOOK_PATH)) {
          log({
            msg: 'webhook',
            status: answer.status,
            outcome: answer.body.outcome,
            reason: answer.body.reason,
            event_id: header(req, 'webhook-id'),
            workflow_id: answer.body.workflow_id,
            ms: now() - started,
          });
        }
      });
  });

  async function route(req: IncomingMessage): Promise<Answer> {
    const path = (req.url ?? '/').split('?')[0];
    if (path === WEBHOOK_PATH) {
      if (req.method !== 'POST') throw new HttpProblem(405, 'use POST');
      return handleWebhook(req);
    }
    if (path === '/healthz' && req.method === 'GET') return { status: 200, body: { ok: true } };
    throw new HttpProblem(404, 'not found');
  }

  return {
    server,
    listen(port = 8080, host = '127.0.0.1') {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          const a = server.address() as AddressInfo;
          resolve(`http://${host}:${a.port}`);
        });
      });
    },
    close() {
      return new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
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

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(new HttpProblem(413, `body over ${limit} bytes`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new HttpProblem(413, `body over ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, answer: Answer): void {
  if (res.headersSent) return;
  const body = JSON.stringify(answer.body);
  res.writeHead(answer.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...answer.headers });
  res.end(body);
}
