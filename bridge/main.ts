// bridge/: the webhook bridge process: signed webhooks in, signals to the delivery workflows out.
/** `npm run bridge`: the webhook bridge on http://127.0.0.1:8080 by default. */
import { Client, type ConnectionOptions } from '@temporalio/client';
import { connectClient } from '../temporal/client-connection';
import { collectDefaultMetrics } from 'prom-client';
import { dataConverterFromEnv } from '../temporal/payload-codec';
import { temporalSettingsFromEnv } from '../temporal/connection';
import { ProviderClient } from '../provider/client';
import { providerConfigFromEnv } from '../provider/config';
import { secretFingerprint } from '../provider/webhook-signature';
import { bridgeConfigFromEnv } from './config';
import { createBridge, WEBHOOK_PATH } from './server';
import { installTracing, tracingClientInterceptors } from '../tracing/install';

async function main(): Promise<void> {
  const config = bridgeConfigFromEnv();
  const tracing = installTracing('delivery-bridge');
  const temporal = temporalSettingsFromEnv();
  const providerConfig = providerConfigFromEnv();
  let onCapped: (e: { call: string; askedMs: number; cappedMs: number }) => void = () => undefined;
  const provider = new ProviderClient({ ...providerConfig, retryAfterCap: { maxMs: providerConfig.retryAfterCapMs, onCapped: (e) => onCapped(e) } });
  const connection = await connectClient(temporal.connectionOptions as ConnectionOptions);
  const bridge = createBridge({
    temporal: new Client({ connection, namespace: temporal.namespace, dataConverter: dataConverterFromEnv(), interceptors: tracingClientInterceptors() }),
    provider,
    secrets: config.secrets,
    retryAfterSeconds: config.retryAfterSeconds,
    maxConnections: config.maxConnections,
    negativeCacheMs: config.negativeCacheMs,
    temporalTimeoutMs: config.temporalTimeoutMs,
    adminAllowedHosts: config.adminAllowedHosts,
  });
  onCapped = (e) => {
    bridge.metrics.retryAfterCapped();
    process.stdout.write(JSON.stringify({ msg: 'provider Retry-After capped', call: e.call, asked_ms: e.askedMs, capped_ms: e.cappedMs }) + '\n');
  };
  // Process-wide figures (heap, event loop lag, GC) belong to the process, so only here, not in createBridge.
  collectDefaultMetrics({ register: bridge.metrics.registry });
  const adminUrl = await bridge.listenAdmin(config.adminPort, config.adminHost);
  const url = await bridge.listen(config.port, config.host);
  const fingerprints = config.secrets.map(secretFingerprint).join(', ');
  console.log(`bridge: listening on ${url}${WEBHOOK_PATH} (secret(s) ${fingerprints}), Temporal ${temporal.address}; admin: recent webhooks ${adminUrl}/, metrics ${adminUrl}/metrics${tracing ? `; traces to ${tracing.config.tracesUrl} as ${tracing.config.serviceName}` : ''}`);
  const stop = async () => {
    await bridge.close();
    await connection.close();
    await provider.close();
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
