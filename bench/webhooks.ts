/** npm run bench -- webhooks: docs/benchmarks.md, "Webhooks"; why the figures are so: docs/benchmark-methods.md. */
import type { Client } from '@temporalio/client';
import { Agent, request } from 'undici';
import { DeliveryClient } from '../client/delivery-client';
import { statusQuery } from '../contract/delivery-messages';
import { deliveryWorkflowId } from '../contract/workflow-ids';
import { signWebhook } from '../provider/webhook-signature';
import type { Simulator } from '../simulator/server';
import { deliveryRequest } from '../test/fixtures/orders';
import { benchSettings, cpuMeter, median, openLoop, p50p99, pool, progressLog, serial, waitFor, type BenchmarkOutput } from './measure';
import { startRawSignals, type RawTarget } from './raw-signals';
import { webhooksCharts } from './run-charts';
import { UNPACED_WORKER_ENV, withBenchStack } from './temporal';

const settings = benchSettings('WEBHOOKS', 1);
const DELIVERIES = settings.num('DELIVERIES', 100);
const EVENTS_PER_DELIVERY = settings.num('EVENTS', 10);
const CONCURRENCY = settings.num('CONCURRENCY', 32);
const ROUNDS = settings.num('ROUNDS', 5);
const LATENCY_SECONDS = settings.num('LATENCY_SECONDS', 5);
const SERIAL = settings.num('SERIAL', 200);
const RECONCILE_DELIVERIES = settings.num('RECONCILE', 10);
const RECONCILE_QUIET_MS = 5_000;
const TASK_QUEUE = 'bench-webhooks';
type Part = 'temporal' | 'worker' | 'bridge' | 'raw_script' | 'bench';

const progress = progressLog('webhooks');

export async function webhooksBenchmark(): Promise<BenchmarkOutput> {
  return withBenchStack(progress, 15 * 60_000, {}, async (stack) => {
    progress('bundling the workflows once, then starting the worker, the bridge and the raw-signal script...');
    // Creation pace is not what this benchmark measures. This process's own client starts the deliveries, queries them; idle while load runs.
    const { sim, url, worker, bridge, temporal, deliveries } = await stack.deliveryStack(TASK_QUEUE, UNPACED_WORKER_ENV, {}, { webhooks: false });
    const { url: webhookUrl, secret } = bridge;
    const raw = await startRawSignals(stack.processes, stack.env(url));
    stack.cleanup.add(() => raw.service.removeLog());
    const agent = new Agent({ connections: 256 });
    stack.cleanup.add(() => agent.close());
    progress(`starting ${DELIVERIES} delivery workflows (quote and creation at the simulator)...`);
    const followed: RawTarget[] = [];
    await pool(Array.from({ length: DELIVERIES }, (_, i) => `BENCH-${i}`), 16, async (reference, i) => void (followed[i] = await startFollowing(deliveries, reference, 1)));

    let seq = 0;
    /** A stale status (the one the delivery has): a real signal, but no state change and no activity. Signed as the provider signs. */
    const webhook = (f: RawTarget) => {
      const id = `evt_bench${++seq}`;
      const body = JSON.stringify({ id, type: 'delivery.status_changed', created_at: new Date().toISOString(), data: { delivery_id: f.deliveryId, status: 'CREATED' } });
      return { body, headers: { 'content-type': 'application/json', ...signWebhook(secret, id, Math.floor(Date.now() / 1000), body) } };
    };
    const post = async (w: ReturnType<typeof webhook>) => {
      const res = await request(webhookUrl, { method: 'POST', body: w.body, headers: w.headers, dispatcher: agent });
      const answer = (await res.body.json()) as { outcome?: string };
      if (res.statusCode !== 200 || answer.outcome !== 'accepted') throw new Error(`bridge answered ${res.statusCode} ${JSON.stringify(answer)}`);
    };
    // Both sides get the same targets in the same order: a round sends each delivery's events one after another, the latency phases go round the deliveries.
    const batch = followed.flatMap((f) => Array<RawTarget>(EVENTS_PER_DELIVERY).fill(f));
    const cycle = (count: number) => Array.from({ length: count }, (_, i) => followed[i % followed.length]!);

    // Signed before the clock (and the CPU count) starts: the provider signs, not us.
    const viaBridge = (signed = batch.map(webhook)) => pool(signed, CONCURRENCY, post);
    const viaRaw = () => raw.run<number>({ op: 'throughput', targets: batch, concurrency: CONCURRENCY });
    progress('one untimed round of each (reference cache, connections, JIT, server caches)...');
    await viaBridge();
    await viaRaw();

    const pids: Record<Part, number | undefined> = { temporal: stack.server.process?.pid, worker: worker.pid, bridge: bridge.process.pid, raw_script: raw.service.pid, bench: process.pid };
    const cpu = { bridge_rounds: cpuMeter(pids), raw_rounds: cpuMeter(pids), ack_phase: cpuMeter(pids), propagation_phase: cpuMeter(pids) };
    const [bridgeRates, rawRates]: [number[], number[]] = [[], []];
    for (let round = 1; round <= ROUNDS; round++) {
      const signed = batch.map(webhook);
      const bridgeRound = async () => bridgeRates.push(await cpu.bridge_rounds.span(() => viaBridge(signed)));
      const rawRound = async () => rawRates.push(await cpu.raw_rounds.span(viaRaw));
      // Alternate which goes first, so a drift of the machine does not favour one side.
      for (const one of round % 2 ? [bridgeRound, rawRound] : [rawRound, bridgeRound]) await one();
      progress(`round ${round}/${ROUNDS}: bridge ${Math.round(bridgeRates.at(-1)!)}/s, raw signals ${Math.round(rawRates.at(-1)!)}/s`);
    }

    const rate = Math.max(1, Math.floor(median(bridgeRates) / 2));
    const count = Math.min(5_000, rate * LATENCY_SECONDS);
    progress(`acknowledgement latency: ${count} webhooks at a fixed ${rate}/s (half the bridge's rate), and as many raw signals at that rate, twice each...`);
    const ack = { bridge: [] as number[], raw: [] as number[] };
    await cpu.ack_phase.span(async () => {
      // Bridge, raw, raw, bridge: a change of the machine's load in between favours neither side.
      for (const side of ['bridge', 'raw', 'raw', 'bridge'] as const) {
        const targets = cycle(count);
        ack[side].push(...(side === 'bridge' ? await openLoop(targets.map(webhook), rate, post) : await raw.run<number[]>({ op: 'open-loop', targets, perSecond: rate })));
      }
    });
    progress(`one at a time (no load), ${SERIAL} raw signals and ${SERIAL} webhooks...`);
    const rawIdle = await raw.run<number[]>({ op: 'serial', targets: cycle(SERIAL) });
    const bridgeIdle = await serial(cycle(SERIAL).map(webhook), post);

    progress(`propagation: advancing ${followed.length} deliveries two steps each at the simulator, one at a time...`);
    sim.setWebhookEndpoint({ url: webhookUrl, secret });
    const propagation = await cpu.propagation_phase.span(() => propagationLatencies(followed, sim, temporal));
    const reconciliationMs = await reconciliationMaxMs(deliveries, sim);

    const [bridgeRate, rawRate] = [median(bridgeRates), median(rawRates)];
    const events = ROUNDS * DELIVERIES * EVENTS_PER_DELIVERY;
    // Each set of acknowledgement latencies: its figures' name, its label in the chart.
    const sets = { ack: [`bridge at ${rate}/s`, ack.bridge], raw_signal_at_same_rate: [`raw signals at ${rate}/s`, ack.raw], bridge_unloaded: ['bridge, one at a time', bridgeIdle], raw_signal_unloaded: ['raw signals, one at a time', rawIdle] } as const;
    const perEvent = (side: 'bridge_rounds' | 'raw_rounds', parts: Part[]) => Object.fromEntries(parts.map((p) => [`${side}_cpu_ms_per_event_${p}`, Number(((cpu[side].seconds[p] * 1000) / events).toFixed(3))]));
    const figures = {
      bridge_webhooks_per_second: Math.round(bridgeRate),
      raw_signals_per_second: Math.round(rawRate),
      bridge_to_raw_ratio: Number((bridgeRate / rawRate).toFixed(3)),
      // Each bridge round against the raw round next to it: less exposed to a burst of outside load.
      bridge_to_raw_ratio_median_of_rounds: Number(median(bridgeRates.map((b, i) => b / rawRates[i]!)).toFixed(3)),
      // With all cores busy, throughput goes as one over the CPU per event of every process on the path.
      bridge_to_raw_ratio_from_cpu: Number((cpu.raw_rounds.ours() / cpu.bridge_rounds.ours()).toFixed(3)),
      ...perEvent('bridge_rounds', ['temporal', 'worker', 'bridge', 'bench']),
      ...perEvent('raw_rounds', ['temporal', 'worker', 'raw_script', 'bench']),
      ...Object.fromEntries(Object.entries(cpu).map(([phase, meter]) => [`${phase}_other_processes_cpu_pct`, meter.otherPct()])),
      ack_rate_per_second: rate,
      ack_requests: ack.bridge.length,
      ...Object.assign({}, ...Object.entries(sets).map(([name, [, ms]]) => p50p99(name, ms))),
      propagation_samples: propagation.length,
      ...p50p99('propagation', propagation),
      reconciliation_max_over_interval: Number((reconciliationMs / RECONCILE_QUIET_MS).toFixed(3)),
    };
    return { figures, charts: webhooksCharts(Object.values(sets).map(([label, latencies]) => ({ label, latencies }))) };
  });
}

/** Starts a delivery and waits until it follows its delivery at the provider. */
async function startFollowing(deliveries: DeliveryClient, reference: string, destinations: number, followUp?: { quietMs: number; jitter: number }): Promise<RawTarget> {
  await deliveries.startDelivery(deliveryRequest({}, destinations), { reference, followUp });
  const { deliveryId } = await waitFor(`delivery ${reference} created`, 120_000, 50, async () => {
    const s = await deliveries.getStatus(reference);
    return s.phase === 'following' && s.deliveryId ? { deliveryId: s.deliveryId } : undefined;
  });
  return { workflowId: deliveryWorkflowId(reference), deliveryId };
}

/** From the simulator's advance() (which sends the webhook) until the workflow's `status` query shows the new status, one delivery at a time. */
async function propagationLatencies(followed: RawTarget[], sim: Simulator, temporal: Client): Promise<number[]> {
  const latencies: number[] = [];
  // Two steps each: every delivery once, then every delivery again.
  for (const f of [...followed, ...followed]) {
    const t0 = performance.now();
    const status = sim.advance(f.deliveryId).status;
    const handle = temporal.workflow.getHandle(f.workflowId);
    while ((await handle.query(statusQuery)).status !== status) {
      if (performance.now() - t0 > 10_000) throw new Error(`${f.workflowId} did not show ${status} within 10 s`);
    }
    latencies.push(performance.now() - t0);
  }
  return latencies;
}

/** Deliveries run to DELIVERED at the simulator, every webhook dropped: the longest wait until the workflow shows it (one quiet interval at most). */
async function reconciliationMaxMs(deliveries: DeliveryClient, sim: Simulator): Promise<number> {
  progress(`reconciliation: ${RECONCILE_DELIVERIES} deliveries with every webhook dropped, quiet interval ${RECONCILE_QUIET_MS} ms...`);
  sim.setFaults({ webhook_drop_rate: 1 });
  const times = await Promise.all(Array.from({ length: RECONCILE_DELIVERIES }, async (_, i) => {
    const reference = `RECON-${i}`;
    const { deliveryId } = await startFollowing(deliveries, reference, 2, { quietMs: RECONCILE_QUIET_MS, jitter: 0.2 });
    for (let step = 0; step < 20 && sim.advance(deliveryId).status !== 'DELIVERED'; step++);
    const t0 = performance.now();
    await waitFor(`${reference} reconciled`, 4 * RECONCILE_QUIET_MS, 20, async () => (await deliveries.getStatus(reference)).status === 'DELIVERED');
    return performance.now() - t0;
  }));
  return Math.max(...times);
}
