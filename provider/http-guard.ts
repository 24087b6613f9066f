/**
 * The rules every listener that a browser on the same machine can reach applies before anything
 * else (simulator, codec endpoint, bridge admin listener):
 *  - Host must be one of the listener's own names (loopback names with its port, plus configured
 *    ones). A DNS-rebinding page talks to 127.0.0.1 under its own host name, so this is what
 *    keeps it from reading the answers.
 *  - A request carrying a foreign Origin (or `Origin: null`, sent by sandboxed frames and some
 *    redirects) is refused: browsers send Origin on every cross-origin fetch and on every form
 *    POST, so a page elsewhere cannot drive the listener even blindly.
 *  - State-changing methods need `Content-Type: application/json`, also with no body. No HTML
 *    form can send that type, and a script that does triggers a CORS preflight.
 * Servers talking to each other send no Origin and their own Host, so they pass unchanged.
 */
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

export const LOOPBACK_HOST_NAMES = ['127.0.0.1', 'localhost', '[::1]'] as const;

export interface HttpGuard {
  /** Lower-case `host:port` values accepted in the Host header. */
  hosts: ReadonlySet<string>;
  /** Accepted Origin values (scheme://host:port); requests without Origin are accepted. */
  origins: ReadonlySet<string>;
}

export type GuardVerdict = { ok: true } | { ok: false; status: 403 | 415; code: 'host_not_allowed' | 'origin_not_allowed' | 'unsupported_media_type'; message: string };

/** `host` as it appears in a URL or Host header (IPv6 in brackets), lower case. */
export function hostForHeader(host: string): string {
  const h = host.toLowerCase();
  return isIP(h) === 6 ? `[${h}]` : h;
}

/** Whether a listen address keeps a listener on this machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * The Host values a listener on `port` answers to: the loopback names, the listen address when it
 * is a specific one, and `extra` (`name` or `name:port`; a bare name gets the listener's port).
 */
export function ownHosts(port: number, listenHost: string | undefined, extra: readonly string[] = []): Set<string> {
  const hosts = new Set<string>(LOOPBACK_HOST_NAMES.map((h) => `${h}:${port}`));
  if (listenHost && listenHost !== '0.0.0.0' && listenHost !== '::') hosts.add(`${hostForHeader(listenHost)}:${port}`);
  for (const e of extra) {
    const v = e.trim().toLowerCase();
    if (!v) continue;
    hosts.add(/:\d+$/.test(v) && !/^[^[]*:.*:/.test(v) ? v : `${hostForHeader(v)}:${port}`);
  }
  return hosts;
}

/** The same-origin Origin values of those hosts (http only: these listeners do not speak TLS). */
export function originsOf(hosts: Iterable<string>, extra: readonly string[] = []): Set<string> {
  const origins = new Set<string>();
  for (const h of hosts) origins.add(`http://${h}`);
  for (const o of extra) origins.add(o.replace(/\/+$/, '').toLowerCase());
  return origins;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function isJsonContentType(value: string | undefined): boolean {
  return (value ?? '').split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
}

/**
 * Host, then Origin, then (on state-changing methods, unless `jsonOnly` is false) the content
 * type. `jsonOnly: false` is for an API that has bodiless POSTs of its own and needs a key anyway.
 */
export function checkRequest(req: IncomingMessage, guard: HttpGuard, jsonOnly = true): GuardVerdict {
  const host = header(req, 'host')?.toLowerCase();
  if (!host || !guard.hosts.has(host)) return { ok: false, status: 403, code: 'host_not_allowed', message: 'this Host is not one of the listener\'s own names' };
  const origin = header(req, 'origin');
  if (origin !== undefined && !guard.origins.has(origin.toLowerCase())) return { ok: false, status: 403, code: 'origin_not_allowed', message: 'requests from this Origin are not accepted' };
  if (jsonOnly && !SAFE_METHODS.has(req.method ?? 'GET') && !isJsonContentType(header(req, 'content-type'))) {
    return { ok: false, status: 415, code: 'unsupported_media_type', message: 'Content-Type must be application/json (also without a body)' };
  }
  return { ok: true };
}
