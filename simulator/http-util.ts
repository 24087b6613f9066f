/**
 * Low-level HTTP plumbing shared by the API and the control routes: bounded body reading,
 * content-type checks, and writing JSON/HTML answers that can never throw.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorBody, ErrorCode, FieldIssue } from '../provider/schemas';

/** Bodies over 1 MiB are refused with 413 (checked on Content-Length and on streamed bytes). */
export const MAX_BODY_BYTES = 1024 * 1024;

export interface Reply {
  status: number;
  /** JSON body (ignored when `html` is set). */
  body?: unknown;
  html?: string;
  headers?: Record<string, string>;
  /** Stop reading the request and close the connection after answering (413/415 on big bodies). */
  closeConnection?: boolean;
}

/** An error answer. Codes come from ERROR_CODES except the simulator's `method_not_allowed`. */
export function errorReply(status: number, code: ErrorCode | 'method_not_allowed' | 'host_not_allowed' | 'origin_not_allowed', message: string, details?: FieldIssue[]): Reply {
  const body: ErrorBody = { error: { code, message, ...(details && details.length > 0 ? { details } : {}) } };
  return { status, body };
}

export function validationReply(details: FieldIssue[]): Reply {
  return errorReply(422, 'validation_failed', 'the request is not valid', details);
}

export function isJsonContentType(header: string | undefined): boolean {
  if (!header) return false;
  const mime = header.split(';', 1)[0]?.trim().toLowerCase();
  return mime === 'application/json';
}

/** Whether the request announces a body (a length above zero or chunked transfer). */
export function announcesBody(req: IncomingMessage): boolean {
  const len = req.headers['content-length'];
  if (len !== undefined && len !== '0') return true;
  return req.headers['transfer-encoding'] !== undefined;
}

export type BodyResult = { ok: true; bytes: Buffer } | { ok: false; reason: 'too_large' | 'aborted' };

/** Reads the body, stopping as soon as more than `limit` bytes have arrived. */
export function readBody(req: IncomingMessage, limit: number = MAX_BODY_BYTES): Promise<BodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const finish = (r: BodyResult) => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (!r.ok) req.pause();
      resolve(r);
    };
    const onData = (chunk: Buffer) => {
      total += chunk.length;
      if (total > limit) finish({ ok: false, reason: 'too_large' });
      else chunks.push(chunk);
    };
    const onEnd = () => finish({ ok: true, bytes: Buffer.concat(chunks, total) });
    const onError = () => finish({ ok: false, reason: 'aborted' });
    const onClose = () => finish(req.complete ? { ok: true, bytes: Buffer.concat(chunks, total) } : { ok: false, reason: 'aborted' });
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

export type JsonResult = { ok: true; value: unknown } | { ok: false; message: string };

export function parseJson(bytes: Buffer): JsonResult {
  if (bytes.length === 0) return { ok: false, message: 'a JSON body is required' };
  try {
    return { ok: true, value: JSON.parse(bytes.toString('utf8')) as unknown };
  } catch (e) {
    return { ok: false, message: `malformed JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** Writes an answer; safe to call on a closed or already answered response. */
export function writeReply(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
  if (res.headersSent || res.destroyed) return;
  const isHtml = reply.html !== undefined;
  const payload = isHtml ? (reply.html as string) : reply.body === undefined ? '' : JSON.stringify(reply.body);
  const headers: Record<string, string | number> = {
    ...(payload ? { 'content-type': isHtml ? 'text/html; charset=utf-8' : 'application/json; charset=utf-8' } : {}),
    'content-length': Buffer.byteLength(payload),
    'cache-control': 'no-store',
    ...(isHtml ? { 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'", 'x-content-type-options': 'nosniff' } : {}),
    ...reply.headers,
  };
  if (reply.closeConnection) headers.connection = 'close';
  res.writeHead(reply.status, headers);
  res.end(payload, () => {
    // The rest of an oversized body is not worth reading: drop the connection.
    if (reply.closeConnection) req.socket.destroy();
  });
}

/** How a route takes its body: required JSON, optional JSON (checked if present), or none. */
export type BodyMode = 'json' | 'optional' | 'none';

export interface Endpoint<H> {
  body: BodyMode;
  handle: H;
}

export interface RouteTable<E> {
  pattern: RegExp;
  methods: Partial<Record<string, E>>;
}

export type RouteMatch<E> = { kind: 'found'; endpoint: E; params: string[] } | { kind: 'not_found' } | { kind: 'method_not_allowed'; allow: string };

/** Finds the route for a path; a known path with the wrong method is 405, not 404. */
export function matchRoute<E>(table: readonly RouteTable<E>[], method: string, path: string): RouteMatch<E> {
  for (const route of table) {
    const m = route.pattern.exec(path);
    if (!m) continue;
    const endpoint = Object.prototype.hasOwnProperty.call(route.methods, method) ? route.methods[method] : undefined;
    if (endpoint) return { kind: 'found', endpoint, params: m.slice(1) };
    return { kind: 'method_not_allowed', allow: Object.keys(route.methods).join(', ') };
  }
  return { kind: 'not_found' };
}

export type BodyOutcome = { ok: true; value: unknown } | { ok: false; reply: Reply };

/**
 * Applies the body rules in order: size by Content-Length (413, before reading anything),
 * content type (415), size while streaming (413), JSON syntax (400). `undefined` = no body.
 */
export async function takeBody(req: IncomingMessage, mode: BodyMode): Promise<BodyOutcome> {
  if (mode === 'none') return { ok: true, value: undefined };
  const announced = announcesBody(req);
  if (!announced && mode === 'optional') return { ok: true, value: undefined };
  const declared = Number(req.headers['content-length']);
  const tooLarge = () => ({ ...errorReply(413, 'payload_too_large', `request body is over ${MAX_BODY_BYTES} bytes`), closeConnection: true });
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) return { ok: false, reply: tooLarge() };
  if (announced && !isJsonContentType(req.headers['content-type'])) {
    return { ok: false, reply: { ...errorReply(415, 'unsupported_media_type', 'Content-Type must be application/json'), closeConnection: true } };
  }
  const body = announced ? await readBody(req) : ({ ok: true, bytes: Buffer.alloc(0) } as const);
  if (!body.ok) {
    return { ok: false, reply: body.reason === 'too_large' ? tooLarge() : { ...errorReply(400, 'invalid_json', 'request body was cut off'), closeConnection: true } };
  }
  if (body.bytes.length === 0 && mode === 'optional') return { ok: true, value: undefined };
  const parsed = parseJson(body.bytes);
  if (!parsed.ok) return { ok: false, reply: errorReply(400, 'invalid_json', parsed.message) };
  return { ok: true, value: parsed.value };
}
