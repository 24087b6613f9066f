/**
 * The whole system for an end-to-end test, every part real: the simulator and the bridge on
 * 127.0.0.1, delivery workers with real activities talking HTTP to the simulator, and the shared
 * Temporal dev server. Each call gets its own task queue, ports and webhook secret.
 */
import type { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { createProviderActivities } from '../../activities/provider-activities';
import { createBridge, WEBHOOK_PATH, type Bridge } from '../../bridge/server';
import { DeliveryClient } from '../../client/delivery-client';
import { ProviderClient } from '../../provider/client';
import type { DeliveryOrder, DeliveryState } from '../../contract/delivery-types';
import { generateWebhookSecret } from '../../provider/webhook-signature';
import { createSimulator, type Simulator, type SimulatorOptions } from '../../simulator/server';
import type { PacingSettings } from '../../worker/pacing-config';
import type { NotifyConfig } from '../../notifications/config';
import { testClient } from './temporal';
import { startWorkers, type RunningWorkers, type StartWorkersOptions } from './workers';

export const SANDBOX_KEY = 'sandbox-key';

export interface Stack {
  sim: Simulator;
  simUrl: string;
  bridge: Bridge;
  /** The webhook listener. */
  bridgeUrl: string;
  /** The bridge's admin listener (recent webhooks, metrics). */
  bridgeAdminUrl: string;
  webhookSecret: string;
  workers: RunningWorkers;
  temporal: Client;
  deliveries: DeliveryClient;
  /** Environment for a CLI child process that talks to this stack. */
  cliEnv: NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

export async function startStack(
  o: {
    workerApiKey?: string;
    simulator?: SimulatorOptions;
    bridgeLog?: (e: Record<string, unknown>) => void;
    dataConverter?: DataConverter;
    temporalAddress?: string;
    /** Pacing of the stack's workers (default: the gate, limits no test waits on). */
    pacing?: Partial<PacingSettings>;
    /** Notification endpoints of the stack's workers. */
    notify?: NotifyConfig;
    /** The workers' version and bundle (versioned workers; default: unversioned, the product's bundle), their metrics. */
    workers?: Pick<StartWorkersOptions, 'deployment' | 'workflowBundle' | 'metrics'>;
  } = {},
): Promise<Stack> {
  const sim = createSimulator({ onError: (m) => console.error(`simulator: ${m}`), ...o.simulator });
  const { url: simUrl } = await sim.listen(0, '127.0.0.1');

  const { client: temporal, connection } = await testClient(o.dataConverter, o.temporalAddress);
  const workerProvider = new ProviderClient({ baseUrl: simUrl, apiKey: o.workerApiKey ?? SANDBOX_KEY, timeoutMs: 5_000 });
  const workers = await startWorkers(createProviderActivities(workerProvider), { prefix: 'e2e', dataConverter: o.dataConverter, address: o.temporalAddress, pacing: o.pacing, notify: o.notify, ...o.workers });

  const webhookSecret = generateWebhookSecret();
  const bridgeProvider = new ProviderClient({ baseUrl: simUrl, apiKey: SANDBOX_KEY, timeoutMs: 5_000 });
  const bridge = createBridge({ temporal, provider: bridgeProvider, secrets: [webhookSecret], retryAfterSeconds: 1, log: o.bridgeLog ?? (() => undefined) });
  const bridgeUrl = await bridge.listen(0, '127.0.0.1');
  const bridgeAdminUrl = await bridge.listenAdmin(0, '127.0.0.1');
  sim.setWebhookEndpoint({ url: bridgeUrl + WEBHOOK_PATH, secret: webhookSecret });

  // No grace after the end (tests wait for results; the grace has tests of its own).
  const deliveries = new DeliveryClient({ temporal, taskQueue: workers.taskQueue, provider: new ProviderClient({ baseUrl: simUrl, apiKey: SANDBOX_KEY }), followUp: { endGraceMs: 0 } });
  return {
    sim,
    simUrl,
    bridge,
    bridgeUrl,
    bridgeAdminUrl,
    webhookSecret,
    workers,
    temporal,
    deliveries,
    cliEnv: {
      ...process.env,
      TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
      TEMPORAL_NAMESPACE: process.env.TEMPORAL_NAMESPACE,
      DELIVERY_TASK_QUEUE: workers.taskQueue,
      DELIVERY_API_URL: simUrl,
      DELIVERY_API_KEY: SANDBOX_KEY,
    },
    async stop() {
      await workers.stop();
      await bridge.close();
      await sim.close();
      await deliveries.close();
      await Promise.all([workerProvider.close(), bridgeProvider.close()]);
      await (connection as Connection).close();
    },
  };
}

/** Moves a delivery along the happy path at the simulator, one step at a time, until it ends. */
export function driveToDelivered(sim: Simulator, deliveryId: string): void {
  for (let i = 0; i < 50; i++) {
    const record = sim.advance(deliveryId);
    if (record.status === 'DELIVERED') return;
  }
  throw new Error(`delivery ${deliveryId} did not reach DELIVERED`);
}

/**
 * Waits for a condition, never for a time. The default deadline is long because on a loaded
 * 2-core machine one workflow task was seen to take 19 s; it only matters when the test fails.
 */
export async function eventually<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The provider's records of these references, once it has created every one of them. */
export function allCreated(stack: Stack, references: readonly string[], timeoutMs = 30_000) {
  return eventually(
    `${references.length} deliveries to be created`,
    () => {
      const mine = stack.sim.deliveries().filter((d) => references.includes(d.delivery.reference_number ?? ''));
      return mine.length >= references.length ? mine : undefined;
    },
    timeoutMs,
  );
}

/** Waits until the delivery's workflow has created it at the provider and follows it. */
export async function createdDelivery(stack: Stack, reference: string): Promise<DeliveryState> {
  return eventually(`delivery ${reference} to be created`, async () => {
    const s = await stack.deliveries.getStatus(reference);
    return s.phase === 'following' ? s : undefined;
  });
}

/**
 * Starts a delivery, lets the simulator run it to DELIVERED (webhooks reach the workflow through
 * the bridge) and waits for the workflow to end. Returns the state as it was once created.
 */
export async function deliverToTheEnd(stack: Stack, reference: string, order: DeliveryOrder): Promise<DeliveryState> {
  await stack.deliveries.startDelivery(order, { reference });
  const created = await createdDelivery(stack, reference);
  driveToDelivered(stack.sim, created.deliveryId!);
  await stack.deliveries.result(reference);
  return created;
}
