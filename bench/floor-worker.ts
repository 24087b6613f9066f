/** The notify benchmark's floor worker (bench/floor-workflows.ts), a process of its own as the delivery worker is. */
import { NativeConnection, Worker } from '@temporalio/worker';
import { temporalSettingsFromEnv } from '../temporal/connection';
import { FLOOR_TASK_QUEUE } from './floor-workflows';

async function main(): Promise<void> {
  const temporal = temporalSettingsFromEnv();
  const connection = await NativeConnection.connect({ address: temporal.connectionOptions.address });
  const told = async ({ key }: { key: string }) => void console.log(`floor: told ${key} ${Date.now()}`);
  const worker = await Worker.create({ connection, namespace: temporal.namespace, taskQueue: FLOOR_TASK_QUEUE, workflowsPath: require.resolve('./floor-workflows'), activities: { told } });
  console.log('floor: ready');
  await worker.run();
}

main().catch((err: Error) => {
  console.error(`floor: ${err.stack ?? err.message}`);
  process.exit(1);
});
