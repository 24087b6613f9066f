/**
 * The Nexus endpoints as a boundary between accounts (docs/accounts.md, "Nexus endpoints"):
 * `DELIVERY_NEXUS_ENDPOINTS_FILE` names a JSON file listing each endpoint, the caller namespace it
 * is made for, and the accounts a request through it may name. The handlers (nexus/handlers.ts)
 * refuse any other account, and any endpoint the file does not list; `npm start` and
 * `npm run cluster` create the endpoints and register their namespaces (scripts/nexus-setup.ts).
 *
 * Its own file, not a field of the account registry: it describes the Temporal side (who calls,
 * through which endpoint), is kept by whoever runs Temporal, and holds no secret; one account
 * may be served through several endpoints and an endpoint serve several accounts.
 *
 * Re-read when its stat changes, checked at each request (a stat, microseconds): a merchant's
 * endpoint added or an account moved applies from the next request, with no restart. A file
 * that stops being valid is refused and the last valid one kept (one log line per change); at
 * start, the error stops the process.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { ACCOUNT_ID, ACCOUNT_ID_RULE } from '../contract/accounts';
import { fieldPath } from '../provider/validation';

/** The server's rule for an endpoint name (its EndpointNameRegex), and a namespace name's. */
const ENDPOINT_NAME = /^[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]$/;
const NAMESPACE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$/;

const EndpointsFileSchema = z.strictObject({
  endpoints: z
    .array(
      z.strictObject({
        name: z.string().regex(ENDPOINT_NAME, { message: 'an endpoint name is letters, digits and -, starting with a letter and ending with a letter or digit' }),
        callerNamespace: z.string().regex(NAMESPACE_NAME, { message: 'must be a Temporal namespace name' }),
        accounts: z.array(z.string().regex(ACCOUNT_ID, { message: ACCOUNT_ID_RULE })).min(1, { message: 'must list at least one account' }),
      }),
    )
    .superRefine((list, ctx) => {
      const seen = new Set<string>();
      list.forEach((e, i) => {
        if (seen.has(e.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `endpoint ${e.name} is listed twice` });
        seen.add(e.name);
      });
    }),
});

export interface NexusEndpoint {
  name: string;
  /** The namespace whose workflows call through it: registered by the setup, and the one to allow in Temporal Cloud or the server's authorizer. */
  callerNamespace: string;
  accounts: ReadonlySet<string>;
}

export interface NexusEndpoints {
  /** The file's path. */
  readonly source: string;
  /** The endpoint as the file says now (re-read if it changed); undefined when the file does not list it. */
  get(name: string): NexusEndpoint | undefined;
  list(): NexusEndpoint[];
}

/** Reads and checks the file; throws naming the file, the endpoint and the field. */
function readEndpoints(path: string): Map<string, NexusEndpoint> {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`invalid Nexus endpoints file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
  const parsed = EndpointsFileSchema.safeParse(json);
  if (!parsed.success) {
    const given = (json as { endpoints?: Array<{ name?: unknown }> } | null)?.endpoints;
    const where = (path: readonly PropertyKey[]) => {
      const name = typeof path[1] === 'number' ? given?.[path[1]]?.name : undefined;
      return typeof name === 'string' && path.length > 2 ? `endpoint ${name}: ${fieldPath(path.slice(2))}` : fieldPath(path);
    };
    throw new Error(`invalid Nexus endpoints file ${path}: ${parsed.error.issues.map((i) => `${where(i.path)}: ${i.message}`).join('; ')}`);
  }
  return new Map(parsed.data.endpoints.map((e) => [e.name, { name: e.name, callerNamespace: e.callerNamespace, accounts: new Set(e.accounts) }]));
}

const stamp = (path: string) => {
  const s = statSync(path, { throwIfNoEntry: false });
  return s ? `${s.ino}:${s.size}:${s.mtimeMs}` : 'missing';
};

/** The endpoints file named by DELIVERY_NEXUS_ENDPOINTS_FILE, or undefined when it is not set (every endpoint serves every account, as before). */
export function nexusEndpointsFromEnv(env: NodeJS.ProcessEnv = process.env, log: (entry: object) => void = (e) => console.error(JSON.stringify(e))): NexusEndpoints | undefined {
  const file = env.DELIVERY_NEXUS_ENDPOINTS_FILE;
  if (!file) return undefined;
  const path = resolve(file);
  let seen = stamp(path);
  let endpoints = readEndpoints(path);
  const current = () => {
    const now = stamp(path);
    if (now === seen) return endpoints;
    seen = now;
    try {
      endpoints = readEndpoints(path);
      log({ level: 'INFO', msg: 'Nexus endpoints file reloaded', endpoints: endpoints.size });
    } catch (err) {
      log({ level: 'ERROR', msg: 'Nexus endpoints file refused, the last valid one kept', error: (err as Error).message });
    }
    return endpoints;
  };
  return { source: path, get: (name) => current().get(name), list: () => [...current().values()] };
}
