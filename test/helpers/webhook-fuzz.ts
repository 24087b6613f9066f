/**
 * Random and malformed requests for the webhook bridge, from a seeded PRNG so a failure can be
 * replayed. Each case says which answers are acceptable; nothing a case sends may be accepted.
 * Well-formed HTTP goes through undici; broken HTTP (truncated, aborted, huge headers, garbage,
 * invalid bytes in headers) goes over a raw socket.
 */
import { connect } from 'node:net';
import { request, type Dispatcher } from 'undici';
import { WEBHOOK_PATH } from '../../bridge/server';
import { generateWebhookSecret, signWebhook } from '../../provider/webhook-signature';



/** An HTTP status, or what happened instead of one. */
export type Result = number | 'closed' | 'error' | 'timeout';

export interface FuzzCase {
  kind: string;
  allowed: readonly Result[];
  run(): Promise<Result>;
}

export interface FuzzTarget {
  host: string;
  port: number;
  secret: string;
  /** A real delivery whose workflow is following it: forged events name it. */
  deliveryId: string;
  destinationId: string;
  dispatcher: Dispatcher;
  /** The bridge's admin listener (loopback): fuzzed with own and foreign Host and Origin values. */
  adminPort?: number;
}


type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const int = (r: Rand, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
const bytes = (r: Rand, n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(r() * 256)));
const nowSeconds = () => Math.floor(Date.now() / 1000);

/** Statuses that would visibly change the followed delivery if one forged event got through. */
const STATUSES = ['ASSIGNED', 'UPCOMING', 'PICKED_UP', 'DELIVERED', 'CANCELED', 'FAILED'];

export function realEvent(r: Rand, t: FuzzTarget, i: number): Record<string, unknown> {
  const id = `evt_fuzz${i}_${Math.floor(r() * 1e9)}`;
  const created_at = new Date().toISOString();
  return r() < 0.5
    ? { id, type: 'delivery.status_changed', created_at, data: { delivery_id: t.deliveryId, status: pick(r, STATUSES) } }
    : { id, type: 'destination.status_changed', created_at, data: { delivery_id: t.deliveryId, destination_id: t.destinationId, status: pick(r, STATUSES) } };
}

/**
 * A POST over the shared keep-alive pool. `ownConnection` closes the connection after it: a
 * huge body gets its connection cut by the bridge, which must not take a reused one down with it.
 */
export function post(t: FuzzTarget, body: Buffer | string, headers: Record<string, string>, ownConnection = false): Promise<Result> {
  return request(`http://${t.host}:${t.port}${WEBHOOK_PATH}`, { method: 'POST', body, headers, dispatcher: t.dispatcher, headersTimeout: 15_000, bodyTimeout: 15_000, reset: ownConnection })
    .then(async (res) => {
      await res.body.dump();
      return res.statusCode;
    })
    .catch(() => 'error' as const);
}

/**
 * Writes bytes on a fresh connection, then half-closes it (`end`), cuts it (`abort`), or waits
 * for the server to close it (`wait`, for requests that say Connection: close). Reports the
 * status line's code if one came back.
 */
export function rawExchange(t: FuzzTarget, data: Buffer, mode: 'end' | 'abort' | 'wait', timeoutMs = 15_000): Promise<Result> {
  return new Promise((resolve) => {
    const socket = connect(t.port, t.host);
    let got = '';
    let settled = false;
    const finish = (fallback: Result) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const m = /^HTTP\/1\.[01] (\d{3}) /.exec(got);
      resolve(m ? Number(m[1]) : fallback);
    };
    const timer = setTimeout(() => {
      finish('timeout');
      socket.destroy();
    }, timeoutMs);
    socket.on('data', (d: Buffer) => {
      if (got.length < 64) got += d.toString('latin1');
    });
    socket.on('error', () => finish('error'));
    socket.on('close', () => finish('closed'));
    socket.on('connect', () => {
      socket.write(data, () => {
        if (mode === 'end') socket.end();
        if (mode === 'abort') socket.destroy();
      });
    });
  });
}

function signedHeaders(t: FuzzTarget, id: string, body: Buffer | string, at = nowSeconds()): Record<string, string> {
  return { 'content-type': 'application/json', ...signWebhook(t.secret, id, at, body) };
}

/** A validly signed request for the real delivery, ten minutes old (or ahead): the same bytes every time. */
export function staleRequests(t: FuzzTarget): { body: string; headers: Record<string, string> }[] {
  return [-600, 600].map((offset, i) => {
    const body = JSON.stringify({ id: `evt_stale${i}`, type: 'delivery.status_changed', created_at: new Date().toISOString(), data: { delivery_id: t.deliveryId, status: 'DELIVERED' } });
    return { body, headers: signedHeaders(t, `evt_stale${i}`, body, nowSeconds() + offset) };
  });
}

function forged(r: Rand, t: FuzzTarget, i: number): FuzzCase {
  const evt = realEvent(r, t, i);
  const id = evt.id as string;
  const body = JSON.stringify(evt);
  const ts = nowSeconds();
  const real = signWebhook(t.secret, id, ts, body)['webhook-signature'];
  const variants: (() => Record<string, string>)[] = [
    () => ({ 'webhook-signature': `v1,${bytes(r, 32).toString('base64')}` }),
    () => signWebhook(generateWebhookSecret(), id, ts, body),
    () => signWebhook(t.secret, id, ts, body.replace(/"status":"[A-Z_]+"/, '"status":"CREATED"')),
    () => ({ 'webhook-signature': signWebhook(t.secret, `${id}x`, ts, body)['webhook-signature'] }),
    () => ({ 'webhook-timestamp': String(ts + 1) }),
    () => ({ 'webhook-signature': real.replace('v1,', 'v2,') }),
    () => ({ 'webhook-signature': real.slice(3) }),
    // Cut by two characters at least: without only its '=' padding the signature is still the right one.
    () => ({ 'webhook-signature': real.slice(0, int(r, 3, real.length - 2)) }),
    () => ({ 'webhook-signature': Array.from({ length: 50 }, () => `v1,${bytes(r, 32).toString('base64')}`).join(' ') }),
    () => ({ 'webhook-signature': '' }),
  ];
  const headers = { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': real, ...pick(r, variants)() };
  return { kind: 'forged signature', allowed: [401], run: () => post(t, body, headers) };
}

function badHeaders(r: Rand, t: FuzzTarget, i: number): FuzzCase {
  const evt = realEvent(r, t, i);
  const body = JSON.stringify(evt);
  const headers: Record<string, string> = signedHeaders(t, evt.id as string, body);
  const variant = int(r, 0, 5);
  if (variant === 0) delete headers[pick(r, ['webhook-id', 'webhook-timestamp', 'webhook-signature'])];
  if (variant === 1) headers['webhook-timestamp'] = pick(r, ['abc', '-1', '1e9', '99999999999999', ' ', '0x10', '1.5']);
  if (variant === 2) headers['webhook-id'] = pick(r, ['', 'evt_other', '../../etc/passwd', '<script>x</script>']);
  if (variant === 3) headers['content-type'] = pick(r, ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', 'application/jsonx']);
  if (variant === 4) delete headers['content-type'];
  if (variant === 5) for (const k of Object.keys(headers)) if (k.startsWith('webhook-')) headers[k] = bytes(r, 24).toString('hex');
  return { kind: 'bad headers', allowed: variant >= 3 && variant <= 4 ? [415] : [401], run: () => post(t, body, headers) };
}

/** Correctly signed (so the parser runs) but not an event of the contract. */
function signedMalformed(r: Rand, t: FuzzTarget, i: number): FuzzCase {
  const evt = realEvent(r, t, i) as { id: string; data: Record<string, unknown> } & Record<string, unknown>;
  const id = evt.id;
  const variants: (() => Buffer | string)[] = [
    () => bytes(r, int(r, 1, 512)),
    // Invalid UTF-8 inside the id: decoded, it holds U+FFFD, which no event id may.
    () => Buffer.concat([Buffer.from(`{"id":"${id}`), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(`","type":"delivery.status_changed","created_at":"2026-01-01T00:00:00Z","data":{"delivery_id":"${t.deliveryId}","status":"DELIVERED"}}`)]),
    () => Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from(JSON.stringify(evt)).subarray(0, 10), 0xc0, 0x80]),
    () => pick(r, ['null', '[]', '"evt"', '42', 'true', '{}', '', ' ', '[' .repeat(5000) + ']'.repeat(5000), '{"a":'.repeat(3000)]),
    () => JSON.stringify({ ...evt, id: 123 }),
    () => JSON.stringify({ ...evt, type: pick(r, ['delivery.created', 7, null]) }),
    () => JSON.stringify({ ...evt, data: pick(r, [[], 'x', null, 5]) }),
    () => JSON.stringify({ ...evt, data: { ...evt.data, status: pick(r, [7, null, '', 'X'.repeat(65), ['DELIVERED'], { s: 1 }]) } }),
    () => JSON.stringify({ ...evt, data: { ...evt.data, delivery_id: pick(r, [null, '', 42, {}]) } }),
    () => JSON.stringify({ ...evt, created_at: pick(r, [5, 'yesterday', null]) }),
    () => JSON.stringify({ ...evt, id: `${id}_other` }),
  ];
  const body = pick(r, variants)();
  return { kind: 'signed but malformed', allowed: [400], run: () => post(t, body, signedHeaders(t, id, body)) };
}

function signedUnknown(r: Rand, t: FuzzTarget, i: number): FuzzCase {
  const id = `evt_unknown${i}`;
  const body = JSON.stringify({ id, type: 'delivery.status_changed', created_at: new Date().toISOString(), data: { delivery_id: `del_fuzz${int(r, 0, 20)}`, status: 'ASSIGNED' } });
  return { kind: 'signed, unknown delivery', allowed: [503], run: () => post(t, body, signedHeaders(t, id, body)) };
}

function huge(r: Rand, t: FuzzTarget, i: number): FuzzCase {
  const size = int(r, 64 * 1024 + 1, 1_500_000);
  const evt = realEvent(r, t, i);
  const body = Buffer.alloc(size, JSON.stringify(evt));
  if (r() < 0.5) return { kind: 'huge body', allowed: [413, 'error'], run: () => post(t, body, signedHeaders(t, evt.id as string, body), true) };
  const head = `POST ${WEBHOOK_PATH} HTTP/1.1\r\nHost: ${t.host}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`;
  const chunked = Buffer.concat([Buffer.from(head), Buffer.from(`${size.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
  return { kind: 'huge body', allowed: [413, 'error', 'closed'], run: () => rawExchange(t, chunked, 'wait') };
}

function truncated(r: Rand, t: FuzzTarget, i: number): FuzzCase {
  const body = JSON.stringify(realEvent(r, t, i));
  const cutAt = int(r, 0, body.length - 1);
  const head = `POST ${WEBHOOK_PATH} HTTP/1.1\r\nHost: ${t.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
  return { kind: 'truncated body', allowed: [400, 'closed', 'error'], run: () => rawExchange(t, Buffer.from(head + body.slice(0, cutAt)), 'end') };
}

function aborted(r: Rand, t: FuzzTarget, i: number): FuzzCase {
  const body = JSON.stringify(realEvent(r, t, i));
  const whole = Buffer.from(`POST ${WEBHOOK_PATH} HTTP/1.1\r\nHost: ${t.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
  return { kind: 'aborted connection', allowed: ['closed', 'error', 400, 401], run: () => rawExchange(t, whole.subarray(0, int(r, 0, whole.length)), 'abort') };
}

function methodsAndPaths(r: Rand, t: FuzzTarget): FuzzCase {
  const method = pick(r, ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'CONNECT', 'FOO', 'post', 'PROPFIND']);
  const path = pick(r, [WEBHOOK_PATH, `${WEBHOOK_PATH}?x=1`, `${WEBHOOK_PATH}/`, '/', '/metrics', '/healthz', '/%ff%fe', '/..%2f..%2fetc', '*', '/a'.repeat(500), `http://x${WEBHOOK_PATH}`, '/webhooks', '/\u00e9']);
  const withHost = r() < 0.9 ? `Host: ${t.host}\r\n` : '';
  const body = r() < 0.5 ? '{}' : '';
  const req = Buffer.from(`${method} ${path} HTTP/1.1\r\n${withHost}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`, 'latin1');
  // GET /healthz answers 200 (/ and /metrics live on the admin listener: 404 here); a POST to
  // the webhook path without signature 401.
  // CONNECT is a tunnel request: node closes it unanswered when nobody handles tunnels.
  const allowed: Result[] = method === 'CONNECT' ? [400, 'closed'] : [200, 400, 401, 404, 405, 413, 415];
  return { kind: 'methods and paths', allowed, run: () => rawExchange(t, req, 'wait') };
}

/**
 * The admin listener: with a foreign Host or Origin nothing but 403 (or 400 for no Host at all);
 * with its own names, 200 only for GET of its three pages.
 */
function adminRequests(r: Rand, t: FuzzTarget): FuzzCase {
  if (t.adminPort === undefined) return methodsAndPaths(r, t);
  const port = t.adminPort;
  const method = pick(r, ['GET', 'GET', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'HEAD', 'FOO']);
  const path = pick(r, ['/', '/metrics', '/healthz', WEBHOOK_PATH, '/x', '/%ff', '/?a=1']);
  const host = pick(r, [`127.0.0.1:${port}`, `localhost:${port}`, `evil.example:${port}`, 'evil.example', `127.0.0.1:${port + 1}`, null]);
  const origin = pick(r, [null, null, 'http://evil.example', 'null', `http://127.0.0.1:${port}`]);
  const type = pick(r, ['application/json', 'text/plain', null]);
  const head = [`${method} ${path} HTTP/1.1`, host === null ? '' : `Host: ${host}`, origin === null ? '' : `Origin: ${origin}`, type === null ? '' : `Content-Type: ${type}`, 'Content-Length: 0', 'Connection: close'];
  const req = Buffer.from(head.filter(Boolean).join('\r\n') + '\r\n\r\n', 'latin1');
  const ownHost = host === `127.0.0.1:${port}` || host === `localhost:${port}`;
  const ownOrigin = origin === null || origin === `http://127.0.0.1:${port}`;
  let allowed: Result[];
  // node's parser answers 400 itself to an unknown method or a missing Host, before any handler.
  if (host === null || method === 'FOO') allowed = [400];
  else if (!ownHost || !ownOrigin) allowed = [403];
  else if (method === 'GET' && ['/', '/metrics', '/healthz', '/?a=1'].includes(path)) allowed = [200];
  else allowed = [400, 404, 405, 415];
  return { kind: 'admin listener', allowed, run: () => rawExchange({ ...t, port }, req, 'wait') };
}

function hugeHeaders(r: Rand, t: FuzzTarget): FuzzCase {
  const name = pick(r, ['webhook-signature', 'webhook-id', 'x-padding', 'cookie']);
  const req = Buffer.from(`POST ${WEBHOOK_PATH} HTTP/1.1\r\nHost: ${t.host}\r\n${name}: ${'v1,'.padEnd(int(r, 17_000, 200_000), 'A')}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
  return { kind: 'huge headers', allowed: [431, 400, 'closed', 'error'], run: () => rawExchange(t, req, 'wait') };
}

function garbage(r: Rand, t: FuzzTarget): FuzzCase {
  const raw = r() < 0.5 ? bytes(r, int(r, 1, 4096)) : Buffer.concat([Buffer.from(`POST ${WEBHOOK_PATH} HTTP/1.1\r\nHost: ${t.host}\r\nwebhook-id: `), bytes(r, 40), Buffer.from('\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}')]);
  return { kind: 'garbage and invalid bytes', allowed: [400, 401, 415, 'closed', 'error'], run: () => rawExchange(t, raw, 'end') };
}

/** The mix, in percent. */
const MIX: [number, (r: Rand, t: FuzzTarget, i: number) => FuzzCase][] = [
  [30, forged],
  [8, (r, t) => replayOfStale(r, t)],
  [12, badHeaders],
  [15, signedMalformed],
  [2, signedUnknown],
  [3, huge],
  [7, truncated],
  [5, aborted],
  [6, methodsAndPaths],
  [4, (r, t) => adminRequests(r, t)],
  [3, hugeHeaders],
  [5, garbage],
];

let stale: ReturnType<typeof staleRequests> | undefined;
function replayOfStale(r: Rand, t: FuzzTarget): FuzzCase {
  stale ??= staleRequests(t);
  const s = pick(r, stale);
  return { kind: 'replay with an old timestamp', allowed: [401], run: () => post(t, s.body, s.headers) };
}

export function fuzzCase(r: Rand, t: FuzzTarget, i: number): FuzzCase {
  let roll = r() * 100;
  for (const [weight, make] of MIX) {
    if (roll < weight) return make(r, t, i);
    roll -= weight;
  }
  return forged(r, t, i);
}
