/**
 * The courier accounts the bridge serves (docs/accounts.md): for each, the secrets its webhooks
 * are signed with and a ProviderClient with its own key and base URL for the look-ups. From the
 * account registry (DELIVERY_ACCOUNTS_FILE, re-read when it changes), or, for a bridge built the
 * way it was before accounts, the one `default` account of a client and a list of secrets.
 *
 * Secrets and keys are read at each use through the registry, so a rotated one works from the
 * next webhook without a restart; a client is made the first time an account needs one, by the
 * same cache as the worker's.
 */
import { readFileSync } from 'node:fs';
import { parseWebhookPath, WEBHOOK_PATH } from '../contract/workflow-ids';
import type { AccountRegistry } from '../accounts/registry';
import type { ProviderClient } from '../provider/client';
import { providerClientsFor } from '../accounts/provider-clients';

export interface BridgeAccount {
  readonly id: string;
  /** Read at each use; empty when the account has none. Throws (naming the account) when they cannot be read. */
  webhookSecrets(): string[];
  /** Its own key and base URL: look-ups of its deliveries. */
  readonly provider: ProviderClient;
}

export interface BridgeAccounts {
  get(id: string): BridgeAccount | undefined;
  /** The served accounts' ids, in the registry's order (their metric labels: metrics/account.ts). */
  ids(): string[];
  /** Called after each reload that changed the accounts; returns the unsubscribe. */
  onChange(listener: () => void): () => void;
  /**
   * The work of reading an account's secrets, for a webhook to an account that is not served, so
   * its refusal takes as long as a known account's (a secrets file read at each webhook).
   */
  decoyRead(): void;
  close(): Promise<void>;
}

/**
 * The bridge as it was before accounts (tests, an embedding): one client, one list of secrets, for
 * the account of 0.2.0's webhook URL. close() closes the client. A deployment's bridge without a
 * registry serves the environment's account through the registry instead (bridge/main.ts).
 */
export function singleAccount(provider: ProviderClient, secrets: readonly string[]): BridgeAccounts {
  const id = parseWebhookPath(WEBHOOK_PATH)!.account;
  const account: BridgeAccount = { id, webhookSecrets: () => [...secrets], provider };
  return { get: (named) => (named === id ? account : undefined), ids: () => [id], onChange: () => () => undefined, decoyRead: () => undefined, close: () => provider.close() };
}

/**
 * Every account of the registry, with the worker's client cache (accounts/provider-clients.ts: one
 * pool per courier host, a client made anew when its entry changes); `client` holds the settings
 * all their clients share (timeouts, pool size, Retry-After cap, told the account it capped).
 */
export function registryAccounts(registry: AccountRegistry, client: Parameters<typeof providerClientsFor>[1] = {}): BridgeAccounts {
  const clients = providerClientsFor(registry, client);
  return {
    get(id) {
      const account = registry.get(id);
      if (!account) return undefined;
      return {
        id,
        webhookSecrets: () => account.webhookSecrets(),
        // Made when a verified webhook needs a look-up, not for every request naming the account.
        get provider() {
          return clients.forAccount(id);
        },
      };
    },
    ids: () => registry.ids(),
    onChange: (listener) => registry.onChange((change) => void (change instanceof Error || listener())),
    decoyRead() {
      try {
        readFileSync(registry.source, 'utf8');
      } catch {
        // only the time it takes matters
      }
    },
    close: () => clients.close(),
  };
}
