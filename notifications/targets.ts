/**
 * Notification endpoints by courier account and name (docs/accounts.md): `orders` of account A and
 * `orders` of account B are two endpoints, each with its own URL and secrets, and an order of A can
 * name only A's. From the account registry (each account's `notify`, secrets read at each send:
 * rotation without a restart). A worker always has a registry (without DELIVERY_ACCOUNTS_FILE, the
 * environment's one account, with DELIVERY_NOTIFY_*'s endpoints); one built without (tests, an
 * embedding) serves any account with one NotifyConfig.
 *
 * The notify activity takes the delivery's account from its workflow ID (contract/workflow-ids.ts),
 * read from the activity's context, so its input and the history do not change; the start check
 * takes it from the start input it checks.
 */
import type { AccountRegistry } from '../accounts/registry';
import type { NotifyConfig, NotifyEndpoint } from './config';

export interface NotifyTargets {
  /** The account's endpoint names (for the start check and its message). */
  names(account: string): ReadonlySet<string>;
  /** The endpoint with its secrets as they are now; undefined when the account has no endpoint of that name. */
  endpoint(account: string, name: string): NotifyEndpoint | undefined;
}


/** One NotifyConfig's endpoints, the same for every account: a worker built without a registry. */
export function configTargets(config: Pick<NotifyConfig, 'endpoints'>): NotifyTargets {
  const names: ReadonlySet<string> = new Set(config.endpoints.keys());
  return { names: () => names, endpoint: (_account, name) => config.endpoints.get(name) };
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

