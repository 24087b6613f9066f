/**
 * `npm run worker`: runs the delivery workers against Temporal and the provider configured in the
 * environment (by default the local stack). The API key is read here, from the environment, and
 * never travels through Temporal.
 */
import { DefaultLogger, NativeConnection, Runtime, type LogLevel } from '@temporalio/worker';
import { dataConverterFromEnv } from '../client/payload-codec';
import { temporalSettingsFromEnv } from '../client/temporal-config';
import { createProviderActivities } from '../activities/provider-activities';
import { ProviderClient } from '../provider/client';
import { providerConfigFromEnv } from '../provider/config';
import { createDeliveryWorkers } from './worker';

/** One JSON object per line, so logs can be searched by workflow ID; never any provider key. */
function installJsonLogs(): void {
  const level = (process.env.LOG_LEVEL?.toUpperCase() ?? 'INFO') as LogLevel;
  Runtime.install({
    logger: new DefaultLogger(level, (entry) => {
      const time = new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString();
      process.stdout.write(JSON.stringify({ time, level: entry.level, msg: entry.message, ...entry.meta }) + '\n');
    }),
  });
}

async function main(): Promise<void> {
  installJsonLogs();
  const temporal = temporalSettingsFromEnv();
  const provider = providerConfigFromEnv();
  const client = new ProviderClient(provider);
  const connection = await NativeConnection.connect({ address: temporal.address });
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
  console.log(`worker: task queue ${temporal.taskQueue} on ${temporal.address} (namespace ${temporal.namespace}), provider ${client.baseUrl}`);
  await workers.run();
  await connection.close();
  await client.close();
}

main().catch((err: Error) => {
  console.error(`worker: ${err.message}`);
  process.exit(1);
});
