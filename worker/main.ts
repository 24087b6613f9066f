/**
 * `npm run worker`: runs the delivery workers against Temporal and the provider configured in the
 * environment (by default the local stack). The API key is read here, from the environment, and
 * never travels through Temporal.
 */
import { DefaultLogger, NativeConnection, Runtime, type LogLevel, type NativeConnectionOptions } from '@temporalio/worker';
import { dataConverterFromEnv } from '../client/payload-codec';
import { temporalSettingsFromEnv } from '../client/temporal-config';
import { createProviderActivities } from '../activities/provider-activities';
import { ProviderClient } from '../provider/client';
import { providerConfigFromEnv } from '../provider/config';
import { parseEnv } from '../provider/validation';
import { z } from 'zod';
import { createDeliveryWorkers } from './worker';

const WorkerEnvSchema = z.object({
  LOG_LEVEL: z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']).default('INFO'),
  /** host:port for the Temporal runtime's Prometheus exporter (/metrics); unset: no exporter. */
  WORKER_METRICS_ADDRESS: z.string().regex(/^[^\s:]+:\d{1,5}$/, { message: 'must be host:port, e.g. 127.0.0.1:9464' }).optional(),
});

/**
 * Logs: one JSON object per line, so they can be searched by workflow ID; never any provider
 * key. Metrics: the Temporal runtime's own (task latencies, slots, polls) for Prometheus.
 */
function installRuntime(env: z.output<typeof WorkerEnvSchema>): void {
  Runtime.install({
    logger: new DefaultLogger(env.LOG_LEVEL as LogLevel, (entry) => {
      const time = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
      process.stdout.write(JSON.stringify({ time, level: entry.level, msg: entry.message, ...entry.meta }) + '\n');
    }),
    telemetryOptions: env.WORKER_METRICS_ADDRESS ? { metrics: { prometheus: { bindAddress: env.WORKER_METRICS_ADDRESS } } } : undefined,
  });
}

async function main(): Promise<void> {
  const env = parseEnv(WorkerEnvSchema, { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL?.toUpperCase() }, 'worker configuration');
  installRuntime(env);
  const temporal = temporalSettingsFromEnv();
  const provider = providerConfigFromEnv();
  const client = new ProviderClient(provider);
  const connection = await NativeConnection.connect(temporal.connectionOptions as NativeConnectionOptions);
  const workers = await createDeliveryWorkers({
    connection,
    namespace: temporal.namespace,
    taskQueue: temporal.taskQueue,
    activities: createProviderActivities(client),
    dataConverter: dataConverterFromEnv(),
  });
  const stop = () => workers.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  console.log(
    `worker: task queue ${temporal.taskQueue} on ${temporal.address} (namespace ${temporal.namespace}), provider ${client.baseUrl}` +
      (env.WORKER_METRICS_ADDRESS ? `, metrics http://${env.WORKER_METRICS_ADDRESS}/metrics` : ''),
  );
  await workers.run();
  await connection.close();
  await client.close();
}

main().catch((err: Error) => {
  console.error(`worker: ${err.message}`);
  process.exit(1);
});
