/**
 * What the Nexus service `deliveries` needs on a Temporal server: the order systems' namespace
 * (`orders`) and an endpoint routing to the delivery worker's namespace and task queue. Used by
 * `npm start`, `npm run cluster` and the tests; idempotent, so a restarted stack (the dev server
 * keeps its data in .data/) finds both as they were, and a changed task queue moves the endpoint.
 */
import { status } from '@grpc/grpc-js';
import type { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import { z } from 'zod';
import { DEFAULT_TASK_QUEUE } from '../contract/task-queues';
import { parseEnv } from '../provider/validation';
import { connectClient } from '../temporal/client-connection';
import { nexusEndpointsFromEnv } from '../nexus/endpoint-accounts';

export const ORDERS_NAMESPACE = 'orders';
export const DELIVERIES_ENDPOINT = 'deliveries';

export interface NexusSetup {
  /** Namespace of the callers (order systems); registered when missing. */
  callerNamespace?: string;
  /** Endpoint name; the callers' workflows name it in createNexusServiceClient. */
  endpoint?: string;
  /** The delivery worker's namespace and task queue. */
  targetNamespace: string;
  targetTaskQueue: string;
  /** How long a new namespace may take to be known to every service (default 30 s). */
  timeoutMs?: number;
}

const isCode = (err: unknown, code: status) => (err as { code?: number } | null)?.code === code;

/** Registers the caller's namespace when missing, and waits until it answers. */
export async function ensureNamespace(connection: Connection, namespace: string, timeoutMs = 30_000): Promise<void> {
  try {
    await connection.workflowService.describeNamespace({ namespace });
    return;
  } catch (err) {
    if (!isCode(err, status.NOT_FOUND)) throw err;
  }
  try {
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('3 days') });
  } catch (err) {
    if (!isCode(err, status.ALREADY_EXISTS)) throw err;
  }
  // A new namespace reaches each service's namespace cache within its refresh interval: wait until
  // a call that needs it past the frontend (matching: describeTaskQueue) answers.
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await connection.workflowService.describeNamespace({ namespace });
      await connection.workflowService.describeTaskQueue({ namespace, taskQueue: { name: 'nexus-setup-probe' } });
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`namespace ${namespace} was registered but did not answer within ${timeoutMs} ms: ${(err as Error).message}`, { cause: err });
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** Creates the endpoint, or points an existing one of that name at the target. */
export async function ensureEndpoint(connection: Connection, name: string, targetNamespace: string, targetTaskQueue: string): Promise<void> {
  const spec = { name, target: { worker: { namespace: targetNamespace, taskQueue: targetTaskQueue } } };
  const { endpoints } = await connection.operatorService.listNexusEndpoints({ name });
  const existing = endpoints?.find((e) => e.spec?.name === name);
  if (!existing) {
    await connection.operatorService.createNexusEndpoint({ spec });
    return;
  }
  const worker = existing.spec?.target?.worker;
  if (worker?.namespace === targetNamespace && worker.taskQueue === targetTaskQueue) return;
  await connection.operatorService.updateNexusEndpoint({ id: existing.id, version: existing.version, spec });
}

export async function deleteEndpoint(connection: Connection, name: string): Promise<void> {
  const { endpoints } = await connection.operatorService.listNexusEndpoints({ name });
  for (const e of endpoints ?? []) if (e.spec?.name === name) await connection.operatorService.deleteNexusEndpoint({ id: e.id, version: e.version });
}

/** The caller's namespace and the endpoint; returns what was set up, for the start-up log. */
export async function ensureNexusSetup(connection: Connection, o: NexusSetup): Promise<{ callerNamespace: string; endpoint: string }> {
  const callerNamespace = o.callerNamespace ?? ORDERS_NAMESPACE;
  const endpoint = o.endpoint ?? DELIVERIES_ENDPOINT;
  await ensureNamespace(connection, callerNamespace, o.timeoutMs);
  await ensureEndpoint(connection, endpoint, o.targetNamespace, o.targetTaskQueue);
  return { callerNamespace, endpoint };
}

/**
 * `npm start` and `npm run cluster`: the `orders` namespace and the endpoint `deliveries` on the
 * local Temporal, routed to the worker's task queue (DELIVERY_TASK_QUEUE, as the worker reads it),
 * so examples/nexus-order-system runs at once. With DELIVERY_NEXUS_ENDPOINTS_FILE, each endpoint
 * the file lists instead, and its caller namespace (nexus/endpoint-accounts.ts): `deliveries`
 * is not made, as it would serve no account.
 */
export async function setUpLocalNexus(address: string, targetNamespace: string, log: (line: string) => void): Promise<void> {
  const targetTaskQueue = parseEnv(z.object({ DELIVERY_TASK_QUEUE: z.string().min(1).default(DEFAULT_TASK_QUEUE) }), process.env, 'task queue').DELIVERY_TASK_QUEUE;
  const listed = nexusEndpointsFromEnv(process.env)?.list();
  const setups = listed ? listed.map((e) => ({ callerNamespace: e.callerNamespace, endpoint: e.name, accounts: [...e.accounts] })) : [{ callerNamespace: undefined, endpoint: undefined, accounts: undefined }];
  const connection = await connectClient({ address });
  try {
    for (const s of setups) {
      const { callerNamespace, endpoint } = await ensureNexusSetup(connection, { ...s, targetNamespace, targetTaskQueue });
      log(`Nexus endpoint ${endpoint} → namespace ${targetNamespace}, task queue ${targetTaskQueue}; order systems' namespace ${callerNamespace}${s.accounts ? `; accounts ${s.accounts.join(', ')}` : ''}`);
    }
  } finally {
    await connection.close();
  }
}
