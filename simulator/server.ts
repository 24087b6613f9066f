/**
 * The provider sandbox simulator: a real HTTP server (node:http, no framework) that stands in
 * for the provider's sandbox, faithful to /work/shared/provider-contract.md. Used by tests,
 * demos and benchmarks, so every path is bounded in cost and every failure becomes an answer
 * (500 internal_error at worst) rather than a crash.
 *
 * Every request first passes the browser guard (provider/http-guard.ts): its own Host names
 * only (loopback with its port, the public base URL's host, SIMULATOR_ALLOWED_HOSTS), no
 * foreign Origin; /_sim also takes JSON only on POST/PUT. The /v1 API needs a key and is called
 * by servers, but the sandbox key is public, so Host and Origin are checked there too (a
 * DNS-rebinding page could otherwise read deliveries with it); its content-type rules are the
 * contract's (bodiless POSTs such as cancel stay valid).
 *
 * Request path for /v1: fault 503 (not counted) → auth 401 → route → rate window (429, not
 * counted; everything answered after this point counts, 404/405/4xx and idempotent replays
 * included) → body rules 413/415/400 → handler → optional fault latency → answer → request log.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isKnownDeliveryStatus, isTerminalDelivery } from '../provider/lifecycle';
import { PROVIDER_RATE_LIMITS, type CallFamily, type RateLimit } from '../provider/limits';
import type { DeliveryRecord, OrderRecord } from '../provider/schemas';
import { API_ROUTES, type ApiEndpoint } from './api';
import { AccountBook, accountLimits, type AccountRegistration, type SimAccount } from './accounts';
import { KeyRing } from './auth';
import { CappedLog } from './capped-log';
import { type Clock, iso, sleep, systemClock, TimeScale } from './clock';
import type { RequestLogEntry, SimContext } from './context';
import { CONTROL_ROUTES, type ControlEndpoint } from './control';
import { trackingPage } from './dashboard';
import { DEFAULT_FAULTS, type Faults, mergeFaults, roll, seededRandom } from './faults';
import { checkRequest, type HttpGuard, originsOf, ownHosts } from '../provider/http-guard';
import { secretKey } from '../provider/webhook-signature';
import { announcesBody, errorReply, matchRoute, type Reply, type RouteTable, takeBody, writeReply } from './http-util';
import { readStateFile, SAVED_FINISHED_EVENTS, STATE_FORMAT, STATE_VERSION, type StateFile, StatePersister } from './persistence';
import { retryAfterHeaders, RollingWindowLimiter } from './rate-limiter';
import { Store } from './store';
import { AutoAdvancer, Lifecycle } from './transitions';
import { type WebhookAttempt, type WebhookDispatch, type WebhookEndpoint, WebhookSender } from './webhooks';

export const DEFAULT_PORT = 4010;
export const DEFAULT_HOST = '127.0.0.1';

export interface SimulatorOptions {
  /** Keys accepted besides the default `sandbox-key`. */
  apiKeys?: readonly string[];
  /** Provider time runs this many times faster (default 1). Timestamps stay wall-clock. */
  timeScale?: number;
  /** ISO 4217 currency of prices (default EUR). */
  currency?: string;
  /** Auto mode: one step per delivery every this many provider-time ms (0 = manual, the default). */
  autoAdvanceMs?: number;
  /** Initial webhook endpoint (also restored by reset). */
  webhook?: WebhookEndpoint | null;
  /** Seed of the fault-injection random source (default 1). */
  seed?: number;
  /** Base URL of tracking links (default: the URL the server listens on). */
  publicBaseUrl?: string;
  /** Overrides of PROVIDER_RATE_LIMITS, in provider time (windows are divided by the time scale). */
  rateLimits?: Partial<Record<CallFamily, Partial<RateLimit>>>;
  /** Initial faults (also restored by reset); default none. */
  faults?: Partial<Faults>;
  /** Wall clock in ms (default Date.now); inject one to test rate windows exactly. */
  clock?: Clock;
  /** Real ms before a webhook attempt counts as failed (default 10 000; not scaled). */
  webhookTimeoutMs?: number;
  /** Entries kept in the request log and in the webhook attempt log (default 100 000 each). */
  logCap?: number;
  /** Where internal errors are reported (default console.error). Never receives API keys. */
  onError?: (message: string) => void;
  /**
   * Keep the state in this JSON file (see persistence.ts): loaded at creation (a missing file is
   * a first start; an unusable one throws a StateFileError naming it and the problem), written
   * atomically while something changed and on close. Auto-advance and pending webhooks resume
   * once the simulator listens. Unset (the default): memory only, no cost.
   */
  stateFile?: string;
  /** Real ms between saves of a changed state (default 1000). */
  stateSaveIntervalMs?: number;
  /**
   * Host names accepted besides the loopback names (`name` or `name:port`), e.g. the compose
   * service name `simulator:4010`. The public base URL's host is always accepted.
   */
  allowedHosts?: readonly string[];
}

export interface Simulator {
  listen(port?: number, host?: string): Promise<{ url: string }>;
  close(): Promise<void>;
  /** The listen URL, once listening. */
  readonly url: string | undefined;
  readonly server: Server;
  /** Shared state, for tests that need to look deeper than the methods below. */
  readonly context: SimContext;
  /** Same as POST /_sim/deliveries/{id}/advance; throws if the id is unknown. */
  advance(deliveryId: string, change?: { destination_id?: string; status?: string }): DeliveryRecord;
  setWebhookEndpoint(endpoint: WebhookEndpoint | null): void;
  setFaults(patch: Partial<Faults>): Faults;
  readonly faults: Faults;
  /** The next `count` GET /v1/deliveries/{id} of this delivery answer 503 (like POST /_sim/deliveries/{id}/fail-reads). */
  failReads(deliveryId: string, count: number): void;
  reset(): void;
  deliveries(): { key_fingerprint: string; delivery: DeliveryRecord; order: OrderRecord }[];
  requestLog(since?: number): (RequestLogEntry & { index: number })[];
  webhookAttempts(since?: number): (WebhookAttempt & { index: number })[];
  webhookEvents(): WebhookDispatch[];
  /** Resolves once no webhook is in flight, waiting for a retry or held back. */
  webhooksIdle(timeoutMs?: number): Promise<void>;
  /** The state file's absolute path, when the simulator keeps one. */
  readonly stateFile: string | undefined;
  /** Writes the state file now (close() does too); rejects without a state file. */
  saveState(): Promise<void>;
}

/** The contract's limits with the simulator's overrides, in provider time. */
function providerLimits(overrides: SimulatorOptions['rateLimits'] = {}): Record<CallFamily, RateLimit> {
  const out = {} as Record<CallFamily, RateLimit>;
  for (const family of Object.keys(PROVIDER_RATE_LIMITS) as CallFamily[]) out[family] = { ...PROVIDER_RATE_LIMITS[family], ...overrides[family] };
  return out;
}

/** Provider-time limits → the limiter's real milliseconds. */
function realLimits(scale: TimeScale, limits: Readonly<Record<CallFamily, RateLimit>>): Record<CallFamily, RateLimit> {
  const out = {} as Record<CallFamily, RateLimit>;
  for (const [family, l] of Object.entries(limits) as [CallFamily, RateLimit][]) out[family] = { limit: l.limit, windowMs: scale.real(l.windowMs) };
  return out;
}

function hostForUrl(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

export function createSimulator(options: SimulatorOptions = {}): Simulator {
  // A weak or malformed signing secret stops the start, with the reason (never the secret).
  if (options.webhook) secretKey(options.webhook.secret);
  const now = options.clock ?? systemClock;
  const scale = new TimeScale(options.timeScale ?? 1);
  const onError = options.onError ?? ((m: string) => console.error(`[simulator] ${m}`));
  const logCap = options.logCap ?? 100_000;
  const initialFaults: Faults = mergeFaults(DEFAULT_FAULTS, options.faults ?? {});
  const seed = options.seed ?? 1;
  const keys = new KeyRing(options.apiKeys);
  const accounts = new AccountBook();
  const store = new Store();
  const sharedLimits = providerLimits(options.rateLimits);
  const limiter = new RollingWindowLimiter(realLimits(scale, sharedLimits), now);
  /** An account's own limits apply to its scope's windows; without, the shared ones. */
  const applyLimits = (a: SimAccount) => limiter.setKeyLimits(a.scope, a.limits === null ? undefined : realLimits(scale, accountLimits(a.limits, sharedLimits)));

  // The context is filled in below; the sender and lifecycle read faults/random through it.
  const ctx = {} as SimContext & { faults: Faults; random: () => number; publicBaseUrl: string };
  const webhooks = new WebhookSender({
    scale,
    now,
    random: () => ctx.random(),
    faults: () => ctx.faults,
    timeoutMs: options.webhookTimeoutMs ?? 10_000,
    logCap,
    onError,
    onChange: () => persister?.markDirty(),
    endpointFor: (deliveryId) => {
      const sd = store.anyDelivery(deliveryId);
      const account = sd && accounts.ofScope(sd.scope);
      return account ? account.webhook : undefined;
    },
  });
  const lifecycle = new Lifecycle({
    now,
    emit: (e) => {
      webhooks.emit(e);
      persister?.markDirty();
    },
    onTerminal: (sd) => auto.stop(sd.record.id),
  });
  const auto = new AutoAdvancer(scale.real(options.autoAdvanceMs ?? 0), (sd) => lifecycle.step(sd), onError);
  const requests = new CappedLog<RequestLogEntry>(logCap);
  let url: string | undefined;
  let guard: HttpGuard = { hosts: new Set(), origins: new Set() };

  const reset = () => {
    auto.clear();
    store.clear();
    limiter.reset();
    requests.clear();
    webhooks.reset();
    webhooks.endpoint = options.webhook ?? null;
    ctx.faults = { ...initialFaults };
    ctx.random = seededRandom(seed);
    ctx.failReads.clear();
    restoredAutoAt.clear();
    persister?.markDirty();
  };
  Object.assign(ctx, {
    now,
    scale,
    currency: options.currency ?? 'EUR',
    store,
    lifecycle,
    auto,
    webhooks,
    limiter,
    accounts,
    registerAccount(id: string, registration: AccountRegistration) {
      const result = accounts.register(id, registration);
      if (result.ok) applyLimits(result.account);
      return result;
    },
    removeAccount(id: string) {
      const gone = accounts.remove(id);
      if (gone) limiter.setKeyLimits(gone.scope, undefined);
      return gone;
    },
    requests,
    faults: { ...initialFaults },
    random: seededRandom(seed),
    failReads: new Map<string, number>(),
    publicBaseUrl: (options.publicBaseUrl ?? `http://${DEFAULT_HOST}:${DEFAULT_PORT}`).replace(/\/+$/, ''),
    reset,
  });
  // Accounts are registered later and rotate keys: the gauges follow them.
  Object.defineProperty(ctx, 'keyScopes', { get: () => [...new Set([...keys.scopes(), ...accounts.all().map((a) => a.scope)])] });
  webhooks.endpoint = options.webhook ?? null;

  // ---- state file -------------------------------------------------------------------------
  /** Auto-advance due times read from the state file, until listen() schedules them. */
  const restoredAutoAt = new Map<string, number | null>();
  let resumed = false;

  const snapshot = (): StateFile => {
    const at = Date.now();
    return {
      format: STATE_FORMAT,
      version: STATE_VERSION,
      saved_at: iso(at),
      deliveries: store.all().map((sd) => ({
        scope: sd.scope,
        fingerprint: sd.fingerprint,
        delivery: sd.record,
        order: sd.order,
        auto_advance_at: auto.dueAt(sd.record.id) ?? restoredAutoAt.get(sd.record.id) ?? null,
      })),
      idempotency: store.idempotencyEntries(now()).map(({ scope, key, record }) => ({
        scope,
        key,
        canonical_body: record.canonicalBody,
        delivery_id: record.deliveryId,
        expires_at: record.expiresAt,
      })),
      webhook_endpoint: webhooks.endpoint,
      accounts: accounts.all().map((a) => ({ id: a.id, scope: a.scope, key_digest: a.keyDigest, webhook: a.webhook, limits: a.limits })),
      webhook_events: webhooks.saved(SAVED_FINISHED_EVENTS),
      counters: { requests: requests.next, webhook_attempts: webhooks.attempts.next },
    };
  };

  const restore = (state: StateFile) => {
    for (const d of state.deliveries) {
      store.add({ scope: d.scope, fingerprint: d.fingerprint, record: d.delivery, order: d.order });
      restoredAutoAt.set(d.delivery.id, d.auto_advance_at);
    }
    for (const r of state.idempotency) store.restoreIdempotency(r.scope, r.key, { canonicalBody: r.canonical_body, deliveryId: r.delivery_id, expiresAt: r.expires_at });
    // A configured endpoint wins; without one, the endpoint last set through /_sim is kept.
    if (!options.webhook && state.webhook_endpoint) webhooks.endpoint = state.webhook_endpoint;
    accounts.restore(state.accounts.map((a) => ({ id: a.id, scope: a.scope, keyDigest: a.key_digest, webhook: a.webhook, limits: a.limits })));
    for (const a of accounts.all()) applyLimits(a);
    webhooks.restore(state.webhook_events);
    requests.continueFrom(state.counters.requests);
    webhooks.attempts.continueFrom(state.counters.webhook_attempts);
  };

  /**
   * Once listening: restored deliveries take their next step when it was due (at once if that
   * time passed while stopped, never later than one interval), then keep the usual pace; a
   * delivery that had no step scheduled (saved in manual mode) starts a fresh interval.
   * Pending webhooks go out again.
   */
  const resume = () => {
    if (resumed) return;
    resumed = true;
    if (auto.enabled) {
      for (const [id, at] of restoredAutoAt) {
        const sd = store.anyDelivery(id);
        if (!sd || !isKnownDeliveryStatus(sd.record.status) || isTerminalDelivery(sd.record.status) || auto.dueAt(id) !== undefined) continue;
        auto.track(sd, at === null ? auto.interval : Math.min(auto.interval, Math.max(0, at - Date.now())));
      }
    }
    restoredAutoAt.clear();
    webhooks.resume();
  };

  let persister: StatePersister | undefined;
  if (options.stateFile !== undefined) {
    const state = readStateFile(options.stateFile);
    if (state) restore(state);
    persister = new StatePersister(options.stateFile, snapshot, options.stateSaveIntervalMs ?? 1_000, onError);
  }
  // -------------------------------------------------------------------------------------------

  const internalError = (e: unknown): Reply => {
    onError(`internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return errorReply(500, 'internal_error', 'internal error in the simulator');
  };

  async function apiReply(req: IncomingMessage, method: string, u: URL, who: { fingerprint: string | null }): Promise<Reply> {
    if (roll(ctx.random, ctx.faults.error_rate)) return errorReply(503, 'service_unavailable', 'injected fault: service unavailable');
    const auth = keys.authenticate(req.headers.authorization, (digest) => accounts.byKeyDigest(digest)?.scope);
    who.fingerprint = auth.fingerprint;
    if (!auth.ok) return { ...errorReply(401, 'unauthorized', auth.message), headers: { 'www-authenticate': 'Bearer' } };

    const route = matchRoute<ApiEndpoint>(API_ROUTES, method, u.pathname);
    const readFault = ctx.failReads.size > 0 && method === 'GET' && route.kind === 'found' ? /^\/v1\/deliveries\/([^/]+)$/.exec(u.pathname)?.[1] : undefined;
    const failing = readFault === undefined ? 0 : (ctx.failReads.get(readFault) ?? 0);
    if (failing > 0) {
      ctx.failReads.set(readFault!, failing - 1);
      return errorReply(503, 'service_unavailable', 'injected fault: this delivery cannot be read right now');
    }
    const decision = limiter.tryAcquire(auth.caller.scope, route.kind === 'found' ? route.endpoint.family : 'other');
    if (!decision.allowed) {
      return { ...errorReply(429, 'rate_limited', 'rate limit exceeded; retry after the Retry-After header'), headers: retryAfterHeaders(decision.retryAfterMs) };
    }
    if (route.kind === 'not_found') return errorReply(404, 'not_found', `no route ${method} ${u.pathname}`);
    if (route.kind === 'method_not_allowed') return { ...errorReply(405, 'method_not_allowed', `${method} is not allowed here`), headers: { allow: route.allow } };

    const body = await takeBody(req, route.endpoint.body);
    if (!body.ok) return body.reply;
    const idem = req.headers['idempotency-key'];
    return route.endpoint.handle(ctx, {
      caller: auth.caller,
      params: route.params,
      query: u.searchParams,
      body: body.value,
      idempotencyKey: typeof idem === 'string' ? idem : undefined,
    });
  }

  async function serveApi(req: IncomingMessage, res: ServerResponse, method: string, u: URL): Promise<void> {
    const startedAt = now();
    const started = performance.now();
    const who = { fingerprint: null as string | null };
    let reply: Reply;
    try {
      reply = await apiReply(req, method, u, who);
    } catch (e) {
      reply = internalError(e);
    }
    if (persister && method !== 'GET' && method !== 'HEAD') persister.markDirty();
    const latency = ctx.faults.latency_ms;
    if (latency > 0) await sleep(latency);
    writeReply(req, res, reply);
    requests.push({
      method,
      path: u.pathname,
      query: u.search,
      key_fingerprint: who.fingerprint,
      status: reply.status,
      time: iso(startedAt),
      duration_ms: Math.round((performance.now() - started) * 100) / 100,
      traceparent: traceparentOf(req.headers.traceparent),
    });
  }

  async function serveTable<E extends ControlEndpoint>(req: IncomingMessage, res: ServerResponse, table: readonly RouteTable<E>[], method: string, u: URL): Promise<void> {
    let reply: Reply;
    try {
      const route = matchRoute(table, method, u.pathname);
      if (route.kind === 'not_found') reply = errorReply(404, 'not_found', `no route ${method} ${u.pathname}`);
      else if (route.kind === 'method_not_allowed') reply = { ...errorReply(405, 'method_not_allowed', `${method} is not allowed here`), headers: { allow: route.allow } };
      else {
        const body = await takeBody(req, route.endpoint.body);
        reply = body.ok ? route.endpoint.handle(ctx, { params: route.params, query: u.searchParams, body: body.value }) : body.reply;
      }
    } catch (e) {
      reply = internalError(e);
    }
    if (persister && method !== 'GET' && method !== 'HEAD') persister.markDirty();
    writeReply(req, res, reply);
  }

  const PUBLIC_ROUTES: readonly RouteTable<ControlEndpoint>[] = [
    {
      pattern: /^\/track\/([^/]+)$/,
      methods: {
        GET: {
          body: 'none',
          handle: (c, { params }) => {
            const html = trackingPage(c, params[0] ?? '');
            return html === null ? { status: 404, html: '<!doctype html><title>Not found</title><p>Unknown tracking link.</p>' } : { status: 200, html };
          },
        },
      },
    },
    { pattern: /^\/openapi\.json$/, methods: { GET: { body: 'none', handle: () => ({ status: 200, body: loadOpenApi(url ?? ctx.publicBaseUrl) }) } } },
  ];

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    req.on('error', () => undefined);
    res.on('error', () => undefined);
    const method = req.method ?? 'GET';
    let u: URL;
    try {
      u = new URL(req.url ?? '/', 'http://simulator.invalid');
    } catch {
      writeReply(req, res, errorReply(404, 'not_found', 'unparseable request target'));
      return;
    }
    const p = u.pathname;
    const isApi = p === '/v1' || p.startsWith('/v1/');
    const verdict = checkRequest(req, guard, !isApi);
    if (!verdict.ok) {
      writeReply(req, res, { ...errorReply(verdict.status, verdict.code, verdict.message), closeConnection: announcesBody(req) });
      return;
    }
    if (isApi) return serveApi(req, res, method, u);
    if (p === '/_sim' || p.startsWith('/_sim/')) return serveTable(req, res, CONTROL_ROUTES, method, u);
    return serveTable(req, res, PUBLIC_ROUTES, method, u);
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      try {
        writeReply(req, res, internalError(e));
      } catch {
        res.destroy();
      }
    });
  });

  const sim: Simulator = {
    listen(port = DEFAULT_PORT, host = DEFAULT_HOST) {
      return new Promise((resolve, reject) => {
        const onListenError = (e: Error) => reject(e);
        server.once('error', onListenError);
        server.listen(port, host, () => {
          server.off('error', onListenError);
          server.on('error', (e) => onError(`server error: ${e.message}`));
          const addr = server.address() as AddressInfo;
          url = `http://${hostForUrl(host)}:${addr.port}`;
          if (options.publicBaseUrl === undefined) ctx.publicBaseUrl = url;
          const publicHost = new URL(ctx.publicBaseUrl).host;
          const hosts = ownHosts(addr.port, host, options.allowedHosts);
          hosts.add(publicHost.toLowerCase());
          guard = { hosts, origins: originsOf(hosts) };
          resume();
          resolve({ url });
        });
      });
    },
    async close() {
      persister?.stop();
      // Stop taking calls first, so the last save holds every answered change.
      await new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      const last = persister ? snapshot() : undefined;
      auto.clear();
      await webhooks.close();
      if (persister && last) await persister.save(last);
    },
    get url() {
      return url;
    },
    server,
    context: ctx,
    advance(deliveryId, change = {}) {
      const sd = store.anyDelivery(deliveryId);
      if (!sd) throw new Error(`no delivery ${deliveryId}`);
      const d = change.destination_id === undefined ? undefined : sd.record.destinations.find((x) => x.id === change.destination_id);
      if (change.destination_id !== undefined && !d) throw new Error(`delivery ${deliveryId} has no destination ${change.destination_id}`);
      if (d) {
        if (change.status !== undefined) lifecycle.setDestination(sd, d, change.status);
        else lifecycle.stepDestination(sd, d);
      } else if (change.status !== undefined) lifecycle.setDelivery(sd, change.status);
      else lifecycle.step(sd);
      return sd.record;
    },
    setWebhookEndpoint(endpoint) {
      webhooks.endpoint = endpoint;
    },
    setFaults(patch) {
      ctx.faults = mergeFaults(ctx.faults, patch);
      return ctx.faults;
    },
    get faults() {
      return ctx.faults;
    },
    failReads(deliveryId, count) {
      ctx.failReads.set(deliveryId, count);
    },
    reset,
    deliveries: () => store.all().map((sd) => ({ key_fingerprint: sd.fingerprint, delivery: sd.record, order: sd.order })),
    requestLog: (since = 0) => requests.since(since).entries,
    webhookAttempts: (since = 0) => webhooks.attempts.since(since).entries,
    webhookEvents: () => webhooks.dispatchList(),
    get stateFile() {
      return persister?.file;
    },
    async saveState() {
      if (!persister) throw new Error('this simulator has no state file');
      await persister.save();
    },
    async webhooksIdle(timeoutMs = 10_000) {
      const deadline = performance.now() + timeoutMs;
      while (!webhooks.quiet) {
        if (performance.now() > deadline) throw new Error('webhooks still busy');
        await sleep(5);
      }
    },
  };
  return sim;
}

type OpenApiModule = { openApiDocument: (servers?: { url: string; description: string }[]) => unknown };
let openApiCache: { url: string; doc: unknown } | undefined;

/**
 * provider/openapi.ts is written separately and loaded lazily, so the simulator still starts
 * (and only this route fails) if that module is missing or broken.
 */
function loadOpenApi(serverUrl: string): unknown {
  if (openApiCache?.url !== serverUrl) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require('../provider/openapi') as OpenApiModule;
    openApiCache = { url: serverUrl, doc: mod.openApiDocument([{ url: serverUrl, description: 'Local sandbox simulator' }]) };
  }
  return openApiCache.doc;
}

/** A well-formed W3C traceparent (version-traceid-spanid-flags), or null: only that is kept in the request log. */
function traceparentOf(value: string | string[] | undefined): string | null {
  return typeof value === 'string' && /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/.test(value) ? value : null;
}
