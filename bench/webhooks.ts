/**
 * The webhook bridge against the best it could do: everything real on 127.0.0.1 (its own
 * Temporal dev server, delivery workers with real activities, the simulator with its rate limits
 * raised, the bridge), bounded in count and time.
 *
 * 1. Throughput: N deliveries × E signed webhooks through the bridge (2xx = signal delivered) at
 *    concurrency C, against the same signals sent with `getHandle(id).signal()` from a plain
 *    client at the same concurrency. Rounds alternate; medians are compared.
 * 2. Acknowledgement latency at half the bridge's measured rate, open loop (fixed arrival
 *    times; latency counts from the scheduled time, so queueing shows).
 * 3. Propagation: from the simulator's advance() (which emits the webhook) to the workflow's
 *    `status` query showing the new status, one delivery at a time.
 */
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { Agent, request } from 'undici';
import { createProviderActivities } from '../activities/provider-activities';
import { createBridge, WEBHOOK_PATH } from '../bridge/server';
import { DeliveryClient } from '../client/delivery-client';
import { ProviderClient } from '../provider/client';
import { generateWebhookSecret, signWebhook } from '../provider/webhook-signature';
import { ensureTemporalCli } from '../scripts/temporal-cli';
import { startDevServer } from '../scripts/temporal-dev-server';
import { createSimulator } from '../simulator/server';
import { deliveryRequest } from '../test/fixtures/orders';
import type { CallFamily, RateLimit } from '../provider/limits';
import { createDeliveryWorkers } from '../worker/worker';
import { statusChangedSignal, statusQuery, type StatusChange } from '../workflows/messages';
import { deliveryWorkflowId } from '../workflows/task-queues';

const DELIVERIES = 100;
const EVENTS_PER_DELIVERY = 10;
const CONCURRENCY = 32;
const ROUNDS = 5;
const LATENCY_SECONDS = 5;
const TIME_LIMIT_MS = 10 * 60_000;
/** The workers' task-queue rates follow the simulator's raised limits, not the provider's real ones. */
const WORKER_LIMITS: Record<CallFamily, RateLimit> = {
  creations: { limit: 100_000, windowMs: 1_000 },
  quotes: { limit: 100_000, windowMs: 1_000 },
  other: { limit: 100_000, windowMs: 1_000 },
};

const progress = (line: string) => process.stderr.write(`[webhooks] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: number[], p: number): number {
  return Number(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!.toFixed(2));
}

async function pool<T>(items: T[], concurrency: number, one: (item: T) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await one(items[next++]!);
    }),
  );
  return items.length / ((performance.now() - started) / 1000);
}

interface Followed {
  reference: string;
  workflowId: string;
  deliveryId: string;
}

export async function webhooksBenchmark(): Promise<Record<string, number | string>> {
  const watchdog = setTimeout(() => {
    progress(`time limit of ${TIME_LIMIT_MS / 60_000} min reached; stopping`);
    process.exit(1);
  }, TIME_LIMIT_MS);
  watchdog.unref();

  // The worker's INFO lines would drown the figures; warnings and errors still show.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const cli = await ensureTemporalCli(progress);
  progress('starting a Temporal dev server...');
  const server = await startDevServer({ cli, namespace: 'default' });
  const cleanup: (() => Promise<unknown>)[] = [() => server.stop()];
  try {
    const unlimited = { limit: 1_000_000 };
    const sim = createSimulator({ rateLimits: { creations: unlimited, quotes: unlimited, other: unlimited }, onError: (m) => progress(`simulator: ${m}`) });
    const { url: simUrl } = await sim.listen(0, '127.0.0.1');
    cleanup.unshift(() => sim.close());

    const native = await NativeConnection.connect({ address: server.address });
    const limiterConnection = await Connection.connect({ address: server.address });
    cleanup.unshift(() => limiterConnection.close());
    const workerProvider = new ProviderClient({ baseUrl: simUrl, apiKey: 'sandbox-key', connections: 64 });
    const taskQueue = 'bench-webhooks';
    const workers = await createDeliveryWorkers({
      connection: native,
      namespace: server.namespace,
      taskQueue,
      activities: createProviderActivities(workerProvider),
      client: new Client({ connection: limiterConnection, namespace: server.namespace }),
      // Creation pace is not what this benchmark measures: the engine's queue limit, set high.
      dispatch: { limiter: 'task-queue', limits: WORKER_LIMITS },
    });
    const running = workers.run();
    cleanup.unshift(async () => {
      workers.shutdown();
      await running;
      await native.close();
      await workerProvider.close();
    });

    const connection = await Connection.connect({ address: server.address });
    const temporal = new Client({ connection, namespace: server.namespace });
    const secret = generateWebhookSecret();
    const bridgeProvider = new ProviderClient({ baseUrl: simUrl, apiKey: 'sandbox-key' });
    const bridge = createBridge({ temporal, provider: bridgeProvider, secrets: [secret], log: () => undefined });
    const bridgeUrl = await bridge.listen(0, '127.0.0.1');
    cleanup.unshift(async () => {
      await bridge.close();
      await bridgeProvider.close();
      await connection.close();
    });
    // A separate connection for the raw signals: the "plain script", sharing nothing with the bridge.
    const rawConnection = await Connection.connect({ address: server.address });
    const raw = new Client({ connection: rawConnection, namespace: server.namespace });
    cleanup.unshift(() => rawConnection.close());
    const agent = new Agent({ connections: 256 });
    cleanup.unshift(() => agent.close());

    const followed = await startDeliveries(new DeliveryClient({ temporal, taskQueue }), sim);

    let seq = 0;
    /** A stale status (the one the delivery has): a real signal, but no state change and no activity. */
    const change = (f: Followed): StatusChange => ({ deliveryId: f.deliveryId, status: 'CREATED', eventId: `evt_bench${++seq}`, occurredAt: new Date().toISOString(), source: 'webhook' });
    const webhook = (f: Followed) => {
      const id = `evt_bench${++seq}`;
      const body = JSON.stringify({ id, type: 'delivery.status_changed', created_at: new Date().toISOString(), data: { delivery_id: f.deliveryId, status: 'CREATED' } });
      return { body, headers: { 'content-type': 'application/json', ...signWebhook(secret, id, Math.floor(Date.now() / 1000), body) } };
    };
    const postWebhook = async (w: { body: string; headers: Record<string, string> }) => {
      const res = await request(bridgeUrl + WEBHOOK_PATH, { method: 'POST', body: w.body, headers: w.headers, dispatcher: agent });
      const answer = (await res.body.json()) as { outcome?: string };
      if (res.statusCode !== 200 || answer.outcome !== 'accepted') throw new Error(`bridge answered ${res.statusCode} ${JSON.stringify(answer)}`);
    };
    const batch = () => followed.flatMap((f) => Array.from({ length: EVENTS_PER_DELIVERY }, () => f));

    progress('warming up (one webhook and one raw signal per delivery: fills the reference cache and the connections)...');
    await pool(followed, CONCURRENCY, (f) => postWebhook(webhook(f)));
    await pool(followed, CONCURRENCY, (f) => raw.workflow.getHandle(f.workflowId).signal(statusChangedSignal, change(f)));

    const viaBridge = () => pool(batch().map(webhook), CONCURRENCY, postWebhook); // signed before timing: the provider signs, not us
    const viaRaw = () => {
      const changes = batch().map((f) => ({ f, c: change(f) }));
      return pool(changes, CONCURRENCY, ({ f, c }) => raw.workflow.getHandle(f.workflowId).signal(statusChangedSignal, c));
    };
    progress('one untimed round of each (JIT, server caches)...');
    await viaBridge();
    await viaRaw();
    const bridgeRates: number[] = [];
    const rawRates: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // Alternate which goes first, so a drift of the machine does not favour one side.
      if (round % 2) {
        bridgeRates.push(await viaBridge());
        rawRates.push(await viaRaw());
      } else {
        rawRates.push(await viaRaw());
        bridgeRates.push(await viaBridge());
      }
      progress(`round ${round}/${ROUNDS}: bridge ${Math.round(bridgeRates.at(-1)!)}/s, raw signals ${Math.round(rawRates.at(-1)!)}/s`);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const bridgeRate = median(bridgeRates);
    const rawRate = median(rawRates);

    const rate = Math.max(1, Math.floor(bridgeRate / 2));
    const count = Math.min(5_000, rate * LATENCY_SECONDS);
    progress(`acknowledgement latency: ${count} webhooks at a fixed ${rate}/s (half the measured maximum)...`);
    const ack = await openLoop(count, rate, followed, (f) => postWebhook(webhook(f)));
    progress(`the same for raw signals, to see what of it is Temporal's own signal latency...`);
    const rawAck = await openLoop(count, rate, followed, (f) => raw.workflow.getHandle(f.workflowId).signal(statusChangedSignal, change(f)));
    progress('one raw signal at a time (no load), 200 times...');
    const idle: number[] = [];
    for (let i = 0; i < 200; i++) {
      const f = followed[i % followed.length]!;
      const t0 = performance.now();
      await raw.workflow.getHandle(f.workflowId).signal(statusChangedSignal, change(f));
      idle.push(performance.now() - t0);
    }
    idle.sort((a, b) => a - b);

    progress(`propagation: advancing ${followed.length} deliveries two steps each at the simulator, one at a time...`);
    sim.setWebhookEndpoint({ url: bridgeUrl + WEBHOOK_PATH, secret });
    const propagation = await propagationLatencies(followed, sim, temporal);

    const reconciliation = await reconciliationTimes(new DeliveryClient({ temporal, taskQueue }), sim);

    return {
      deliveries: DELIVERIES,
      events_per_delivery: EVENTS_PER_DELIVERY,
      concurrency: CONCURRENCY,
      rounds: ROUNDS,
      bridge_webhooks_per_second: Math.round(bridgeRate),
      raw_signals_per_second: Math.round(rawRate),
      bridge_to_raw_ratio: Number((bridgeRate / rawRate).toFixed(3)),
      ack_rate_per_second: rate,
      ack_requests: count,
      ack_p50_ms: ack.p50,
      ack_p99_ms: ack.p99,
      ack_max_ms: ack.max,
      raw_signal_at_same_rate_p50_ms: rawAck.p50,
      raw_signal_at_same_rate_p99_ms: rawAck.p99,
      raw_signal_unloaded_p50_ms: percentile(idle, 0.5),
      raw_signal_unloaded_p99_ms: percentile(idle, 0.99),
      propagation_samples: propagation.samples,
      propagation_p50_ms: propagation.p50,
      propagation_p99_ms: propagation.p99,
      propagation_max_ms: propagation.max,
      propagation_webhook_ack_p50_ms: propagation.ackP50,
      propagation_webhook_ack_p99_ms: propagation.ackP99,
      reconciliation_deliveries: RECONCILE_DELIVERIES,
      reconciliation_quiet_ms: RECONCILE_QUIET_MS,
      reconciliation_correct_p50_ms: reconciliation.p50,
      reconciliation_correct_max_ms: reconciliation.max,
      reconciliation_max_over_interval: Number((reconciliation.max / RECONCILE_QUIET_MS).toFixed(3)),
    };
  } finally {
    for (const step of cleanup) await step().catch((e: Error) => progress(`cleanup: ${e.message}`));
    clearTimeout(watchdog);
  }
}

/** Starts the deliveries through their workflows and waits until each follows its delivery. */
async function startDeliveries(deliveries: DeliveryClient, sim: ReturnType<typeof createSimulator>): Promise<Followed[]> {
  progress(`starting ${DELIVERIES} delivery workflows (quote and creation at the simulator)...`);
  const run = `${Date.now().toString(36)}`;
  const references = Array.from({ length: DELIVERIES }, (_, i) => `BENCH-${run}-${i}`);
  const { reference_number: _r, ...order } = deliveryRequest({}, 1);
  await pool(references, 16, async (reference) => void (await deliveries.startDelivery(order, { reference })));
  const deadline = Date.now() + 120_000;
  const out: Followed[] = [];
  for (const reference of references) {
    for (;;) {
      const s = await deliveries.getStatus(reference);
      if (s.phase === 'following' && s.deliveryId) {
        out.push({ reference, workflowId: deliveryWorkflowId(reference), deliveryId: s.deliveryId });
        break;
      }
      if (Date.now() > deadline) throw new Error(`delivery ${reference} was not created in time (phase ${s.phase})`);
      await sleep(50);
    }
  }
  if (sim.deliveries().length < DELIVERIES) throw new Error('the simulator holds fewer deliveries than started');
  return out;
}

async function openLoop<T>(count: number, perSecond: number, targets: T[], send: (t: T) => Promise<void>): Promise<{ p50: number; p99: number; max: number }> {
  const latencies: number[] = [];
  const inFlight: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < count; ) {
    const now = performance.now();
    while (i < count && started + (i * 1000) / perSecond <= now) {
      const scheduled = started + (i * 1000) / perSecond;
      inFlight.push(send(targets[i % targets.length]!).then(() => void latencies.push(performance.now() - scheduled)));
      i++;
    }
    await sleep(1);
  }
  await Promise.all(inFlight);
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), max: Number(latencies.at(-1)!.toFixed(2)) };
}

const RECONCILE_DELIVERIES = 10;
const RECONCILE_QUIET_MS = 5_000;

/**
 * Deliveries whose webhooks are all dropped: each runs to DELIVERED at the simulator in silence;
 * measured is the time from its last status change until its workflow shows DELIVERED, against
 * the configured quiet interval (the longest it may take is one interval, jitter shortens it).
 */
async function reconciliationTimes(deliveries: DeliveryClient, sim: ReturnType<typeof createSimulator>): Promise<{ p50: number; max: number }> {
  progress(`reconciliation: ${RECONCILE_DELIVERIES} deliveries with every webhook dropped, quiet interval ${RECONCILE_QUIET_MS} ms...`);
  sim.setFaults({ webhook_drop_rate: 1 });
  const { reference_number: _r, ...order } = deliveryRequest({}, 2);
  const references = Array.from({ length: RECONCILE_DELIVERIES }, (_, i) => `RECON-${Date.now().toString(36)}-${i}`);
  const times: number[] = [];
  await Promise.all(
    references.map(async (reference) => {
      await deliveries.startDelivery(order, { reference, followUp: { quietMs: RECONCILE_QUIET_MS, jitter: 0.2 } });
      let s = await deliveries.getStatus(reference);
      while (s.phase !== 'following') {
        await sleep(50);
        s = await deliveries.getStatus(reference);
      }
      for (let i = 0; i < 20 && sim.advance(s.deliveryId!).status !== 'DELIVERED'; i++);
      const t0 = performance.now();
      while ((await deliveries.getStatus(reference)).status !== 'DELIVERED') {
        if (performance.now() - t0 > 4 * RECONCILE_QUIET_MS) throw new Error(`${reference} was not reconciled within ${4 * RECONCILE_QUIET_MS} ms`);
        await sleep(20);
      }
      times.push(performance.now() - t0);
    }),
  );
  sim.setFaults({ webhook_drop_rate: 0 });
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 0.5), max: Number(times.at(-1)!.toFixed(0)) };
}

async function propagationLatencies(followed: Followed[], sim: ReturnType<typeof createSimulator>, temporal: Client) {
  const latencies: number[] = [];
  for (const step of [1, 2]) {
    for (const f of followed) {
      const t0 = performance.now();
      const status = sim.advance(f.deliveryId).status;
      const handle = temporal.workflow.getHandle(f.workflowId);
      for (;;) {
        if ((await handle.query(statusQuery)).status === status) break;
        if (performance.now() - t0 > 10_000) throw new Error(`${f.workflowId} did not show ${status} (step ${step}) within 10 s`);
      }
      latencies.push(performance.now() - t0);
    }
  }
  await sim.webhooksIdle();
  latencies.sort((a, b) => a - b);
  // The sender's own timing of each attempt: the part of the figure until the bridge's 200.
  const acks = sim
    .webhookAttempts()
    .map((a) => a.duration_ms)
    .sort((a, b) => a - b);
  return { samples: latencies.length, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), max: Number(latencies.at(-1)!.toFixed(2)), ackP50: percentile(acks, 0.5), ackP99: percentile(acks, 0.99) };
}
