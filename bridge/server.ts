/**
 * The webhook bridge's HTTP server: POST /webhooks/delivery verifies a provider webhook and
 * signals the workflow of that delivery (bridge/webhook.ts). It answers 2xx only once the signal
 * is delivered (or, said as `duplicate`, was delivered before; or, said as `workflow_closed`,
 * can change nothing); when the workflow or the delivery cannot be found yet it answers 503 with
 * Retry-After, so the provider's own retries carry the event over.
 *
 * For operators: GET / lists the recent webhooks, GET /metrics is Prometheus text, GET /healthz.
 *
 * It faces the internet, so no input may crash it or hold it: every request ends in an answer
 * or a closed socket, the parser's timeouts end slow clients, and unread bodies are discarded
 * only up to a bound.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import type { ProviderClient } from '../provider/client';
import { BridgeMetrics } from './metrics';
import { HttpProblem, type ReasonCode, type WebhookOutcome } from './outcomes';
import { recentWebhooksPage } from './page';
import { RecentWebhooks } from './recent';
import { createWebhookHandler, header, type Delivered, type Seen } from './webhook';

export type { WebhookOutcome } from './outcomes';
export const WEBHOOK_PATH = '/webhooks/delivery';

export interface BridgeTimeouts {
  /** The whole header block must arrive within this, also on a connection that sends nothing (a slow-loris client gets 408 and is closed). */
  headersMs: number;
  /** The whole request, body included, must arrive within this. */
  requestMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveMs: number;
  /** How often node checks the two timeouts above (node's default is 30 s, too coarse). */
  checkIntervalMs: number;
}

/**
 * Webhook bodies are small and the provider sends them in one go, so seconds are plenty; the
 * keep-alive outlasts the provider's pause between events so its connections get reused.
 */
export const DEFAULT_TIMEOUTS: BridgeTimeouts = { headersMs: 5_000, requestMs: 10_000, keepAliveMs: 5_000, checkIntervalMs: 1_000 };

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
  /** Event ids remembered as delivered, for the duplicate fast path. */
  deliveredIdsSize?: number;
  /** Webhooks kept for the operators' page. */
  recentSize?: number;
  timeouts?: Partial<BridgeTimeouts>;
  now?: () => number;
  log?: (entry: Record<string, unknown>) => void;
}

export interface Bridge {
  server: Server;
  metrics: BridgeMetrics;
  listen(port?: number, host?: string): Promise<string>;
  close(): Promise<void>;
}

interface Answer {
  status: number;
  body: string;
  contentType: string;
  headers?: Record<string, string>;
}

const MAX_HEADER_BYTES = 16 * 1024;
/** Past the body limit, this much more is read and dropped (so the client sees its 413) before the socket is cut. */
const DISCARD_LIMIT_BYTES = 1024 * 1024;
/** Ids are shown (and kept for the page) only as far as a sane id goes: 200 records stay small whatever was sent. */
const MAX_SHOWN_ID = 100;

export function createBridge(o: BridgeOptions): Bridge {
  if (o.secrets.length === 0) throw new Error('the bridge needs at least one webhook secret (DELIVERY_WEBHOOK_SECRETS)');
  const retryAfter = String(o.retryAfterSeconds ?? 5);
  const now = o.now ?? Date.now;
  const log = o.log ?? ((entry) => process.stdout.write(JSON.stringify(entry) + '\n'));
  const timeouts = { ...DEFAULT_TIMEOUTS, ...o.timeouts };
  const webhooks = createWebhookHandler({
    temporal: o.temporal,
    provider: o.provider,
    secrets: o.secrets,
    maxBodyBytes: o.maxBodyBytes ?? 64 * 1024,
    referenceCacheSize: o.referenceCacheSize ?? 10_000,
    deliveredIdsSize: o.deliveredIdsSize ?? 10_000,
    now,
  });
  const recentSize = o.recentSize ?? 200;
  const recent = new RecentWebhooks(recentSize);
  const metrics = new BridgeMetrics(webhooks.sizes);

  async function serveWebhook(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const seen: Seen = {};
    let outcome: WebhookOutcome;
    let code: ReasonCode;
    let reason: string | undefined;
    let answer: Answer;
    try {
      if (req.method !== 'POST') throw new HttpProblem(405, 'method_not_allowed', 'use POST');
      const done: Delivered = await webhooks.handle(req, seen);
      ({ outcome, code } = done);
      answer = json(200, { outcome, workflow_id: done.workflowId });
    } catch (err) {
      const p = err instanceof HttpProblem ? err : new HttpProblem(500, 'internal_error', 'internal error');
      ({ outcome, code, reason } = p);
      answer = json(p.status, { outcome, reason, ...p.extra }, p.status === 503 ? { 'retry-after': retryAfter } : undefined);
    }
    send(req, res, answer);
    const ms = performance.now() - started;
    metrics.observe(outcome, code, ms / 1000);
    const e = seen.event;
    const eventId = cut(e?.id ?? header(req, 'webhook-id'));
    recent.push({ at: now(), eventId, type: e?.type, deliveryId: cut(e?.data.delivery_id), status: e?.data.status, httpStatus: answer.status, outcome, reason, workflowId: cut(seen.workflowId), ms });
    try {
      log({ msg: 'webhook', status: answer.status, outcome, reason, event_id: eventId, workflow_id: seen.workflowId, ms: Math.round(ms) });
    } catch {
      // A failing log sink must not turn a delivered webhook into a crash.
    }
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (path === WEBHOOK_PATH) return serveWebhook(req, res);
    if (req.method !== 'GET') return send(req, res, json(404, { outcome: 'rejected', reason: 'not found' }));
    if (path === '/healthz') return send(req, res, json(200, { ok: true }));
    if (path === '/metrics') return send(req, res, { status: 200, body: await metrics.text(), contentType: metrics.contentType });
    if (path === '/') return send(req, res, { status: 200, body: recentWebhooksPage(recent.list(), recentSize), contentType: 'text/html; charset=utf-8', headers: PAGE_HEADERS });
    send(req, res, json(404, { outcome: 'rejected', reason: 'not found' }));
  }

  const server = createServer(
    {
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      keepAliveTimeout: timeouts.keepAliveMs,
      connectionsCheckingInterval: timeouts.checkIntervalMs,
      maxHeaderSize: MAX_HEADER_BYTES,
    },
    (req, res) => {
      // A reset connection surfaces as 'error' on both; without listeners that would crash the process.
      req.on('error', () => undefined);
      res.on('error', () => undefined);
      serve(req, res).catch(() => res.destroy());
    },
  );

  return {
    server,
    metrics,
    listen(port = 8080, host = '127.0.0.1') {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
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

/** The page shows only escaped text; it needs no script, frame or outside resource. */
const PAGE_HEADERS = { 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'", 'x-content-type-options': 'nosniff', 'cache-control': 'no-store' };

function cut(value: string | undefined): string | undefined {
  return value === undefined || value.length <= MAX_SHOWN_ID ? value : `${value.slice(0, MAX_SHOWN_ID)}…`;
}

function json(status: number, body: Record<string, unknown>, headers?: Record<string, string>): Answer {
  return { status, body: JSON.stringify(body), contentType: 'application/json', headers };
}

function send(req: IncomingMessage, res: ServerResponse, answer: Answer): void {
  if (!res.headersSent && !res.destroyed) {
    res.writeHead(answer.status, { 'content-type': answer.contentType, 'content-length': Buffer.byteLength(answer.body), ...answer.headers });
    res.end(answer.body);
  }
  if (!req.complete) discard(req);
}

/** Drops what is left of a body we did not read, up to a bound, then cuts the connection. */
function discard(req: IncomingMessage): void {
  let dropped = 0;
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > DISCARD_LIMIT_BYTES) req.socket.destroy();
  });
  req.resume();
}
