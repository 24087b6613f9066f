/**
 * `npm run fleet`: the fleet view (fleet/view.ts) on FLEET_METRICS_ADDRESS. One per deployment:
 * its visibility queries cost the same whatever the number of workers, and a second one would
 * only double them. Reads the same TEMPORAL_* and DELIVERY_TASK_QUEUE as the worker.
 */
import { Client, type ConnectionOptions } from '@temporalio/client';
import { z } from 'zod';
import { connectClient } from '../temporal/client-connection';
import { temporalSettingsFromEnv } from '../temporal/connection';
import { parseEnv } from '../provider/validation';
import { METRICS_ADDRESS, serveMetrics } from '../metrics/serve';
import { dataConverterFromEnv } from '../temporal/payload-codec';
import { accountIdsFromEnv } from '../accounts/registry';
import { DEFAULT_BUSIEST, DEFAULT_GATES_PER_PASS, DEFAULT_SCAN_PAGES, FleetView } from './view';
import { TaskQueuePollers } from './pollers';

const FleetEnvSchema = z.object({
  FLEET_METRICS_ADDRESS: z.string().regex(METRICS_ADDRESS, { message: 'must be host:port, e.g. 127.0.0.1:9470' }).default('127.0.0.1:9470'),
  /** A pass costs at most 3 visibility queries a status and FLEET_SCAN_PAGES more, whatever the number of accounts (fleet/view.ts). */
  FLEET_PERIOD_MS: z.coerce.number().int().min(60_000, { message: 'must be at least 60000 (a pass makes up to 3 visibility queries a status)' }).max(3_600_000).default(60_000),
  /** List pages (of 1,000) of the open deliveries read a pass for the by-account figures: a full scan takes open / 1,000 / this passes. */
  FLEET_SCAN_PAGES: z.coerce.number().int().min(1).max(100).default(DEFAULT_SCAN_PAGES),
  FLEET_BUSIEST_ACCOUNTS: z.coerce.number().int().min(0).max(100).default(DEFAULT_BUSIEST),
  /** Gates whose gateStatus query a pass asks at most (of accounts with deliveries not created yet). */
  FLEET_GATES_PER_PASS: z.coerce.number().int().min(1).max(1_000).default(DEFAULT_GATES_PER_PASS),
});

async function main(): Promise<void> {
  const env = parseEnv(FleetEnvSchema, process.env, 'fleet configuration');
  const temporal = temporalSettingsFromEnv();
  // The registry's ids only (no secret read), re-read each poll; a file broken meanwhile keeps the last good list.
  let accounts = accountIdsFromEnv();
  const currentAccounts = () => {
    try {
      accounts = accountIdsFromEnv();
    } catch (err) {
      console.error(`fleet: ${(err as Error).message}; counting by the last good list of accounts`);
    }
    return accounts;
  };
  const connection = await connectClient(temporal.connectionOptions as ConnectionOptions);
  const client = new Client({ connection, namespace: temporal.namespace, dataConverter: dataConverterFromEnv() });
  const view = new FleetView({
    client,
    namespace: temporal.namespace,
    taskQueue: temporal.taskQueue,
    periodMs: env.FLEET_PERIOD_MS,
    accounts: currentAccounts,
    scanPages: env.FLEET_SCAN_PAGES,
    busiest: env.FLEET_BUSIEST_ACCOUNTS,
    gatesPerPass: env.FLEET_GATES_PER_PASS,
  });
  const pollers = new TaskQueuePollers({ client, namespace: temporal.namespace, taskQueue: temporal.taskQueue, registry: view.registry });
  const listener = await serveMetrics(view.registry, env.FLEET_METRICS_ADDRESS);
  view.start();
  pollers.start();
  const stop = async () => {
    await Promise.all([view.stop(), pollers.stop()]);
    await listener.close();
    await connection.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop());
  process.once('SIGTERM', () => void stop());
  console.log(`fleet: metrics ${listener.url}, deliveries of ${temporal.namespace} on ${temporal.address} counted every ${env.FLEET_PERIOD_MS / 1000} s, ${accounts.length} account(s), ${view.labels.values().length - 1} of them labelled by name`);
}

main().catch((err: Error) => {
  console.error(`fleet: ${err.message}`);
  process.exit(1);
});
