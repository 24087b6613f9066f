/** Connections to the dev server that test/helpers/global-setup.ts started for this run. */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { connectClient } from '../../temporal/client-connection';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection } from '@temporalio/worker';
import { defaultBuildId } from '../../temporal/worker-deployment';

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
 * The worker deployment of one test stack's worker processes (WORKER_DEPLOYMENT_NAME and
 * WORKER_BUILD_ID), as each production stack has its own:
 * - a deployment per stack: the server registers at most 100 task queue names in one version
 *   (matching.maxTaskQueuesInDeploymentVersion) and silently never routes to a queue past that
 *   (its workers poll, its workflows never start). A full run's stacks, all one version of one
 *   deployment, came to 99 names (2026-11-27, counted at the run's end): one stack short of it;
 * - one build id for the stack's life: a worker it restarts after a commit (or an edit of the
 *   workflow sources) would otherwise come back as a new version that `if-none` does not make
 *   current, and the stack's new deliveries would wait for the old one's gone workers. Stacks
 *   load the run's prebuilt bundle (processes.test.ts: one it makes at its start), so a restarted
 *   worker runs the code its build id names.
 */
export function testDeployment(taskQueue: string): { WORKER_DEPLOYMENT_NAME: string; WORKER_BUILD_ID: string } {
  return { WORKER_DEPLOYMENT_NAME: `test-${taskQueue}`.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 100), WORKER_BUILD_ID: defaultBuildId() };
}

/** A task queue no other test file uses, so workers of different files never share work. */
export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}
