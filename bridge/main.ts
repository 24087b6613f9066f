// bridge/: the webhook bridge process: signed webhooks in, signals to the delivery workflows out.
/**
 * `npm run bridge`: the webhook bridge on http://127.0.0.1:8080 by default. With
 * DELIVERY_ACCOUNTS_FILE, every account of the registry at /webhooks/delivery/<account> (the
 * file is re-read when it changes); without, the one `default` account at /webhooks/delivery.
 */
import { Client, type ConnectionOptions } from '@temporalio/client';
import { connectClient } from '../temporal/client-connection';
import { collectDefaultMetrics } from 'prom-client';
import { accountRegistryFromEnv } from '../accounts/registry';
import { reloadLogLine } from '../accounts/reload-log';
import { dataConverterFromEnv } from '../temporal/payload-codec';
import { temporalSettingsFromEnv } from '../temporal/connection';
import { ProviderClient } from '../provider/client';
import { providerConfigFromEnv } from '../provider/config';
import { secretFingerprint } from '../provider/webhook-signature';
import { type BridgeAccounts, registryAccounts, singleAccount } from './accounts';
import { bridgeConfigFromEnv } from './config';
import { createBridge, WEBHOOK_PATH } from './server';
import { installTracing, tracingClientInterceptors } from '../tracing/install';
import { countTraceSpans } from '../metrics/trace-spans';

async function main(): Promise<void> {
  const config = bridgeConfigFromEnv();
  const log = (entry: Record<string, unknown>) => process.stdout.write(JSON.stringify(entry) + '\n');
  const tracing = installTracing('delivery-bridge', (line) => log({ time: new Date().toISOString(), ...line }));
  const temporal = temporalSettingsFromEnv();
  const providerConfig = providerConfigFromEnv();
  type Capped = { account: string; call: string; askedMs: number; cappedMs: number };
  let onCapped: (e: Capped) => void = () => undefined;
  const clientOptions = { timeoutMs: providerConfig.timeoutMs, connections: providerConfig.connections, retryAfterCap: { maxMs: providerConfig.retryAfterCapMs, onCapped: (e: Capped) => onCapped(e) } };
  let accounts: BridgeAccounts;
  let served: string;
  if (config.accountsFile) {
    // An invalid registry stops the start here, naming the account and the field.
    const registry = accountRegistryFromEnv();
    registry.onChange((change) => log(reloadLogLine(change)));
    accounts = registryAccounts(registry, clientOptions);
    const without = registry.ids().filter((id) => registry.get(id)!.webhookSecrets().length === 0);
    served = `${registry.size} account(s) of ${registry.source} at ${WEBHOOK_PATH}/<account>${without.length ? ` (no webhook secrets, so every webhook refused: ${without.slice(0, 10).join(', ')}${without.length > 10 ? ', …' : ''})` : ''}`;
  } else {
    // Capped on a call of the one account the bridge serves.
    const retryAfterCap = { ...clientOptions.retryAfterCap, onCapped: (e: Omit<Capped, 'account'>) => onCapped({ ...e, account: accounts.ids()[0]! }) };
    accounts = singleAccount(new ProviderClient({ ...providerConfig, ...clientOptions, retryAfterCap }), config.secrets);
    served = `${WEBHOOK_PATH} (secret(s) ${config.secrets.map(secretFingerprint).join(', ')})`;
  }
  const connection = await connectClient(temporal.connectionOptions as ConnectionOptions);
  const bridge = createBridge({
    temporal: new Client({ connection, namespace: temporal.namespace, dataConverter: dataConverterFromEnv(), interceptors: tracingClientInterceptors() }),
    accounts,
    retryAfterSeconds: config.retryAfterSeconds,
    maxConnections: config.maxConnections,
    negativeCacheMs: config.negativeCacheMs,
    temporalTimeoutMs: config.temporalTimeoutMs,
    adminAllowedHosts: config.adminAllowedHosts,
    log,
  });
  onCapped = (e) => {
    bridge.metrics.retryAfterCapped(e.account);
    log({ msg: 'provider Retry-After capped', account: e.account, call: e.call, asked_ms: e.askedMs, capped_ms: e.cappedMs });
  };
  // Process-wide figures (heap, event loop lag, GC) belong to the process, so only here, not in createBridge.
  collectDefaultMetrics({ register: bridge.metrics.registry });
  if (tracing) countTraceSpans(bridge.metrics.registry, tracing.spans);
  const adminUrl = await bridge.listenAdmin(config.adminPort, config.adminHost);
  const url = await bridge.listen(config.port, config.host);
  console.log(`bridge: listening on ${url}: ${served}, Temporal ${temporal.address}; admin: recent webhooks ${adminUrl}/, metrics ${adminUrl}/metrics${tracing ? `; traces to ${tracing.config.tracesUrl} as ${tracing.config.serviceName}` : ''}`);
  const stop = async () => {
    await bridge.close();
    await connection.close();
    await accounts.close();
    await tracing?.shutdown();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
}

main().catch((err: Error) => {
  console.error(`bridge: ${err.message}`);
  process.exit(1);
});
