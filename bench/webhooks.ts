/**
 * The webhook bridge against the best it could do, everything real on 127.0.0.1 and each part
 * in a process of its own, as in production:
 *
 *   - Temporal: its own dev server (in memory);
 *   - the delivery worker: `worker/main.ts` with real activities (task-queue limiter, limits raised);
 *   - the bridge: `bridge/main.ts`, configured through its environment;
 *   - the raw-signal baseline: `bench/raw-signals.ts`, a plain script with one Temporal client;
 *   - this process: the load generator (undici, signing the webhooks) and the simulator (rate
 *     limits raised; it is idle while throughput and latency are measured).
 *
 * 1. Throughput: N deliveries × E signed webhooks through the bridge (2xx = signal delivered) at
 *    concurrency C, against the same signals sent with `getHandle(id).signal()` by the raw-signal
 *    script at the same concurrency. Rounds alternate; medians are compared. The CPU each process
 *    spends per event is recorded for both sides, so it shows where the time goes.
 * 2. Acknowledgement latency at half the bridge's measured rate, open loop (fixed arrival
 *    times; latency counts from the scheduled time, so queueing shows), and raw signals from the
 *    raw-signal script at the same fixed rate: what Temporal itself gives at that load. Two
 *    segments each, in the order bridge, raw, raw, bridge. Then both one at a time, unloaded.
 * 3. Propagation: from the simulator's advance() (which emits the webhook) to the workflow's
 *    `status` query showing the new status, one delivery at a time.
 * 4. Reconciliation: deliveries whose webhooks are all lost are corrected within their quiet interval.
 *
 * Counts can be lowered for a smoke run (BENCH_WEBHOOKS_DELIVERIES, _EVENTS, _CONCURRENCY,
 * _ROUNDS, _LATENCY_SECONDS, _SERIAL, _RECONCILE); the figures name every override. Extra node
 * flags for the bridge (e.g. --cpu-prof) go in BENCH_WEBHOOKS_BRIDGE_NODE_ARGS, extra bridge
 * environment in BENCH_WEBHOOKS_BRIDGE_ENV (`NAME=value,NAME=value`).
 */
import { rmSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { Agent, request } from 'undici';
import { WEBHOOK_PATH } from '../bridge/server';
import { DeliveryClient } from '../client/delivery-client';
import { generateWebhookSecret, signWebhook } from '../provider/webhook-signature';
import { freePort } from '../scripts/temporal-dev-server';
import { startBenchServer } from './temporal';
import { createSimulator } from '../simulator/server';
import { deliveryRequest } from '../test/fixtures/orders';
import { statusQuery } from '../contract/delivery-messages';
import { deliveryWorkflowId } from '../contract/workflow-ids';
import type { RawTarget } from './raw-signals';
import { machineCpuSeconds, openLoop, percentile, pool, processCpuSeconds, serial, sleep, summarize, type Latencies } from './measure';
import { ProcessGroup, workflowBundleFile } from '../scripts/processes';
import { RawSignalsProcess } from './raw-signals-process';
import { webhooksCharts } from './run-charts';

const overrides: string[] = [];
function setting(name: string, fallback: number): number {
  const text = process.env[`BENCH_WEBHOOKS_${name}`];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`BENCH_WEBHOOKS_${name} must be a positive integer`);
  overrides.push(`${name}=${value}`);
  return value;
}

const DELIVERIES = setting('DELIVERIES', 100);
const EVENTS_PER_DELIVERY = setting('EVENTS', 10);
const CONCURRENCY = setting('CONCURRENCY', 32);
const ROUNDS = setting('ROUNDS', 5);
const LATENCY_SECONDS = setting('LATENCY_SECONDS', 5);
const SERIAL = setting('SERIAL', 200);
const RECONCILE_DELIVERIES = setting('RECONCILE', 10);
const RECONCILE_QUIET_MS = 5_000;
const TIME_LIMIT_MS = 15 * 60_000;
/** The worker's task-queue rates follow the simulator's raised limits, not the provider's real ones. */
const WORKER_RATE_LIMITS = 'creations=100000/1s,quotes=100000/1s,other=100000/1s';
const TASK_QUEUE = 'bench-webhooks';

const progress = (line: string) => process.stderr.write(`[webhooks] ${line}\n`);

interface Followed {
  reference: string;
  workflowId: string;
  deliveryId: string;
}

interface Webhook {
  id: string;
  body: string;
  headers: Record<string, string>;
}

type Side = 'bridge' | 'raw';
type Parts = 'temporal' | 'worker' | 'bridge' | 'raw_script' | 'bench';

export async function webhooksBenchmark(): Promise<{ figures: Record<string, number | string>; charts: Record<string, string> }> {
  const { server, watchdog } = await startBenchServer(progress, TIME_LIMIT_MS);
  const cleanup: (() => Promise<unknown> | void)[] = [() => server.stop()];
  try {
    const unlimited = { limit: 1_000_000 };
    const sim = createSimulator({ rateLimits: { creations: unlimited, quotes: unlimited, other: unlimited }, onError: (m) => progress(`simulator: ${m}`) });
    const { url: simUrl } = await sim.listen(0, '127.0.0.1');
    cleanup.unshift(() => sim.close());
    const common = { TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace, DELIVERY_API_URL: simUrl, DELIVERY_API_KEY: 'sandbox-key' };

    progress('bundling the workflows once, then starting the worker process...');
    const bundle = await workflowBundleFile();
    cleanup.unshift(() => rmSync(bundle, { force: true }));
    const worker = await new ProcessGroup().start({ isolated: true, logFile: true,
      name: 'worker',
      entry: 'worker/main.ts',
      ready: /^worker: task queue/m,
      env: {
        ...common,
        DELIVERY_TASK_QUEUE: TASK_QUEUE,
        DELIVERY_API_CONNECTIONS: '64',
        // Creation pace is not what this benchmark measures: the engine's queue limit, set high.
        PROVIDER_PACING: 'task-queue',
        PROVIDER_RATE_LIMITS: WORKER_RATE_LIMITS,
        WORKER_WORKFLOW_BUNDLE: bundle,
        LOG_LEVEL: 'WARN',
      },
    });
    cleanup.unshift(async () => {
      await worker.stop();
      worker.removeLog();
    });

    progress('starting the bridge process...');
    const secret = generateWebhookSecret();
    const bridgePort = await freePort();
    const bridgeAdminPort = await freePort();
    const bridgeExtraEnv = Object.fromEntries(
      (process.env.BENCH_WEBHOOKS_BRIDGE_ENV ?? '')
        .split(',')
        .filter(Boolean)
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
    if (Object.keys(bridgeExtraEnv).length) overrides.push(`BRIDGE_ENV=${process.env.BENCH_WEBHOOKS_BRIDGE_ENV}`);
    const bridgeNodeArgs = (process.env.BENCH_WEBHOOKS_BRIDGE_NODE_ARGS ?? '').split(' ').filter(Boolean);
    if (bridgeNodeArgs.length) overrides.push(`BRIDGE_NODE_ARGS=${bridgeNodeArgs.join(' ')}`);
    const bridge = await new ProcessGroup().start({ isolated: true, logFile: true,
      name: 'bridge',
      entry: 'bridge/main.ts',
      ready: /^bridge: listening/m,
      nodeArgs: bridgeNodeArgs,
      env: { ...common, DELIVERY_WEBHOOK_SECRETS: secret, BRIDGE_HOST: '127.0.0.1', BRIDGE_PORT: String(bridgePort), BRIDGE_ADMIN_PORT: String(bridgeAdminPort), ...bridgeExtraEnv },
    });
    const bridgeUrl = `http://127.0.0.1:${bridgePort}`;
    const bridgeAdminUrl = `http://127.0.0.1:${bridgeAdminPort}`;
    cleanup.unshift(async () => {
      await bridge.stop();
      bridge.removeLog();
    });

    progress('starting the raw-signal script process...');
    const raw = await RawSignalsProcess.start({ TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace });
    cleanup.unshift(async () => {
      await raw.stop();
      raw.service.removeLog();
    });

    // This process's own client: starts the deliveries, queries them; idle while load runs.
    const connection = await Connection.connect({ address: server.address });
    cleanup.unshift(() => connection.close());
    const temporal = new Client({ connection, namespace: server.namespace });
    const agent = new Agent({ connections: 256 });
    cleanup.unshift(() => agent.close());

    const followed = await startDeliveries(new DeliveryClient({ temporal, taskQueue: TASK_QUEUE }), sim);
    const targets: RawTarget[] = followed.map((f) => ({ workflowId: f.workflowId, deliveryId: f.deliveryId }));

    let seq = 0;
    /** A stale status (the one the delivery has): a real signal, but no state change and no activity. Signed as the provider signs. */
    const webhook = (f: Followed, prefix = 'evt_bench'): Webhook => {
      const id = `${prefix}${++seq}`;
      const body = JSON.stringify({ id, type: 'delivery.status_changed', created_at: new Date().toISOString(), data: { delivery_id: f.deliveryId, status: 'CREATED' } });
      return { id, body, headers: { 'content-type': 'application/json', ...signWebhook(secret, id, Math.floor(Date.now() / 1000), body) } };
    };
    const postWebhook = async (w: Webhook) => {
      const res = await request(bridgeUrl + WEBHOOK_PATH, { method: 'POST', body: w.body, headers: w.headers, dispatcher: agent });
      const answer = (await res.body.json()) as { outcome?: string };
      if (res.statusCode !== 200 || answer.outcome !== 'accepted') throw new Error(`bridge answered ${res.statusCode} ${JSON.stringify(answer)}`);
    };
    const batch = () => followed.flatMap((f) => Array.from({ length: EVENTS_PER_DELIVERY }, () => f));

    progress('warming up (one webhook and one raw signal per delivery: fills the reference cache and the connections)...');
    await pool(followed, CONCURRENCY, (f) => postWebhook(webhook(f)));
    await raw.run({ op: 'throughput', targets, perTarget: 1, concurrency: CONCURRENCY });

    // Signed before the clock (and the CPU count) starts: the provider signs, not us.
    const signedBatch = () => batch().map((f) => webhook(f));
    const viaBridge = (signed = signedBatch()) => pool(signed, CONCURRENCY, postWebhook);
    const viaRaw = async () => (await raw.run<{ perSecond: number }>({ op: 'throughput', targets, perTarget: EVENTS_PER_DELIVERY, concurrency: CONCURRENCY })).perSecond;

    // CPU seconds of each process over the timed rounds, per side.
    const pids: Record<Parts, number | undefined> = { temporal: server.process.pid, worker: worker.pid, bridge: bridge.pid, raw_script: raw.service.pid, bench: process.pid };
    const cpu: Record<Side, Record<Parts | 'machine_busy' | 'machine_total' | 'wall', number>> = {
      bridge: { temporal: 0, worker: 0, bridge: 0, raw_script: 0, bench: 0, machine_busy: 0, machine_total: 0, wall: 0 },
      raw: { temporal: 0, worker: 0, bridge: 0, raw_script: 0, bench: 0, machine_busy: 0, machine_total: 0, wall: 0 },
    };
    const measured = async (side: Side, run: () => Promise<number>): Promise<number> => {
      const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, processCpuSeconds(pid) ?? 0]));
      const m0 = machineCpuSeconds();
      const t0 = performance.now();
      const rate = await run();
      const wall = (performance.now() - t0) / 1000;
      const m1 = machineCpuSeconds();
      for (const [k, pid] of Object.entries(pids)) cpu[side][k as Parts] += (processCpuSeconds(pid) ?? 0) - before[k]!;
      if (m0 && m1) {
        cpu[side].machine_busy += m1.busy - m0.busy;
        cpu[side].machine_total += m1.total - m0.total;
      }
      cpu[side].wall += wall;
      return rate;
    };

    progress('one untimed round of each (JIT, server caches)...');
    await viaBridge();
    await viaRaw();
    const bridgeRates: number[] = [];
    const rawRates: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // Alternate which goes first, so a drift of the machine does not favour one side.
      const signed = signedBatch();
      if (round % 2) {
        bridgeRates.push(await measured('bridge', () => viaBridge(signed)));
        rawRates.push(await measured('raw', viaRaw));
      } else {
        rawRates.push(await measured('raw', viaRaw));
        bridgeRates.push(await measured('bridge', () => viaBridge(signed)));
      }
      progress(`round ${round}/${ROUNDS}: bridge ${Math.round(bridgeRates.at(-1)!)}/s, raw signals ${Math.round(rawRates.at(-1)!)}/s`);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const bridgeRate = median(bridgeRates);
    const rawRate = median(rawRates);
    const events = ROUNDS * DELIVERIES * EVENTS_PER_DELIVERY;
    const ours = (side: Side) => (Object.keys(pids) as Parts[]).reduce((sum, p) => sum + cpu[side][p], 0);
    /** CPU ms per event of each process, and how busy the whole machine was (% of all its cores). */
    const cpuFigures = (side: Side, parts: Parts[]) => ({
      ...Object.fromEntries(parts.map((p) => [`${side}_rounds_cpu_ms_per_event_${p}`, Number(((cpu[side][p] * 1000) / events).toFixed(3))])),
      [`${side}_rounds_machine_busy_pct`]: Math.round((100 * cpu[side].machine_busy) / Math.max(cpu[side].machine_total, 1e-9)),
      // Busy time of the machine not spent by any process of this benchmark: other people's work on the shared cores.
      [`${side}_rounds_other_processes_cpu_pct`]: Math.round((100 * Math.max(0, cpu[side].machine_busy - ours(side))) / Math.max(cpu[side].machine_total, 1e-9)),
    });

    /** From now until the returned function is called: the share of the machine's CPU used by processes not of this benchmark (%). */
    const outsideLoad = () => {
      const ours0 = Object.values(pids).reduce<number>((sum, pid) => sum + (processCpuSeconds(pid) ?? 0), 0);
      const m0 = machineCpuSeconds();
      return () => {
        const m1 = machineCpuSeconds();
        if (!m0 || !m1) return NaN;
        const oursNow = Object.values(pids).reduce<number>((sum, pid) => sum + (processCpuSeconds(pid) ?? 0), 0) - ours0;
        return Math.round((100 * Math.max(0, m1.busy - m0.busy - oursNow)) / Math.max(m1.total - m0.total, 1e-9));
      };
    };

    const rate = Math.max(1, Math.floor(bridgeRate / 2));
    const count = Math.min(5_000, rate * LATENCY_SECONDS);
    // Bridge, raw, raw, bridge: each side gets two segments, so a change of the machine's load in between favours neither.
    progress(`acknowledgement latency: ${count} webhooks at a fixed ${rate}/s (half the measured maximum), then ${count} raw signals from the raw-signal script at the same rate (Temporal's own signal latency), twice each (bridge, raw, raw, bridge)...`);
    const ackSegment = async () => {
      const signed = Array.from({ length: count }, (_, i) => webhook(followed[i % followed.length]!, 'evt_ack'));
      await eventLoopLag(bridgeAdminUrl, agent); // prom-client's lag histogram restarts at each scrape: from here on it covers this segment
      const latencies = await openLoop(signed, rate, postWebhook);
      return { latencies, lag: await eventLoopLag(bridgeAdminUrl, agent) };
    };
    const rawSegment = async () => (await raw.run({ op: 'open-loop', targets, count, perSecond: rate })).latencies;
    const ackOutside = outsideLoad();
    const ack1 = await ackSegment();
    const rawAck1 = await rawSegment();
    const rawAck2 = await rawSegment();
    const ack2 = await ackSegment();
    const ackOtherPct = ackOutside();
    const ack = summarize([...ack1.latencies, ...ack2.latencies]);
    const rawAck = summarize([...rawAck1, ...rawAck2]);
    const ackLag = { p99: Math.max(ack1.lag.p99, ack2.lag.p99), max: Math.max(ack1.lag.max, ack2.lag.max) };
    const handling = bridgeHandling(bridge.output(), 'evt_ack');
    progress(`one at a time (no load), ${SERIAL} raw signals and ${SERIAL} webhooks...`);
    const rawIdle = await raw.run({ op: 'serial', targets, count: SERIAL });
    const bridgeIdleLatencies = await serial(
      Array.from({ length: SERIAL }, (_, i) => webhook(followed[i % followed.length]!)),
      postWebhook,
    );
    const bridgeIdle = summarize(bridgeIdleLatencies);

    progress(`propagation: advancing ${followed.length} deliveries two steps each at the simulator, one at a time...`);
    sim.setWebhookEndpoint({ url: bridgeUrl + WEBHOOK_PATH, secret });
    const propagationOutside = outsideLoad();
    const propagation = await propagationLatencies(followed, sim, temporal);
    const propagationOtherPct = propagationOutside();

    const reconciliation = await reconciliationTimes(new DeliveryClient({ temporal, taskQueue: TASK_QUEUE }), sim);

    const bridgeErrors = bridge.output().split('\n').filter((l) => l.includes('"msg":"webhook"') && !l.includes('"status":200')).length;
    const charts = webhooksCharts([
      { label: `bridge at ${rate}/s`, latencies: [...ack1.latencies, ...ack2.latencies] },
      { label: `raw signals at ${rate}/s`, latencies: [...rawAck1, ...rawAck2] },
      { label: 'bridge, one at a time', latencies: bridgeIdleLatencies },
      { label: 'raw signals, one at a time', latencies: rawIdle.latencies },
    ]);
    const figures = {
      setup: 'one process each: Temporal dev server, worker (worker/main.ts), bridge (bridge/main.ts), raw-signal script (bench/raw-signals.ts), this process (load generator + simulator)',
      overrides: overrides.length ? overrides.join(' ') : 'none',
      deliveries: DELIVERIES,
      events_per_delivery: EVENTS_PER_DELIVERY,
      concurrency: CONCURRENCY,
      rounds: ROUNDS,
      bridge_rounds_per_second: bridgeRates.map((r) => Math.round(r)).join(' '),
      raw_rounds_per_second: rawRates.map((r) => Math.round(r)).join(' '),
      bridge_webhooks_per_second: Math.round(bridgeRate),
      raw_signals_per_second: Math.round(rawRate),
      bridge_to_raw_ratio: Number((bridgeRate / rawRate).toFixed(3)),
      // The same comparison made round by round (each bridge round against the raw round next to it), less exposed to a burst of outside load.
      bridge_to_raw_ratio_median_of_rounds: Number(median(bridgeRates.map((b, i) => b / rawRates[i]!)).toFixed(3)),
      // With all cores busy, throughput goes as 1 / (CPU per event of every process on the path); this ratio is what these CPU costs allow.
      bridge_to_raw_ratio_from_cpu: Number((ours('raw') / ours('bridge')).toFixed(3)),
      ...cpuFigures('bridge', ['temporal', 'worker', 'bridge', 'bench']),
      ...cpuFigures('raw', ['temporal', 'worker', 'raw_script', 'bench']),
      ack_phase_other_processes_cpu_pct: ackOtherPct,
      ack_rate_per_second: rate,
      ack_requests: ack.count,
      ack_p50_ms: ack.p50,
      ack_p99_ms: ack.p99,
      ack_max_ms: ack.max,
      ack_bridge_handling_p50_ms: handling.p50,
      ack_bridge_handling_p99_ms: handling.p99,
      ack_bridge_event_loop_lag_p99_ms: ackLag.p99,
      ack_bridge_event_loop_lag_max_ms: ackLag.max,
      raw_signal_at_same_rate_requests: rawAck.count,
      raw_signal_at_same_rate_p50_ms: rawAck.p50,
      raw_signal_at_same_rate_p99_ms: rawAck.p99,
      raw_signal_at_same_rate_max_ms: rawAck.max,
      raw_signal_unloaded_p50_ms: rawIdle.p50,
      raw_signal_unloaded_p99_ms: rawIdle.p99,
      bridge_unloaded_p50_ms: bridgeIdle.p50,
      bridge_unloaded_p99_ms: bridgeIdle.p99,
      propagation_phase_other_processes_cpu_pct: propagationOtherPct,
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
      bridge_non_200_answers: bridgeErrors,
    };
    return { figures, charts };
  } finally {
    for (const step of cleanup) await Promise.resolve(step()).catch((e: Error) => progress(`cleanup: ${e.message}`));
    clearTimeout(watchdog);
  }
}

/** The bridge process's event-loop delay (prom-client's default metrics) since the previous scrape, in ms. */
async function eventLoopLag(bridgeAdminUrl: string, agent: Agent): Promise<{ p99: number; max: number }> {
  const res = await request(`${bridgeAdminUrl}/metrics`, { dispatcher: agent });
  const text = await res.body.text();
  const value = (name: string) => Number((Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]) * 1000).toFixed(2));
  return { p99: value('nodejs_eventloop_lag_p99_seconds'), max: value('nodejs_eventloop_lag_max_seconds') };
}

/** The bridge's own handling time (request in → answer written, whole ms as it logs them) of the webhooks whose id starts with `prefix`. */
function bridgeHandling(log: string, prefix: string): Latencies {
  const ms: number[] = [];
  for (const line of log.split('\n')) {
    if (!line.includes(`"event_id":"${prefix}`)) continue;
    const entry = JSON.parse(line) as { ms?: number };
    if (typeof entry.ms === 'number') ms.push(entry.ms);
  }
  return ms.length ? summarize(ms) : { p50: NaN, p99: NaN, max: NaN, count: 0 };
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
