/**
 * The provider's REST API, typed. One undici keep-alive pool per base URL; every request has a
 * timeout and honours the caller's AbortSignal; every request body is checked against the
 * contract before it leaves and every answer is checked before it is returned.
 */
import { Pool, errors as undiciErrors, type Dispatcher } from 'undici';
import type { z } from 'zod';
import type { ProviderConfig } from './config';
import type { CallFamily } from './limits';
import {
  ConflictError,
  ContractViolationError,
  NotFoundError,
  ProviderUnavailableError,
  RateLimitedError,
  UnauthorizedError,
  ValidationError,
  capRetryAfter,
  type ProviderError,
  type RetryAfterCap,
} from './errors';
import {
  CreateDeliveryRequestSchema,
  DeliveryListSchema,
  DeliveryRecordSchema,
  ErrorBodySchema,
  KeyCheckSchema,
  OrderListSchema,
  OrderRecordSchema,
  QuoteRequestSchema,
  QuoteSchema,
  ReferenceNumber,
  UpdateDeliveryRequestSchema,
  type CreateDeliveryRequest,
  type DeliveryList,
  type DeliveryRecord,
  type DeliveryStatus,
  type OrderList,
  type OrderRecord,
  type Quote,
  type QuoteRequest,
  type UpdateDeliveryRequest,
} from './schemas';
import { IDEMPOTENCY_KEY_HEADER, idempotencyKeyHeader } from './idempotency';
import { fieldIssues } from './validation';

export interface CallOptions {
  signal?: AbortSignal;
}
export interface CreateOptions extends CallOptions {
  /**
   * Same key + same body within 24 h returns the first delivery instead of a second one. Any
   * string (the workflow ID): the header sent is derived from it (provider/idempotency.ts).
   */
  idempotencyKey: string;
}
export interface ListDeliveriesQuery {
  page?: number;
  pageSize?: number;
  status?: DeliveryStatus;
  referenceNumber?: string;
}
export interface ListOrdersQuery {
  deliveryId?: string;
  page?: number;
}

/** What a successful create returns: the record, and whether it was an idempotent replay. */
export interface CreatedDelivery {
  delivery: DeliveryRecord;
  /** true when the provider answered 200: the idempotency key matched an earlier creation. */
  replayed: boolean;
}

export type ProviderClientOptions = Pick<ProviderConfig, 'baseUrl'> &
  Partial<Pick<ProviderConfig, 'timeoutMs' | 'connections'>> & {
    /** The key, or a getter read at each call: a rotated key is used from the next call (accounts/registry.ts). */
    apiKey: string | (() => string);
    /** Retry-After is capped where it is parsed, so every consumer waits at most this (provider/errors.ts). */
    retryAfterCap?: RetryAfterCap;
    /** Told of every call's outcome and duration (the worker's metrics, metrics/worker-metrics.ts). */
    onCall?: (call: { family: CallFamily; status: number | 'timeout' | 'network'; seconds: number }) => void;
    /**
     * A connection pool shared with other clients for the same origin (accounts on one courier
     * host: accounts/provider-clients.ts); close() leaves it open. Absent: a pool of its own.
     */
    dispatcher?: Dispatcher;
  };

/** Keys a client remembers to scrub from what it throws: the current one and a few it used before a rotation. */
const SCRUBBED_KEYS = 4;

const DEFAULT_RETRY_AFTER_MS = 1_000;

export class ProviderClient {
  private readonly pool: Dispatcher;
  private readonly basePath: string;
  private readonly origin: string;
  private readonly apiKey: () => string;
  /** The keys this client sent, newest last: scrubbed from every text it throws, even after a rotation. */
  private readonly sentKeys: string[] = [];
  private readonly ownsPool: boolean;
  private readonly timeoutMs: number;
  private readonly retryAfterCap: RetryAfterCap | undefined;
  private readonly onCall: ProviderClientOptions['onCall'];

  constructor(options: ProviderClientOptions) {
    this.retryAfterCap = options.retryAfterCap;
    this.onCall = options.onCall;
    const url = new URL(options.baseUrl);
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, '');
    const key = options.apiKey;
    this.apiKey = typeof key === 'string' ? () => key : key;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.ownsPool = options.dispatcher === undefined;
    this.pool = options.dispatcher ?? providerPool(this.origin, { connections: options.connections, timeoutMs: this.timeoutMs });
  }

  /** The base URL this client talks to (never the key). */
  get baseUrl(): string {
    return this.origin + this.basePath;
  }

  async createDelivery(body: CreateDeliveryRequest, options: CreateOptions): Promise<CreatedDelivery> {
    checkRequest(CreateDeliveryRequestSchema, body, 'delivery request');
    const headers = { [IDEMPOTENCY_KEY_HEADER]: idempotencyKeyHeader(options.idempotencyKey) };
    const res = await this.call('POST', '/v1/deliveries', { body, headers, signal: options.signal }, 'creations');
    return { delivery: parse(DeliveryRecordSchema, res.body, 'delivery record'), replayed: res.status === 200 };
  }

  async getDelivery(id: string, options: CallOptions = {}): Promise<DeliveryRecord> {
    const res = await this.call('GET', `/v1/deliveries/${segment(id, 'delivery id')}`, options);
    return parse(DeliveryRecordSchema, res.body, 'delivery record');
  }

  async listDeliveries(query: ListDeliveriesQuery = {}, options: CallOptions = {}): Promise<DeliveryList> {
    const qs = queryString({ page: query.page, page_size: query.pageSize, status: query.status, reference_number: query.referenceNumber });
    const res = await this.call('GET', `/v1/deliveries${qs}`, options);
    return parse(DeliveryListSchema, res.body, 'delivery list');
  }

  /** The provider's delivery with this reference number, if any (used to reconcile). */
  async findDeliveryByReference(referenceNumber: string, options: CallOptions = {}): Promise<DeliveryRecord | undefined> {
    // An empty reference would drop the filter and "find" the newest delivery of any reference.
    const ref = ReferenceNumber.safeParse(referenceNumber);
    if (!ref.success) throw new ValidationError('invalid reference number', { details: fieldIssues(ref.error).map((i) => ({ ...i, field: 'reference_number' })) });
    const list = await this.listDeliveries({ referenceNumber, pageSize: 1 }, options);
    // The filter is an assumed part of the contract: never adopt a delivery of another reference.
    return list.data.find((d) => d.reference_number === referenceNumber);
  }

  async updateDelivery(id: string, patch: UpdateDeliveryRequest, options: CallOptions = {}): Promise<DeliveryRecord> {
    checkRequest(UpdateDeliveryRequestSchema, patch, 'delivery update');
    const res = await this.call('PATCH', `/v1/deliveries/${segment(id, 'delivery id')}`, { ...options, body: patch });
    return parse(DeliveryRecordSchema, res.body, 'delivery record');
  }

  async cancelDelivery(id: string, options: CallOptions = {}): Promise<DeliveryRecord> {
    const res = await this.call('POST', `/v1/deliveries/${segment(id, 'delivery id')}/actions/cancel`, options);
    return parse(DeliveryRecordSchema, res.body, 'delivery record');
  }

  async quote(body: QuoteRequest, options: CallOptions = {}): Promise<Quote> {
    checkRequest(QuoteRequestSchema, body, 'quote request');
    const res = await this.call('POST', '/v1/quotes', { ...options, body }, 'quotes');
    return parse(QuoteSchema, res.body, 'quote');
  }

  async listOrders(query: ListOrdersQuery = {}, options: CallOptions = {}): Promise<OrderList> {
    const res = await this.call('GET', `/v1/orders${queryString({ delivery_id: query.deliveryId, page: query.page })}`, options);
    return parse(OrderListSchema, res.body, 'order list');
  }

  async getOrder(id: string, options: CallOptions = {}): Promise<OrderRecord> {
    const res = await this.call('GET', `/v1/orders/${segment(id, 'order id')}`, options);
    return parse(OrderRecordSchema, res.body, 'order record');
  }

  /** Resolves when the key is valid; throws UnauthorizedError when it is not. */
  async checkKey(options: CallOptions = {}): Promise<{ valid: true }> {
    const res = await this.call('GET', '/v1/health/token', options);
    return parse(KeyCheckSchema, res.body, 'key check');
  }

  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.close();
  }

  /** The key for this call, remembered for scrubbing. */
  private keyForCall(): string {
    const key = this.apiKey();
    if (this.sentKeys.at(-1) !== key) {
      const at = this.sentKeys.indexOf(key);
      if (at >= 0) this.sentKeys.splice(at, 1);
      this.sentKeys.push(key);
      if (this.sentKeys.length > SCRUBBED_KEYS) this.sentKeys.shift();
    }
    return key;
  }

  /** One call: timed and counted by family and outcome when `onCall` is given (its span, when tracing is on: the undici instrumentation, tracing/install.ts). */
  private async call(
    method: 'GET' | 'POST' | 'PATCH',
    path: string,
    options: { body?: unknown; headers?: Record<string, string>; signal?: AbortSignal },
    family: CallFamily = 'other',
  ): Promise<{ status: number; body: unknown }> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.keyForCall()}`, accept: 'application/json', ...options.headers };
    const send = () => this.send(method, path, { ...options, headers });
    if (!this.onCall) return send();
    const started = performance.now();
    const observe = (status: number | 'timeout' | 'network') => this.onCall?.({ family, status, seconds: (performance.now() - started) / 1000 });
    try {
      const res = await send();
      observe(res.status);
      return res;
    } catch (err) {
      const status = options.signal?.aborted ? undefined : failedCallStatus(err);
      if (status !== undefined) observe(status);
      throw err;
    }
  }

  private async send(method: 'GET' | 'POST' | 'PATCH', path: string, options: { body?: unknown; headers: Record<string, string>; signal?: AbortSignal }): Promise<{ status: number; body: unknown }> {
    const what = `${method} ${path.split('?')[0]}`;
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const headers = options.headers;
    let payload: string | undefined;
    if (options.body !== undefined) {
      payload = serialize(options.body, what);
      headers['content-type'] = 'application/json';
    }

    let res: Dispatcher.ResponseData;
    try {
      res = await this.pool.request({ method, path: this.basePath + path, headers, body: payload, signal });
    } catch (err) {
      if (options.signal?.aborted) throw options.signal.reason ?? err;
      // A request that cannot be built never will be: not an outage, and never worth a retry.
      if (isUnbuildable(err)) throw unbuildable(what, err, (t) => this.scrub(t));
      if (timeout.aborted || err instanceof undiciErrors.HeadersTimeoutError || err instanceof undiciErrors.BodyTimeoutError) {
        throw timedOut(new ProviderUnavailableError(`${what}: no answer within ${this.timeoutMs} ms`, { cause: this.scrubCause(err) }));
      }
      throw new ProviderUnavailableError(`${what}: ${this.scrub(errorText(err))}`, { cause: this.scrubCause(err) });
    }

    let text: string;
    try {
      text = await res.body.text();
    } catch (err) {
      if (options.signal?.aborted) throw options.signal.reason ?? err;
      throw new ProviderUnavailableError(`${what}: the answer was cut off (${this.scrub(errorText(err))})`);
    }
    let body: unknown = undefined;
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch {
        if (res.statusCode < 300) throw new ContractViolationError(`${what}: answer ${res.statusCode} is not JSON`, { status: res.statusCode });
      }
    }
    if (res.statusCode >= 200 && res.statusCode < 300) return { status: res.statusCode, body };
    throw this.errorFor(what, res.statusCode, res.headers, body);
  }

  private errorFor(what: string, status: number, headers: Dispatcher.ResponseData['headers'], body: unknown): ProviderError {
    const parsed = ErrorBodySchema.safeParse(body);
    const code = parsed.success ? parsed.data.error.code : undefined;
    const details = parsed.success ? (parsed.data.error.details ?? []) : [];
    const said = parsed.success ? this.scrub(parsed.data.error.message) : `HTTP ${status}`;
    const init = { status, code, details };
    const message = `${what}: ${said}`;
    switch (true) {
      case status === 401:
        return new UnauthorizedError(`${what}: the provider rejected the API key (401)`, init);
      case status === 404:
        return new NotFoundError(message, init);
      case status === 409:
        return new ConflictError(message, init);
      case status === 429:
        return new RateLimitedError(message, capRetryAfter(retryAfterMs(headers), what, this.retryAfterCap), init);
      case status === 400 || status === 413 || status === 415 || status === 422:
        return new ValidationError(message, init);
      case status >= 500:
        return new ProviderUnavailableError(message, init);
      default:
        return new ContractViolationError(`${what}: unexpected answer ${status}`, init);
    }
  }

  /** Belt and braces: no text we throw may contain the key, whatever the provider echoes. */
  private scrub(text: string): string {
    return this.sentKeys.reduce((t, key) => (key ? t.split(key).join('[redacted]') : t), text);
  }
  private scrubCause(err: unknown): unknown {
    return err instanceof Error ? new Error(this.scrub(err.message)) : undefined;
  }
}

/** The keep-alive pool of one courier origin: one per client, or one shared by every account on that host. */
export function providerPool(origin: string, o: { connections?: number; timeoutMs?: number } = {}): Dispatcher {
  const timeoutMs = o.timeoutMs ?? 10_000;
  return new Pool(origin, { connections: o.connections ?? 16, keepAliveTimeout: 30_000, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
}

/**
 * undici refuses a header value outside ISO-8859-1 or with a control character, and a path with
 * a space or a non-ASCII character (`UND_ERR_INVALID_ARG`). Our own headers and paths are built
 * to be safe; this names the part if one ever is not, instead of calling it an outage.
 */
function isUnbuildable(err: unknown): boolean {
  return err instanceof undiciErrors.InvalidArgumentError || (err as { code?: string } | null)?.code === 'UND_ERR_INVALID_ARG';
}

/** Failures that are the timeout of a call, for failedCallStatus(). */
const TIMED_OUT = new WeakSet<Error>();
function timedOut<E extends Error>(err: E): E {
  TIMED_OUT.add(err);
  return err;
}

/**
 * What a failed call counts as: the provider's status, a timeout, or a network failure; nothing
 * for a call never sent (a request that cannot be built is no outcome of the provider's).
 */
function failedCallStatus(err: unknown): number | 'timeout' | 'network' | undefined {
  if (err instanceof Error && TIMED_OUT.has(err)) return 'timeout';
  if (err instanceof ProviderUnavailableError && err.status === undefined) return 'network';
  if (err instanceof Error && 'status' in err && typeof err.status === 'number') return err.status;
  return undefined;
}

function unbuildable(what: string, err: unknown, scrub: (text: string) => string): ValidationError {
  const text = scrub(err instanceof Error ? err.message : String(err));
  const header = /^invalid (\S+) header$/.exec(text)?.[1];
  const field = header ? `${header} header` : /request path/.test(text) ? 'path' : '(request)';
  return new ValidationError(`${what}: the request cannot be sent`, { details: [{ field, message: `cannot be sent over HTTP (${text})` }] });
}

/** A path segment; an id that cannot be URL-encoded (a lone surrogate) is a validation error. */
function segment(id: string, field: string): string {
  try {
    return encodeURIComponent(id);
  } catch {
    throw new ValidationError(`invalid ${field}`, { details: [{ field, message: 'cannot be URL-encoded (it is not well-formed Unicode)' }] });
  }
}

function serialize(body: unknown, what: string): string {
  try {
    return JSON.stringify(body);
  } catch (err) {
    throw new ValidationError(`${what}: the request cannot be sent`, { details: [{ field: '(body)', message: `cannot be serialized as JSON (${(err as Error).message})` }] });
  }
}

function checkRequest<T>(schema: z.ZodType<T>, value: unknown, what: string): void {
  const r = schema.safeParse(value);
  if (!r.success) throw new ValidationError(`invalid ${what}`, { details: fieldIssues(r.error) });
}

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new ContractViolationError(`the provider's ${what} does not match the contract`, { details: fieldIssues(r.error) });
  return r.data;
}

function queryString(params: Record<string, string | number | undefined>): string {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') qs.set(k, String(v));
  const s = qs.toString();
  return s ? `?${s}` : '';
}

function header(headers: Dispatcher.ResponseData['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The wait a 429 asks for. `Retry-After` is whole seconds (or an HTTP date); the simulator also
 * sends `Retry-After-Ms`, exact, which matters when its time scale shrinks windows below a second.
 */
export function retryAfterMs(headers: Dispatcher.ResponseData['headers'], nowMs = Date.now()): number {
  const ms = Number(header(headers, 'retry-after-ms'));
  if (Number.isFinite(ms) && ms >= 0 && header(headers, 'retry-after-ms') !== undefined) return Math.ceil(ms);
  return parseRetryAfter(header(headers, 'retry-after'), nowMs) ?? DEFAULT_RETRY_AFTER_MS;
}

/** A `Retry-After` value (whole seconds, or an HTTP date) in ms; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, nowMs = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.ceil(seconds * 1000);
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - nowMs) : undefined;
}

function errorText(err: unknown): string {
  if (err instanceof Error) return (err as { code?: string }).code ? `${(err as { code?: string }).code}: ${err.message}` : err.message;
  return String(err);
}
