/**
 * Notification endpoints by courier account and name (docs/accounts.md): `orders` of account A and
 * `orders` of account B are two endpoints, each with its own URL and secrets, and an order of A can
 * name only A's. From the account registry (each account's `notify`, secrets read at each send:
 * rotation without a restart), or from a NotifyConfig (DELIVERY_NOTIFY_*), which is the `default`
 * account's alone.
 *
 * The notify activity takes the delivery's account from its workflow ID (contract/workflow-ids.ts),
 * read from the activity's context, so its input and the history do not change; the start check
 * takes it from the start input it checks.
 */
import type { AccountRegistry } from '../accounts/registry';
import { DEFAULT_ACCOUNT } from '../contract/accounts';
import type { NotifyConfig, NotifyEndpoint } from './config';

export interface NotifyTargets {
  /** The account's endpoint names (for the start check and its message). */
  names(account: string): ReadonlySet<string>;
  /** The endpoint with its secrets as they are now; undefined when the account has no endpoint of that name. */
  endpoint(account: string, name: string): NotifyEndpoint | undefined;
}

const NONE: ReadonlySet<string> = new Set();

/** DELIVERY_NOTIFY_*: the `default` account's endpoints; other accounts have none. */
export function configTargets(config: Pick<NotifyConfig, 'endpoints'>): NotifyTargets {
  const names: ReadonlySet<string> = new Set(config.endpoints.keys());
  return {
    names: (account) => (account === DEFAULT_ACCOUNT ? names : NONE),
    endpoint: (account, name) => (account === DEFAULT_ACCOUNT ? config.endpoints.get(name) : undefined),
  };
}

/** Each registry account's own endpoints, looked up at each use (a reloaded registry counts from the next send). */
export function registryTargets(registry: Pick<AccountRegistry, 'get'>): NotifyTargets {
  return {
    names: (account) => new Set(registry.get(account)?.endpoints.keys() ?? []),
    endpoint(account, name) {
      const e = registry.get(account)?.endpoints.get(name);
      return e && { name: e.name, url: e.url, secrets: e.secrets() };
    },
  };
}

