/**
 * One ProviderClient per account, made on its first call and dropped when its registry entry
 * changes or goes (the next call makes it anew from the new entry). Each reads its account's key
 * at every call, so a key rotated inside its file is used from the next call without any change
 * here. Accounts on one courier host share one undici pool: 10,000 accounts on the courier's API
 * hold its connections once, not 10,000 times.
 */
import type { Dispatcher } from 'undici';
import { ProviderClient, providerPool, type ProviderClientOptions } from '../provider/client';
import type { RetryAfterCap } from '../provider/errors';
import type { AccountRegistry } from './registry';

export interface ProviderClients {
  /** The account's client; throws UnknownAccountError for an account the registry does not have. */
  forAccount(account: string): ProviderClient;
  close(): Promise<void>;
}

type CappedEvent = Parameters<NonNullable<RetryAfterCap['onCapped']>>[0];
/** `onCall`, `retryAfterCap.onCapped`: told with the account the call was made for (the worker's metrics and logs). */
type Options = Omit<ProviderClientOptions, 'baseUrl' | 'apiKey' | 'dispatcher' | 'onCall' | 'retryAfterCap'> & {
  onCall?: (call: Parameters<NonNullable<ProviderClientOptions['onCall']>>[0] & { account: string }) => void;
  retryAfterCap?: Omit<RetryAfterCap, 'onCapped'> & { onCapped?: (event: CappedEvent & { account: string }) => void };
};

export function providerClientsFor(registry: AccountRegistry, { onCall, retryAfterCap, ...o }: Options = {}): ProviderClients {
  const clients = new Map<string, ProviderClient>();
  const pools = new Map<string, Dispatcher>();
  const stop = registry.onChange((change) => {
    if (change instanceof Error) return; // the last valid registry stays
    for (const id of [...change.changed, ...change.removed]) clients.delete(id); // their pools are shared: nothing to close
  });
  return {
    forAccount(id) {
      const known = clients.get(id);
      if (known) return known;
      const account = registry.require(id);
      const origin = new URL(account.baseUrl).origin;
      let pool = pools.get(origin);
      if (!pool) pools.set(origin, (pool = providerPool(origin, { connections: o.connections, timeoutMs: o.timeoutMs })));
      const capped = retryAfterCap?.onCapped;
      const client = new ProviderClient({
        ...o,
        baseUrl: account.baseUrl,
        apiKey: () => account.apiKey(),
        dispatcher: pool,
        onCall: onCall && ((call) => onCall({ ...call, account: id })),
        retryAfterCap: retryAfterCap && { maxMs: retryAfterCap.maxMs, onCapped: capped && ((e) => capped({ ...e, account: id })) },
      });
      clients.set(id, client);
      return client;
    },
    async close() {
      stop();
      clients.clear();
      await Promise.all([...pools.values()].map((p) => p.close()));
      pools.clear();
    },
  };
}
