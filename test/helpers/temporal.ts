/** Connections to the dev server that test/helpers/global-setup.ts started for this run. */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { connectClient } from '../../temporal/client-connection';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';

export function testServerAddress(): { address: string; namespace: string } {
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) throw new Error('TEMPORAL_ADDRESS is not set: run this test through jest (the `temporal` project starts the server)');
  return { address, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' };
}

export async function testClient(dataConverter?: DataConverter, address = testServerAddress().address): Promise<{ client: Client; connection: Connection }> {
  const { namespace } = testServerAddress();
  const connection = await connectClient({ address });
  return { client: new Client({ connection, namespace, dataConverter }), connection };
}

export async function testNativeConnection(address = testServerAddress().address): Promise<NativeConnection> {
  return NativeConnection.connect({ address });
}

/**
 * The worker deployment of one test stack's worker processes (WORKER_DEPLOYMENT_NAME), as each
 * production stack has its own. The server registers at most 100 task queue names in one version
 * (matching.maxTaskQueuesInDeploymentVersion), and a run's stacks, all one version of the default
 * deployment on the run's dev server, came to about that many by the end of the run: a later
 * stack's workers could not have registered theirs (probably why the tracing test's delivery once
 * never started in 240 s).
 */
export function testDeploymentName(taskQueue: string): string {
  return `test-${taskQueue}`.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 100);
}

/** A task queue no other test file uses, so workers of different files never share work. */
export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}
