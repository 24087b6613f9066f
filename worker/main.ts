/**
 * `npm run worker`: runs the delivery workers against Temporal and the provider configured in the
 * environment (by default the local stack). The API key is read here, from the environment, and
 * never travels through Temporal.
 */
import { NativeConnection } from '@temporalio/worker';
import { temporalSettingsFromEnv } from '../client/temporal-config';
import { createProviderActivities } from '../activities/provider-activities';
import { ProviderClient } from '../provider/client';
import { providerConfigFromEnv } from '../provider/config';
import { createDeliveryWorkers } from './worker';

async function main(): Promise<void> {
  const temporal = temporalSettingsFromEnv();
  const provider = providerConfigFromEnv();
  const client = new ProviderClient(provider);
  const connection = await NativeConnection.connect({ address: temporal.address });
  const workers = await createDeliveryWorkers({
    connection,
    namespace: temporal.namespace,
    taskQueue: temporal.taskQueue,
    activities: createProviderActivities(client),
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
