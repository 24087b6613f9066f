/**
 * The HTTP endpoints notifications may go to, configured by the operator and named in a start
 * input by name only: whoever can start a workflow cannot make the worker call an address of their
 * choosing. `DELIVERY_NOTIFY_ENDPOINTS="orders=https://orders.example/hooks/delivery"` (comma-
 * separated `name=url`), `DELIVERY_NOTIFY_SECRETS="orders=whsec_…"` (comma- or space-separated
 * `name=secret`; a name given twice has two secrets, each signing: rotation). Errors name the
 * variable and the endpoint, never a secret.
 */
import { isSafeApiUrl } from '../provider/config';
import { secretKey } from '../provider/webhook-signature';
import { parseSchedule, DEFAULT_RETRY_SCHEDULE } from './retry-schedule';

export interface NotifyEndpoint {
  name: string;
  url: URL;
  /** Every secret signs each request (Standard Webhooks: one signature per secret, space-separated). */
  secrets: string[];
}

export interface NotifyConfig {
  endpoints: Map<string, NotifyEndpoint>;
  /** Delays before the 2nd, 3rd, … attempt (ms); the last repeats. */
  retryScheduleMs: number[];
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

function entries(value: string | undefined, separators: RegExp, variable: string): Array<[string, string]> {
  return (value ?? '')
    .split(separators)
    .map((e) => e.trim())
    .filter(Boolean)
    .map((entry, i) => {
      const eq = entry.indexOf('=');
      const name = eq > 0 ? entry.slice(0, eq) : '';
      if (!NAME.test(name)) throw new Error(`invalid ${variable}: entry ${i + 1} must be name=value with a name of letters, digits, _ . - (1 to 63 characters)`);
      return [name, entry.slice(eq + 1)];
    });
}

export function notifyConfigFromEnv(env: NodeJS.ProcessEnv = process.env): NotifyConfig {
  const endpoints = new Map<string, NotifyEndpoint>();
  for (const [name, raw] of entries(env.DELIVERY_NOTIFY_ENDPOINTS, /,/, 'DELIVERY_NOTIFY_ENDPOINTS')) {
    if (endpoints.has(name)) throw new Error(`invalid DELIVERY_NOTIFY_ENDPOINTS: endpoint ${name} is named twice`);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new Error(`invalid DELIVERY_NOTIFY_ENDPOINTS: endpoint ${name}: not a URL`);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`invalid DELIVERY_NOTIFY_ENDPOINTS: endpoint ${name}: must be an http(s) URL`);
    if (!isSafeApiUrl(url.href)) throw new Error(`invalid DELIVERY_NOTIFY_ENDPOINTS: endpoint ${name}: must be https:// (http:// only to loopback)`);
    if (url.username || url.password) throw new Error(`invalid DELIVERY_NOTIFY_ENDPOINTS: endpoint ${name}: credentials do not belong in the URL (requests are signed with DELIVERY_NOTIFY_SECRETS)`);
    endpoints.set(name, { name, url, secrets: [] });
  }
  for (const [name, secret] of entries(env.DELIVERY_NOTIFY_SECRETS, /[\s,]+/, 'DELIVERY_NOTIFY_SECRETS')) {
    const endpoint = endpoints.get(name);
    if (!endpoint) throw new Error(`invalid DELIVERY_NOTIFY_SECRETS: a secret for ${name}, which DELIVERY_NOTIFY_ENDPOINTS does not name`);
    try {
      secretKey(secret);
    } catch (err) {
      throw new Error(`invalid DELIVERY_NOTIFY_SECRETS: endpoint ${name}: ${(err as Error).message}`, { cause: err });
    }
    endpoint.secrets.push(secret);
  }
  for (const e of endpoints.values()) {
    if (e.secrets.length === 0) throw new Error(`invalid DELIVERY_NOTIFY_SECRETS: endpoint ${e.name} has no signing secret (add ${e.name}=whsec_…)`);
  }
  const schedule = env.DELIVERY_NOTIFY_RETRY_SCHEDULE?.trim();
  return { endpoints, retryScheduleMs: schedule ? parseSchedule(schedule, 'DELIVERY_NOTIFY_RETRY_SCHEDULE') : DEFAULT_RETRY_SCHEDULE };
}

/** For logs and `npm start`: the endpoints by name and origin, never a path (it may hold a token) or a secret. */
export function describeEndpoints(config: NotifyConfig): string {
  if (config.endpoints.size === 0) return 'none';
  return [...config.endpoints.values()].map((e) => `${e.name} (${e.url.origin}, ${e.secrets.length} secret${e.secrets.length > 1 ? 's' : ''})`).join(', ');
}
