/** npm run bench -- scale (issue #7): docs/benchmarks.md, "Many open deliveries". The worker runs as production runs it (bundling its
 * own workflows). Its steps: 1 to 4 below, then 3 and 4 again with a fresh, warmed worker of each further configuration. */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ServiceError, type Client, type WorkflowHandle } from '@temporalio/client';
import { z } from 'zod';
import { DeliveryClient } from '../client/delivery-client';
import { statusChangedSignal, statusQuery } from '../contract/delivery-messages';
import type { DeliveryOrder, DeliveryState, FollowUpSettings, StatusChange } from '../contract/delivery-types';
import { deliveryWorkflowId } from '../contract/workflow-ids';
import type { CallFamily, RateLimit } from '../provider/limits';
import { ENTRY, type RunningProcess } from '../scripts/processes';
import type { Simulator } from '../simulator/server';
import { dataConverterFromEnv, generatePayloadKey } from '../temporal/payload-codec';
import { deliveryRequest } from '../test/fixtures/orders';
import { benchSettings, cpuMeter, p50p99, pool, processCpuSeconds, processMemoryMiB, progressLog, shuffled, sleep, ticking, type BenchmarkOutput } from './measure';
import type { Series } from './charts';
import { scaleCharts } from './run-charts';
import { benchStack, killDescendants, rateLimitsEnv } from './temporal';

const { num } = benchSettings('SCALE');
const DELIVERIES = num('DELIVERIES', 10_000);
const DESTINATIONS = num('DESTINATIONS', 5);
const RAW_STARTS = num('RAW_STARTS', Math.ceil(DELIVERIES / 2));
const CONCURRENCY = num('CONCURRENCY', 32);
const SAMPLES = Math.min(DELIVERIES, num('SAMPLES', 300));
const HIT_SAMPLES = Math.min(DELIVERIES, num('HIT_SAMPLES', 50));
const SIGNALS = num('SIGNALS', Math.min(DELIVERIES, 300));
const TIME_LIMIT_MS = num('TIME_LIMIT_MIN', 40) * 60_000;

// SCALE_BENCH_WORKERS (docs/configuration.md): heap absent is Node's default; tasks 40, as with the SDK's 10 creation runs at about 6 a second.
const WorkerConfigSchema = z.strictObject({ cache: z.coerce.number().int().min(0), heap: z.coerce.number().int().min(1).optional(), tasks: z.coerce.number().int().min(1).default(40) });
type WorkerConfig = z.infer<typeof WorkerConfigSchema>;
const WORKERS = (process.env.SCALE_BENCH_WORKERS ?? 'cache=500,heap=512;cache=100,heap=384;cache=1500,heap=896').split(';').map((text) => {
  const parsed = WorkerConfigSchema.safeParse(Object.fromEntries(text.split(',').map((part) => part.trim().split('='))));
  if (!parsed.success) throw new Error(`SCALE_BENCH_WORKERS: "${text}" is not cache=N[,heap=MiB][,tasks=N]:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
});
const tagOf = (c: WorkerConfig) => `c${c.cache}${c.heap ? `_h${c.heap}` : ''}${c.tasks !== 40 ? `_t${c.tasks}` : ''}`;
const chartLabel = (c: WorkerConfig) => `cache ${c.cache}${c.heap ? `, heap ${c.heap} MiB` : ''}`;

const TASK_QUEUE = 'scale-deliveries';
const RAW_TASK_QUEUE = 'scale-raw-starts'; // no worker polls it
/** Nothing polls the provider during the run: the deliveries wait for signals only. */
const FOLLOW_UP: FollowUpSettings = { quietMs: 24 * 3_600_000, windowGraceMs: 24 * 3_600_000, jitter: 0, endGraceMs: 0 };
/** The contract's windows, counts raised far above what the run needs: the simulator enforces them, the worker is told them. */
const LIMITS: Record<CallFamily, RateLimit> = { creations: { limit: 1_000_000, windowMs: 60_000 }, quotes: { limit: 1_000_000, windowMs: 600_000 }, other: { limit: 1_000_000, windowMs: 60_000 } };

const progress = progressLog('scale');
/** The charts' time axis: seconds since the benchmark (this process) began. */
const runSeconds = (t: number) => Number((t / 1000).toFixed(1));
/** `rss`: VmRSS every second, [run seconds, MiB]. */
type Worker = { config: WorkerConfig; process: RunningProcess; rss: [number, number][] };

/** VmRSS now and VmHWM (the peak over the worker's life), MiB. */
const memory = (w: Worker) => processMemoryMiB(w.process.pid) ?? { rss: NaN, peak: NaN };

/** A distinct order per delivery (its own recipients and addresses), DESTINATIONS destinations. */
function makeOrder(i: number): DeliveryOrder {
  const order = deliveryRequest({}, DESTINATIONS);
  order.destinations.forEach(({ location }, d) => Object.assign(location, { last_name: `Recipient ${i}-${d}`, phone: `+49151${String(10_000_000 + ((i * 7 + d) % 90_000_000)).padStart(8, '0')}`, address: `Skalenweg ${(i % 400) + 1}, ${10_115 + d} Berlin` }));
  return order;
}

export async function scaleBenchmark(): Promise<BenchmarkOutput> {
  // A worker that dies ends the run (the exit kills the dev server): nothing measured after that would mean anything.
  // One that never got ready is reported by waitReady instead, with its output.
  let starting = false;
  const onUnexpectedExit = (name: string, how: string) => {
    if (starting) return;
    progress(`the worker ${name} exited (${how}):\n${stack.processes.tail(3_000)}`);
    process.exit(1);
  };
  const onCluster = process.env.BENCH_TEMPORAL === 'cluster'; // `--cluster`: the Temporal of `npm run cluster`, on PostgreSQL
  const stack = await benchStack(progress, TIME_LIMIT_MS, { cluster: onCluster, group: { maxOutputChars: 100_000, onUnexpectedExit } });
  const { server: dev, processes: group } = stack;
  /** PostgreSQL's tables and indexes as their files' sizes (a relation's file grows when a page is added, before any checkpoint). */
  const postgresBytes = () => (dev.postgresDataDir ? Number(execFileSync('du', ['-sb', join(dev.postgresDataDir, 'base')], { encoding: 'utf8' }).split('\t')[0]) : NaN);
  let worker: Worker | undefined;
  const figures: Record<string, number | string> = { deliveries: DELIVERIES, destinations_per_delivery: DESTINATIONS };
  const workers: Worker[] = [];
  const latencySeries: Series[] = [];
  try {
    // However this process ends (the watchdog, a signal, a worker's death), no child outlives it: what still runs is killed, the rest passed over.
    process.once('exit', () => void killDescendants());
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
    const { sim, url } = await stack.simulator({ rateLimits: LIMITS, autoAdvanceMs: 0, logCap: 1_000 });
    const payloadKey = generatePayloadKey('scale');
    const dataConverter = dataConverterFromEnv({ DELIVERY_PAYLOAD_KEYS: payloadKey, TEMPORAL_ADDRESS: dev.address });
    // One connection per kind of caller, as separate processes would have.
    const [startClient, rawClient, probe] = await Promise.all([1, 2, 3].map(() => stack.client(dataConverter)));
    const references = Array.from({ length: DELIVERIES }, (_, i) => `SCALE-${i}`);
    const bytes0 = postgresBytes();
    Object.assign(figures, await measureStarts(new DeliveryClient({ temporal: startClient!, taskQueue: TASK_QUEUE }), rawClient!, references));
    const bytesStarted = postgresBytes();

    const env = { ...stack.env(url), DELIVERY_TASK_QUEUE: TASK_QUEUE, DELIVERY_PAYLOAD_KEYS: payloadKey, PROVIDER_RATE_LIMITS: rateLimitsEnv(LIMITS), PROVIDER_PACING: 'task-queue', WORKER_MAX_CONCURRENT_ACTIVITIES: '100', LOG_LEVEL: 'WARN' };
    const sampler = setInterval(() => worker?.process.running && worker.rss.push([runSeconds(performance.now()), Math.round(memory(worker).rss)]), 1_000);
    stack.cleanup.add(() => clearInterval(sampler));
    const startWorker = async (config: WorkerConfig): Promise<Worker> => {
      progress(`starting a worker: ${chartLabel(config)}, ${config.tasks} workflow task slots...`);
      starting = true;
      const proc = await group.start({ name: tagOf(config), entry: ENTRY.worker.entry, isolated: true, nodeArgs: config.heap ? [`--max-old-space-size=${config.heap}`] : [], env: { ...env, WORKER_MAX_CACHED_WORKFLOWS: String(config.cache), WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: String(config.tasks) } });
      workers.push((worker = { config, process: proc, rss: [] }));
      await group.waitReady(proc, ENTRY.worker.ready, 120_000);
      starting = false;
      return worker;
    };
    const stopWorker = async (w: Worker) => {
      figures[`${tagOf(w.config)}_peak_rss_mib`] = Math.round(memory(w).peak);
      progress(`stopping the worker (SIGTERM); its peak RSS was ${figures[`${tagOf(w.config)}_peak_rss_mib`]} MiB...`);
      await group.stopAll(); // its exit is expected
    };

    const first = await startWorker(WORKERS[0]!);
    Object.assign(figures, await waitFollowing(sim, probe!, first.process.pid, dev.pids, references));
    if (onCluster) {
      // A start's share: both kinds of start write alike; then what creating and following added, per delivery.
      const perStart = (bytesStarted - bytes0) / (DELIVERIES + RAW_STARTS);
      Object.assign(figures, { postgres_bytes_per_start: Math.round(perStart), postgres_bytes_per_open_delivery: Math.round(perStart + (postgresBytes() - bytesStarted) / DELIVERIES) });
    }

    const ids = new Map(sim.deliveries().map(({ delivery }) => [delivery.reference_number!, delivery.id]));
    let unmeasured: string[] = [];
    /** `n` random deliveries, none measured before while there are enough. */
    const pick = (n: number) => (unmeasured.length >= n ? unmeasured : (unmeasured = shuffled(references))).splice(0, n);
    const measure = async (w: Worker) => {
      Object.assign(figures, await statusLatency(w, sim, probe!, pick(SAMPLES), ids, false, latencySeries));
      Object.assign(figures, await statusLatency(w, sim, probe!, pick(HIT_SAMPLES), ids, true, latencySeries));
      Object.assign(figures, await signalThroughput(w, probe!, Array.from({ length: SIGNALS }, () => references[Math.floor(Math.random() * references.length)]!), ids, 'stale-status signals to random deliveries'));
    };
    await measure(first);
    for (const config of WORKERS.slice(1)) {
      await stopWorker(worker!);
      const w = await startWorker(config);
      const warm = Math.min(config.cache, references.length);
      if (warm > 0) await signalThroughput(w, probe!, shuffled(references).slice(0, warm), ids, `warming: a signal to ${warm} random deliveries (each a replay on the fresh worker)`);
      figures[`${tagOf(config)}_rss_after_warm_mib`] = Math.round(memory(w).rss);
      await measure(w);
    }
    await stopWorker(worker!);
    return { figures, charts: scaleCharts(workers.map((w) => ({ name: chartLabel(w.config), points: w.rss })), latencySeries) };
  } finally {
    await stack.close();
  }
}

/** 1. startDelivery against raw workflow.start, chunk by chunk, each side first in every other chunk, so a drift of the machine favours neither. */
async function measureStarts(deliveries: DeliveryClient, raw: Client, references: string[]): Promise<Record<string, number | string>> {
  const orders = references.map((_, i) => makeOrder(i));
  const sides = [
    { count: references.length, start: (i: number) => deliveries.startDelivery(orders[i]!, { reference: references[i]!, followUp: FOLLOW_UP }) },
    { count: RAW_STARTS, start: (i: number) => raw.workflow.start('delivery', { taskQueue: RAW_TASK_QUEUE, workflowId: `raw-start:${i}`, args: [{ reference: `RAW-${i}`, order: orders[i % orders.length]!, followUp: FOLLOW_UP }] }) },
  ].map((side) => ({ ...side, seconds: 0, rates: [] as number[] }));
  const chunks = Math.max(1, Math.min(10, references.length, RAW_STARTS));
  let started = 0;
  progress(`starting ${references.length} deliveries (startDelivery) and ${RAW_STARTS} raw workflow.start calls, concurrency ${CONCURRENCY}, ${chunks} alternating chunks, no worker running...`);
  await ticking(progress, () => `started ${started} of ${references.length + RAW_STARTS} (${references.length} deliveries, ${RAW_STARTS} raw starts)`, async () => {
    for (let k = 0; k < chunks; k++) {
      for (const side of k % 2 === 0 ? sides : [...sides].reverse()) {
        const chunk = Array.from({ length: side.count }, (_, i) => i).filter((i) => Math.floor((i * chunks) / side.count) === k);
        const rate = await pool(chunk, CONCURRENCY, (i) => side.start(i).then(() => void started++));
        side.seconds += chunk.length / rate;
        side.rates.push(rate);
      }
    }
  });
  const [client, plain] = sides.map((side) => side.count / side.seconds) as [number, number];
  const ratios = sides[0]!.rates.map((r, k) => r / sides[1]!.rates[k]!).sort((a, b) => a - b);
  const range = `${ratios[0]!.toFixed(2)} to ${ratios.at(-1)!.toFixed(2)}`;
  return { starts_per_second: Math.round(client), raw_starts_per_second: Math.round(plain), start_ratio: Number((client / plain).toFixed(3)), start_ratio_range_over_chunks: range };
}

/** 2. Until the simulator holds every delivery and visibility counts every workflow as following it (creation's figures), then settled. */
async function waitFollowing(sim: Simulator, probe: Client, workerPid: number | undefined, serverPids: () => number[], references: string[]): Promise<Record<string, number>> {
  const t0 = performance.now();
  // The server's CPU: the dev server, or every process of the cluster (PostgreSQL's backends too), summed.
  const cpuNow = () => [processCpuSeconds(workerPid)!, serverPids().reduce((sum, pid) => sum + (processCpuSeconds(pid) ?? 0), 0)];
  const cpu0 = cpuNow();
  const created = () => sim.context.store.size;
  // The creation's upsert (QuotedPrice with it) is made in the workflow task that enters phase 'following'.
  const following = `WorkflowType = 'delivery' AND TaskQueue = '${TASK_QUEUE}' AND ExecutionStatus = 'Running' AND QuotedPrice >= 0`;
  progress(`the worker quotes, creates and follows ${references.length} deliveries...`);
  await ticking(progress, () => `created ${created()}/${references.length} at the simulator`, async () => {
    // Visibility is asked only once the simulator holds them all: counting 10,000 workflows costs the server.
    while (created() < references.length || (await probe.workflow.count(following)).count < references.length) await sleep(500);
  });
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuNow().map((c, i) => c - cpu0[i]!);
  // Both still work off the tail of creation for a while: settle until they use under a tenth of a core over 5 s (at most 3 minutes).
  for (let waited = 5; waited <= 180; waited += 5) {
    const before = cpuNow();
    await sleep(5_000);
    const use = Math.max(...cpuNow().map((c, i) => c - before[i]!)) / 5;
    progress(`settling after creation: busiest of worker and Temporal at ${(use * 100).toFixed(0)}% of a core over 5 s (${waited} s)`);
    if (use < 0.1) break;
  }
  return { created_s: Number(seconds.toFixed(1)), created_per_second: Math.round(references.length / seconds), creation_cpu_s_worker: Math.round(cpu[0]!), creation_cpu_s_temporal: Math.round(cpu[1]!) };
}

let eventSeq = 0;
const change = (deliveryId: string, status: StatusChange['status'], occurredAt: string): StatusChange => ({ deliveryId, status, eventId: `evt_scale${++eventSeq}`, occurredAt, source: 'webhook' });
/** The status the delivery has had since its creation: a real signal and workflow task, no change, no activity. */
const staleChange = (deliveryId: string) => change(deliveryId, 'CREATED', new Date().toISOString());

/** 3. Signal → the `status` query shows it; with `cached`, each delivery gets a stale signal first (waited for), so it is in the worker's cache. */
async function statusLatency(w: Worker, sim: Simulator, probe: Client, sample: string[], ids: Map<string, string>, cached: boolean, series: Series[]): Promise<Record<string, number>> {
  const what = cached ? 'status latency, deliveries just touched (in the cache)' : 'status latency, random open deliveries';
  progress(`${what}: ${sample.length}, one at a time...`);
  const latencies: number[] = [];
  const points: [number, number][] = [];
  series.push({ name: `${chartLabel(w.config)}, ${cached ? 'just touched' : 'random'}`, points });
  await ticking(progress, () => `${what}: ${latencies.length}/${sample.length}`, async () => {
    for (const reference of sample) {
      const deliveryId = ids.get(reference)!;
      const handle = probe.workflow.getHandle(deliveryWorkflowId(reference));
      if (cached) {
        await handle.signal(statusChangedSignal, staleChange(deliveryId));
        await queryPatiently(handle, performance.now() + 30_000);
      }
      const record = sim.advance(deliveryId);
      const t0 = performance.now();
      await handle.signal(statusChangedSignal, change(deliveryId, record.status as StatusChange['status'], record.updated_at));
      while ((await queryPatiently(handle, t0 + 30_000)).status !== record.status) {
        if (performance.now() - t0 > 30_000) throw new Error(`${reference} did not show ${record.status} within 30 s`);
      }
      latencies.push(performance.now() - t0);
      points.push([runSeconds(t0), Number(latencies.at(-1)!.toFixed(1))]);
    }
  });
  return p50p99(`${tagOf(w.config)}${cached ? '_cached' : ''}_status`, latencies, 1);
}

/** The `status` query, asked again when it times out (the workflow's pending task not handled in time) until `deadline` (performance.now() time). */
const queryPatiently = (handle: WorkflowHandle, deadline: number): Promise<DeliveryState> =>
  handle.query(statusQuery).catch((err: unknown) => (performance.now() < deadline && err instanceof ServiceError ? queryPatiently(handle, deadline) : Promise.reject(err)));

/** 4. A stale-status signal to each of `picks`, CONCURRENCY at a time, until the worker has handled them: the rate it keeps up with. */
async function signalThroughput(w: Worker, probe: Client, picks: string[], ids: Map<string, string>, what: string): Promise<Record<string, number>> {
  progress(`${what}: ${picks.length} signals, concurrency ${CONCURRENCY}...`);
  let sent = 0;
  const [cpu, t0] = [cpuMeter({ worker: w.process.pid }), performance.now()];
  await ticking(progress, () => `${what}: ${sent}/${picks.length} sent`, () => cpu.span(async () => {
    await pool(picks, CONCURRENCY, (reference) => probe.workflow.getHandle(deliveryWorkflowId(reference)).signal(statusChangedSignal, staleChange(ids.get(reference)!)).then(() => void sent++));
    // Signals are handled in about the order they came; a query answers after the pending workflow task.
    await pool(picks.slice(-CONCURRENCY), CONCURRENCY, (reference) => queryPatiently(probe.workflow.getHandle(deliveryWorkflowId(reference)), performance.now() + 300_000).then(() => undefined));
  }));
  const cpuMs = (cpu.seconds.worker * 1000) / picks.length;
  const tag = tagOf(w.config);
  return { [`${tag}_signals_per_second`]: Math.round(picks.length / ((performance.now() - t0) / 1000)), [`${tag}_worker_cpu_ms_per_signal`]: Number(cpuMs.toFixed(1)) };
}
