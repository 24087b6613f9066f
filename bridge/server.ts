/**
 * The webhook bridge's HTTP server: POST /webhooks/delivery/<account> verifies a provider webhook
 * with that courier account's secrets and signals the workflow of that delivery
 * (bridge/webhook.ts); POST /webhooks/delivery is the `default` account's, as before accounts. It answers 2xx only once the signal
 * is delivered (or, said as `duplicate`, was delivered before; or, said as `workflow_closed`,
 * can change nothing); when the workflow or the delivery cannot be found yet it answers 503 with
 * Retry-After, so the provider's own retries carry the event over.
 *
 * Two listeners. The webhook listener faces the internet and serves only POST /webhooks/delivery[/<account>]
 * and GET /healthz. The admin listener (bound to 127.0.0.1 by default, BRIDGE_ADMIN_HOST/PORT)
 * serves the operators: GET / lists the recent verified webhooks, GET /metrics is Prometheus
 * text, GET /healthz; it answers only its own Host names and no foreign Origin
 * (provider/http-guard.ts), so neither a web page nor a DNS-rebinding one can read it.
 *
 * The webhook listener faces the internet, so no input may crash it or hold it: every request
 * ends in an answer or a closed socket, the parser's timeouts end slow clients, unread bodies are
 * discarded only up to a bound, open connections are capped (BRIDGE_MAX_CONNECTIONS; past it a
 * new connection is closed at once and counted), and rejected requests are counted in the
 * metrics but neither listed nor logged beyond a bounded rate.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { ACCOUNT_ID } from '../contract/accounts';
import { parseWebhookPath } from '../contract/workflow-ids';
import type { ProviderClient } from '../provider/client';
import { checkRequest, hostForHeader, type HttpGuard, originsOf, ownHosts } from '../provider/http-guard';
import { secretKey } from '../provider/webhook-signature';
import { type BridgeAccounts, singleAccount } from './accounts';
import { BoundedLog } from './bounded-log';
import type { Span } from '@opentelemetry/api';
import { httpServerSpan, traceFields } from '../tracing/spans';
import { BridgeMetrics, UNKNOWN_ACCOUNT_LABEL } from './metrics';
import { HttpProblem, type ReasonCode, type WebhookOutcome } from './outcomes';
import { recentWebhooksPage } from './page';
import { RecentWebhooks } from './recent';
import { createWebhookHandler, type Delivered, type Seen } from './webhook';

export type { WebhookOutcome } from './outcomes';
export { WEBHOOK_PATH, accountWebhookPath } from '../contract/workflow-ids';

export { UNKNOWN_ACCOUNT_LABEL };

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
  /** The accounts served (bridge/accounts.ts); without, the one `default` account of `provider` and `secrets`. */
  accounts?: BridgeAccounts;
  /** The `default` account's client, used only to learn a delivery's reference number (without `accounts`). */
  provider?: ProviderClient;
  /** The `default` account's secrets, every one currently accepted (more than one during rotation; without `accounts`). */
  secrets?: readonly string[];
  maxBodyBytes?: number;
  /** Seconds the provider is asked to wait before retrying an event we could not deliver yet. */
  retryAfterSeconds?: number;
  referenceCacheSize?: number;
  /** Event ids remembered as delivered, for the duplicate fast path. */
  deliveredIdsSize?: number;
  /** Webhooks kept for the operators' page. */
  recentSize?: number;
  /** Open connections the webhook listener accepts at once (default 1024). */
  maxConnections?: number;
  /** Entries per negative cache (unknown deliveries, ended workflows; default 10 000). */
  negativeCacheSize?: number;
  /** How long a negative answer is remembered (default 30 s; 0 = not at all). */
  negativeCacheMs?: number;
  /** How long a signal to Temporal may take, retries included, before the answer is 503 + Retry-After (default 5 s). */
  temporalTimeoutMs?: number;
  /** Log lines for rejected requests per minute at most (default 20). */
  rejectedLogLinesPerMinute?: number;
  /** Host names the admin listener answers besides loopback (`name` or `name:port`). */
  adminAllowedHosts?: readonly string[];
  timeouts?: Partial<BridgeTimeouts>;
  now?: () => number;
  log?: (entry: Record<string, unknown>) => void;
}

export interface Bridge {
  /** The webhook listener. */
  server: Server;
  /** The operators' listener: recent webhooks, metrics, health. */
  admin: Server;
  metrics: BridgeMetrics;
  /** Starts the webhook listener; resolves with its URL. */
  listen(port?: number, host?: string): Promise<string>;
  /** Starts the admin listener (default 127.0.0.1:8081); resolves with its URL. */
  listenAdmin(port?: number, host?: string): Promise<string>;
  close(): Promise<void>;
}

export const DEFAULT_ADMIN_PORT = 8081;
export const DEFAULT_MAX_CONNECTIONS = 1024;

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

/** The one account of a bridge built without `accounts`, the way it was before accounts (bridge/accounts.ts); its secrets checked at once. */
function defaultAccountOf(o: BridgeOptions): BridgeAccounts {
  const secrets = o.secrets ?? [];
  if (!o.provider) throw new Error('the bridge needs its accounts, or a provider client and secrets for the default account');
  if (secrets.length === 0) throw new Error('the bridge needs at least one webhook secret (DELIVERY_WEBHOOK_SECRETS)');
  // A weak or malformed secret stops the start with the reason (never the secret itself).
  secrets.forEach((secret, i) => {
    try {
      secretKey(secret);
    } catch (err) {
      throw new Error(`webhook secret ${i + 1} of ${secrets.length} is not accepted: ${(err as Error).message}`, { cause: err });
    }
  });
  return singleAccount(o.provider, secrets);
}

export function createBridge(o: BridgeOptions): Bridge {
  const accounts = o.accounts ?? defaultAccountOf(o);
  const retryAfter = String(o.retryAfterSeconds ?? 5);
  const now = o.now ?? Date.now;
  const log = o.log ?? ((entry) => process.stdout.write(JSON.stringify(entry) + '\n'));
  const timeouts = { ...DEFAULT_TIMEOUTS, ...o.timeouts };
  const webhooks = createWebhookHandler({
    temporal: o.temporal,
    accounts,
    maxBodyBytes: o.maxBodyBytes ?? 64 * 1024,
    referenceCacheSize: o.referenceCacheSize ?? 10_000,
    deliveredIdsSize: o.deliveredIdsSize ?? 10_000,
    negativeCacheSize: o.negativeCacheSize ?? 10_000,
    negativeCacheMs: o.negativeCacheMs ?? 30_000,
    temporalTimeoutMs: o.temporalTimeoutMs ?? 5_000,
    now,
    onNegativeHit: (kind) => metrics.negativeHit(kind),
    onSecretsError: (account, err) => rejectedLog.log({ msg: 'webhook secrets cannot be read', account, error: err.message }),
  });
  const recentSize = o.recentSize ?? 200;
  const recent = new RecentWebhooks(recentSize);
  const metrics = new BridgeMetrics(webhooks.sizes, accounts);
  const unsubscribe = accounts.onChange(() => void metrics.accountsChanged());
  const safeLog = (entry: Record<string, unknown>) => {
    try {
      log(entry);
    } catch {
      // A failing log sink must not turn a delivered webhook into a crash.
    }
  };
  const rejectedLog = new BoundedLog(safeLog, o.rejectedLogLinesPerMinute ?? 20, 60_000, now, () => metrics.suppressedLogLine());
  let adminGuard: HttpGuard = { hosts: new Set(), origins: new Set() };

  /**
   * Each webhook is a span (its signal's trace; the delivery's trace links to it:
   * workflows/tracing-interceptors.ts), named by route, never by the account asked for.
   * `named`: the account the URL names (any text); served or not, the work and the answer to a bad signature are the same.
   */
  const serveWebhook = (req: IncomingMessage, res: ServerResponse, named: string, route: string) => httpServerSpan(`${req.method} ${route}`, req.headers, (span) => serveWebhookIn(span, req, res, named));

  async function serveWebhookIn(span: Span | undefined, req: IncomingMessage, res: ServerResponse, named: string): Promise<void> {
    const started = performance.now();
    const account = ACCOUNT_ID.test(named) && accounts.get(named) ? named : undefined;
    const label = account ?? UNKNOWN_ACCOUNT_LABEL;
    const seen: Seen = {};
    let outcome: WebhookOutcome;
    let code: ReasonCode;
    let reason: string | undefined;
    let answer: Answer;
    try {
      if (req.method !== 'POST') throw new HttpProblem(405, 'method_not_allowed', 'use POST');
      const done: Delivered = await webhooks.handle(req, seen, account);
      ({ outcome, code } = done);
      answer = json(200, { outcome, workflow_id: done.workflowId });
    } catch (err) {
      const p = err instanceof HttpProblem ? err : new HttpProblem(500, 'internal_error', 'internal error');
      ({ outcome, recorded: code, reason } = p); // the operator's code: the answer may not say it (secrets_unreadable)
      answer = json(p.status, { outcome, reason, ...p.extra }, p.status === 503 ? { 'retry-after': retryAfter } : undefined);
    }
    send(req, res, answer);
    const ms = performance.now() - started;
    metrics.observe(account, outcome, code, ms / 1000);
    const e = seen.event;
    // Only what passed the signature is shown and logged one by one; anyone can send the rest.
    if (e === undefined) {
      rejectedLog.log({ msg: 'webhook rejected', account: label, status: answer.status, outcome, reason: code, ms: Math.round(ms) });
      return;
    }
    const eventId = cut(e.id);
    recent.push({ at: now(), eventId, type: e.type, deliveryId: cut(e.data.delivery_id), status: e.data.status, httpStatus: answer.status, outcome, reason, workflowId: cut(seen.workflowId), ms });
    span?.setAttributes({ 'http.response.status_code': answer.status, temporalWorkflowId: seen.workflowId ?? '', 'webhook.outcome': outcome, 'webhook.account': label });
    safeLog({ msg: 'webhook', account: label, status: answer.status, outcome, reason, event_id: eventId, workflow_id: seen.workflowId, ...traceFields(), ms: Math.round(ms) });
  }

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    const webhook = parseWebhookPath(path);
    if (webhook) return serveWebhook(req, res, webhook.account, webhook.route);
    if (req.method === 'GET' && path === '/healthz') return send(req, res, json(200, { ok: true }));
    send(req, res, json(404, { outcome: 'rejected', reason: 'not found' }));
  }

  async function serveAdmin(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const verdict = checkRequest(req, adminGuard);
    if (!verdict.ok) return send(req, res, json(verdict.status, { error: verdict.code }));
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') return send(req, res, json(405, { error: 'method_not_allowed' }, { allow: 'GET' }));
    if (path === '/healthz') return send(req, res, json(200, { ok: true }));
    if (path === '/metrics') return send(req, res, { status: 200, body: await metrics.text(), contentType: metrics.contentType, headers: { 'cache-control': 'no-store' } });
    if (path === '/') return send(req, res, { status: 200, body: recentWebhooksPage(recent.list(), recentSize), contentType: 'text/html; charset=utf-8', headers: PAGE_HEADERS });
    send(req, res, json(404, { error: 'not_found' }));
  }

  const serverOptions = {
    headersTimeout: timeouts.headersMs,
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    connectionsCheckingInterval: timeouts.checkIntervalMs,
    maxHeaderSize: MAX_HEADER_BYTES,
  };
  const handler = (serveIt: typeof serve) => (req: IncomingMessage, res: ServerResponse) => {
    // A reset connection surfaces as 'error' on both; without listeners that would crash the process.
    req.on('error', () => undefined);
    res.on('error', () => undefined);
    serveIt(req, res).catch(() => res.destroy());
  };
  const server = createServer(serverOptions, handler(serve));
  server.maxConnections = o.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  server.on('drop', () => metrics.droppedConnection());
  const admin = createServer(serverOptions, handler(serveAdmin));
  admin.maxConnections = 64;

  const listenOn = (srv: Server, port: number, host: string) =>
    new Promise<number>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(port, host, () => {
        srv.off('error', reject);
        resolve((srv.address() as AddressInfo).port);
      });
    });
  const closeOne = (srv: Server) =>
    new Promise<void>((resolve) => {
      if (!srv.listening) return resolve();
      srv.closeAllConnections();
      srv.close(() => resolve());
    });

  return {
    server,
    admin,
    metrics,
    async listen(port = 8080, host = '127.0.0.1') {
      const actual = await listenOn(server, port, host);
      return `http://${hostForHeader(host)}:${actual}`;
    },
    async listenAdmin(port = DEFAULT_ADMIN_PORT, host = '127.0.0.1') {
      const actual = await listenOn(admin, port, host);
      const hosts = ownHosts(actual, host, o.adminAllowedHosts);
      adminGuard = { hosts, origins: originsOf(hosts) };
      return `http://${hostForHeader(host)}:${actual}`;
    },
    async close() {
      unsubscribe();
      await Promise.all([closeOne(server), closeOne(admin)]);
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
