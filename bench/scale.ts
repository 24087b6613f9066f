/**
 * `npm run bench -- scale`: many open deliveries followed by ONE worker process (issue #7).
 * Everything on 127.0.0.1: its own Temporal dev server (in memory), the simulator in this
 * process (rate limits raised, no auto-advance, no webhooks), and the worker as a real child
 * process (`node --import tsx worker/main.ts`, which bundles its workflows itself, as in
 * production), whose resident memory is read from /proc/<pid>/status (VmRSS every second, VmHWM
 * the peak). Payloads are encrypted, as `npm start` and production run. The `task-queue`
 * limiter paces provider calls (docs/benchmarks.md says why).
 *
 * 1. Starts: DELIVERIES deliveries (DESTINATIONS destinations each) through
 *    DeliveryClient.startDelivery, against RAW_STARTS raw `client.workflow.start` calls (same
 *    workflow type, same-sized input, same concurrency) to a task queue no worker polls, in
 *    alternating chunks so that a drift of the machine (or of the growing server) favours
 *    neither. No worker runs yet, so both measure the start path only.
 * 2. The first worker quotes, creates and follows all of them (reconciliation polling is pushed
 *    out of the run: quiet interval and window grace of a day). Done when the simulator holds
 *    every delivery and visibility counts every workflow as created; a sample is checked with
 *    the `status` query. Then the worker and the dev server are given time to work off the tail
 *    of the creations (until both use under a tenth of a core), so that 3 measures 10,000 open
 *    deliveries rather than a server still busy creating them.
 * 3. Latency: on SAMPLES randomly chosen open deliveries, one at a time, the simulator advances
 *    the delivery and the `statusChanged` signal the bridge would send is sent; measured is the
 *    time from sending it until the `status` query shows the new status. Then the same on
 *    HIT_SAMPLES deliveries touched just before (certainly in the worker's cache).
 * 4. Signal throughput with the cache as it is: stale-status signals (a workflow task each, no
 *    state change, no activity) to random deliveries, SIGNAL_CONCURRENCY at a time, until the
 *    worker has handled them; and the worker's CPU per signal.
 * 5. Each further worker configuration (WORKERS): the worker is stopped (SIGTERM), a new one
 *    started, warmed with one signal to as many random deliveries as it caches, then 3 and 4.
 * 6. The worker is stopped (SIGTERM) and every workflow terminated.
 *
 * Every count and setting can be overridden (SCALE_BENCH_* below), e.g. SCALE_BENCH_DELIVERIES=500
 * for a quick validation run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection, ServiceError, type WorkflowHandle } from '@temporalio/client';
import { DeliveryClient } from '../client/delivery-client';
import { dataConverterFromEnv, generatePayloadKey } from '../temporal/payload-codec';
import type { CallFamily, RateLimit } from '../provider/limits';
import type { DevServer } from '../scripts/temporal-dev-server';
import { createSimulator, type Simulator } from '../simulator/server';
import { deliveryRequest, destination } from '../test/fixtures/orders';
import { statusChangedSignal, statusQuery } from '../contract/delivery-messages';
import { type DeliveryOrder, type DeliveryState, type DeliveryWorkflowInput, type FollowUpSettings, type StatusChange } from '../contract/delivery-types';
import { deliveryWorkflowId } from '../contract/workflow-ids';
import { startBenchServer } from './temporal';
import { scaleCharts, type RunSeries } from './run-charts';
import { percentile, pool, processCpuSeconds, sleep } from './measure';

const num = (name: string, fallback: number) => {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, not "${v}"`);
  return n;
};
const DELIVERIES = num('SCALE_BENCH_DELIVERIES', 10_000);
const DESTINATIONS = num('SCALE_BENCH_DESTINATIONS', 5);
const RAW_STARTS = num('SCALE_BENCH_RAW_STARTS', Math.ceil(DELIVERIES / 2));
const START_CONCURRENCY = num('SCALE_BENCH_START_CONCURRENCY', 32);
const START_CHUNKS = num('SCALE_BENCH_START_CHUNKS', 10);
const CHECK_SAMPLE = Math.min(DELIVERIES, num('SCALE_BENCH_CHECK', 100));
const SAMPLES = Math.min(DELIVERIES, num('SCALE_BENCH_SAMPLES', 300));
const HIT_SAMPLES = Math.min(DELIVERIES, num('SCALE_BENCH_HIT_SAMPLES', 50));
const SIGNALS = num('SCALE_BENCH_SIGNALS', Math.min(DELIVERIES, 300));
const SIGNAL_CONCURRENCY = num('SCALE_BENCH_SIGNAL_CONCURRENCY', 32);
const LIMITER = (process.env.SCALE_BENCH_PACING ?? 'task-queue') as 'gate' | 'task-queue';
const TIME_LIMIT_MS = num('SCALE_BENCH_TIME_LIMIT_MIN', 40) * 60_000;
const CREATION_LIMIT_MS = num('SCALE_BENCH_CREATION_LIMIT_MIN', 25) * 60_000;
const SETTLE_MAX_S = num('SCALE_BENCH_SETTLE_MAX_S', 180);
const PROGRESS_MS = 5_000;
/** For diagnosis: extra Node flags for every worker (e.g. `--trace-gc`) and a file that gets all of its output. */
const EXTRA_WORKER_FLAGS = (process.env.SCALE_BENCH_WORKER_FLAGS ?? '').split(/\s+/).filter(Boolean);
const WORKER_LOG = process.env.SCALE_BENCH_WORKER_LOG;

/**
 * The worker configurations, `;`-separated, each `cache=N[,heap=MiB][,tasks=N]`:
 * cache = WORKER_MAX_CACHED_WORKFLOWS; heap = the worker's `--max-old-space-size` (absent: Node's
 * default, about 4 GiB here); tasks = WORKER_MAX_CONCURRENT_WORKFLOW_TASKS (default 40, the SDK's).
 * The first configuration's worker creates the deliveries; each further one gets a fresh worker
 * that is warmed with one signal to as many random deliveries as it caches.
 */
const WORKERS = (process.env.SCALE_BENCH_WORKERS ?? 'cache=500,heap=512;cache=100,heap=384;cache=1500,heap=896').split(';').map(parseWorkerConfig);

interface WorkerConfig {
  cache: number;
  heapMiB?: number;
  workflowTasks: number;
  activities: number;
}

function parseWorkerConfig(text: string): WorkerConfig {
  const c: WorkerConfig = { cache: NaN, workflowTasks: 40, activities: 100 };
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const [key, value] = part.split('=') as [string, string | undefined];
    const n = Number(value);
    if (value === undefined || !Number.isInteger(n) || n < 0) throw new Error(`SCALE_BENCH_WORKERS: "${part}" must be key=integer (in "${text}")`);
    else if (key === 'cache') c.cache = n;
    else if (key === 'heap') c.heapMiB = n;
    else if (key === 'tasks') c.workflowTasks = n;
    else if (key === 'activities') c.activities = n;
    else throw new Error(`SCALE_BENCH_WORKERS: unknown setting "${key}" (cache, heap, tasks, activities)`);
  }
  if (Number.isNaN(c.cache)) throw new Error(`SCALE_BENCH_WORKERS: "${text}" needs cache=N`);
  return c;
}

const tagOf = (c: WorkerConfig) => `c${c.cache}${c.heapMiB ? `_h${c.heapMiB}` : ''}${c.workflowTasks !== 40 ? `_t${c.workflowTasks}` : ''}`;
const chartLabel = (c: WorkerConfig) => `cache ${c.cache}${c.heapMiB ? `, heap ${c.heapMiB} MiB` : ''}`;
const describeConfig = (c: WorkerConfig) =>
  `cache ${c.cache}, ${c.heapMiB ? `--max-old-space-size=${c.heapMiB}` : 'default heap limit'}, ${c.workflowTasks} workflow task slots, ${c.activities} activity slots per provider queue`;

const TASK_QUEUE = 'scale-deliveries';
const RAW_TASK_QUEUE = 'scale-raw-starts'; // no worker polls it
/** Nothing polls the provider during the run: the deliveries wait for signals only. */
const FOLLOW_UP: FollowUpSettings = { quietMs: 24 * 3_600_000, windowGraceMs: 24 * 3_600_000, jitter: 0 };
/** The contract's windows, counts raised far above what the run needs: the simulator enforces them, the worker is told them. */
const LIMITS: Record<CallFamily, RateLimit> = {
  creations: { limit: 1_000_000, windowMs: 60_000 },
  quotes: { limit: 1_000_000, windowMs: 600_000 },
  other: { limit: 1_000_000, windowMs: 60_000 },
};
const ROOT = join(__dirname, '..');

const benchStarted = Date.now();
/** The charts' time origin (performance.now() time). */
const benchT0 = performance.now();
const runSeconds = (t: number) => Number(((t - benchT0) / 1000).toFixed(1));
const progress = (line: string) => process.stderr.write(`[scale ${Math.round((Date.now() - benchStarted) / 1000)}s] ${line}\n`);

function shuffled<T>(xs: T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Prints `line()` every few seconds until stopped. */
function ticker(line: () => string): () => void {
  const t = setInterval(() => progress(line()), PROGRESS_MS);
  return () => clearInterval(t);
}

// ---- /proc --------------------------------------------------------------------------------

interface Memory {
  rssMiB: number;
  hwmMiB: number;
}

function memoryOf(pid: number | undefined): Memory | undefined {
  if (pid === undefined) return undefined;
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(s)?.[1] ?? NaN);
    return { rssMiB: kib('VmRSS') / 1024, hwmMiB: kib('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** User + system CPU seconds a process has used; NaN when it is gone, so sums and differences stay numbers. */
const cpuSecondsOf = (pid: number | undefined): number => processCpuSeconds(pid) ?? NaN;

const mib = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? 'n/a' : `${Math.round(x)} MiB`);

// ---- the worker as a child process ------------------------------------------------------

/** `node --import tsx worker/main.ts` with its memory sampled every second. */
class WorkerProcess {
  readonly child: ChildProcess;
  private output = '';
  warnings = 0;
  exited: string | undefined;
  readonly spawnedAt = performance.now();
  readyAt: number | undefined;
  /** VmRSS over time: [seconds since spawn, MiB]. */
  readonly rssSeries: [number, number][] = [];
  peakRssMiB = 0;
  private readonly sampler: NodeJS.Timeout;
  private readonly ready: Promise<void>;

  constructor(
    readonly config: WorkerConfig,
    env: Record<string, string>,
  ) {
    const flags = [...(config.heapMiB ? [`--max-old-space-size=${config.heapMiB}`] : []), ...EXTRA_WORKER_FLAGS];
    this.child = spawn(process.execPath, [...flags, '--import', 'tsx', join(ROOT, 'worker/main.ts')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.sampler = setInterval(() => this.sample(), 1_000);
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the worker did not start within 120 s:\n${this.output.slice(-3000)}`)), 120_000);
      const take = (chunk: Buffer) => {
        const text = chunk.toString();
        if (WORKER_LOG) appendFileSync(WORKER_LOG, text);
        this.output = (this.output + text).slice(-50_000);
        this.warnings += (text.match(/"level":"(WARN|ERROR)"/g) ?? []).length;
        if (this.readyAt === undefined && /worker: task queue/.test(text)) {
          this.readyAt = performance.now();
          clearTimeout(timer);
          resolve();
        }
      };
      this.child.stdout!.on('data', take);
      this.child.stderr!.on('data', take);
      this.child.once('exit', (code, signal) => {
        this.exited = signal ?? String(code);
        clearTimeout(timer);
        clearInterval(this.sampler);
        reject(new Error(`the worker exited (${this.exited}) before it was ready:\n${this.output.slice(-3000)}`));
      });
    });
    this.ready.catch(() => undefined);
  }

  waitReady(): Promise<void> {
    return this.ready;
  }

  sample(): Memory | undefined {
    const m = memoryOf(this.child.pid);
    if (m) {
      this.rssSeries.push([Number(((performance.now() - this.spawnedAt) / 1000).toFixed(1)), Math.round(m.rssMiB)]);
      this.peakRssMiB = Math.max(this.peakRssMiB, m.hwmMiB);
    }
    return m;
  }

  /** Throws if the worker died: nothing measured after that would mean anything. */
  check(): void {
    if (this.exited !== undefined) throw new Error(`the worker exited (${this.exited}):\n${this.output.slice(-3000)}`);
  }

  tail(): string {
    return this.output.slice(-3000);
  }

  /** SIGTERM, as an orchestrator stops it; SIGKILL after 60 s. Resolves with the seconds it took. */
  async stop(): Promise<number> {
    this.sample();
    clearInterval(this.sampler);
    if (this.exited !== undefined) return 0;
    const t0 = performance.now();
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 60_000);
    await exited;
    clearTimeout(timer);
    return (performance.now() - t0) / 1000;
  }
}

// ---- orders -------------------------------------------------------------------------------

/** A distinct order per delivery (its own recipients and addresses), DESTINATIONS destinations. */
function makeOrder(i: number): DeliveryOrder {
  const { reference_number: _r, ...order } = deliveryRequest({
    destinations: Array.from({ length: DESTINATIONS }, (_, d) =>
      destination(d, {
        location: { last_name: `Recipient ${i}-${d}`, company: '', phone: `+49151${String(10_000_000 + ((i * 7 + d) % 90_000_000)).padStart(8, '0')}`, address: `Skalenweg ${(i % 400) + 1}, ${10_115 + d} Berlin` },
      }),
    ),
  });
  return order;
}

// ---- the benchmark ------------------------------------------------------------------------

export async function scaleBenchmark(): Promise<{ figures: Record<string, number | string>; charts: Record<string, string> }> {
  let server: DevServer | undefined;
  let worker: WorkerProcess | undefined;
  const cleanup: (() => Promise<unknown>)[] = [];
  const killChildren = () => {
    worker?.child.kill('SIGKILL');
    server?.process.kill('SIGKILL');
  };
  let watchdog: NodeJS.Timeout | undefined;
  const onSignal = () => {
    killChildren();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const figures: Record<string, number | string> = {
    deliveries: DELIVERIES,
    destinations_per_delivery: DESTINATIONS,
    pacing: LIMITER,
    payloads: 'encrypted (AES-256-GCM codec, as npm start runs)',
  };
  // The charts' samples: every worker's memory, and each status latency where it was measured.
  const workers: WorkerProcess[] = [];
  const latencySeries: RunSeries[] = [];
  try {
    ({ server, watchdog } = await startBenchServer(progress, TIME_LIMIT_MS, () => worker?.child.kill('SIGKILL')));
    cleanup.unshift(() => server!.stop());
    const sim = createSimulator({ rateLimits: LIMITS, autoAdvanceMs: 0, logCap: 1_000, onError: (m) => progress(`simulator: ${m}`) });
    const { url: simUrl } = await sim.listen(0, '127.0.0.1');
    cleanup.unshift(() => sim.close());

    const payloadKey = generatePayloadKey('scale');
    const dataConverter = dataConverterFromEnv({ DELIVERY_PAYLOAD_KEYS: payloadKey, TEMPORAL_ADDRESS: server.address });
    const connect = async () => {
      const connection = await Connection.connect({ address: server!.address });
      cleanup.unshift(() => connection.close());
      return new Client({ connection, namespace: server!.namespace, dataConverter });
    };
    // One connection per kind of caller, as separate processes would have.
    const startClient = await connect();
    const rawClient = await connect();
    const probe = await connect();

    // 1. Starts.
    const references = Array.from({ length: DELIVERIES }, (_, i) => `SCALE-${i}`);
    Object.assign(figures, await measureStarts(new DeliveryClient({ temporal: startClient, taskQueue: TASK_QUEUE }), rawClient, references, server.process.pid));

    const ms = (l: RateLimit) => `${l.limit}/${l.windowMs}ms`;
    const workerEnv = async (c: WorkerConfig): Promise<Record<string, string>> => {
      const env: Record<string, string> = {};
      // Nothing of the caller's Temporal, provider or worker settings leaks into the run.
      for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(TEMPORAL_|DELIVERY_|PROVIDER_|WORKER_|SIMULATOR_|NODE_OPTIONS$)/.test(k)) env[k] = v;
      return {
        ...env,
        TEMPORAL_ADDRESS: server!.address,
        TEMPORAL_NAMESPACE: server!.namespace,
        DELIVERY_TASK_QUEUE: TASK_QUEUE,
        DELIVERY_API_URL: simUrl,
        DELIVERY_API_KEY: 'sandbox-key',
        DELIVERY_PAYLOAD_KEYS: payloadKey,
        PROVIDER_RATE_LIMITS: `creations=${ms(LIMITS.creations)},quotes=${ms(LIMITS.quotes)},other=${ms(LIMITS.other)}`,
        PROVIDER_PACING: LIMITER,
        WORKER_MAX_CACHED_WORKFLOWS: String(c.cache),
        WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: String(c.workflowTasks),
        WORKER_MAX_CONCURRENT_ACTIVITIES: String(c.activities),
        LOG_LEVEL: 'WARN',
      };
    };
    const startWorker = async (c: WorkerConfig): Promise<WorkerProcess> => {
      const env = await workerEnv(c);
      progress(`starting a worker: ${describeConfig(c)}...`);
      const w = new WorkerProcess(c, env);
      worker = w;
      workers.push(w);
      await w.waitReady();
      const tag = tagOf(c);
      figures[`${tag}_settings`] = describeConfig(c);
      figures[`${tag}_ready_s`] = Number(((w.readyAt! - w.spawnedAt) / 1000).toFixed(1));
      figures[`${tag}_rss_ready_mib`] = Math.round(w.sample()?.rssMiB ?? NaN);
      progress(`worker ready after ${figures[`${tag}_ready_s`]} s, RSS ${mib(w.sample()?.rssMiB)} (peak so far ${mib(w.peakRssMiB)})`);
      return w;
    };
    const stopWorker = async (w: WorkerProcess) => {
      const tag = tagOf(w.config);
      figures[`${tag}_peak_rss_mib`] = Math.round(w.peakRssMiB);
      figures[`${tag}_rss_series`] = JSON.stringify(w.rssSeries.filter((_, i) => i % 10 === 0).map(([t, m]) => [Math.round(t), m]));
      figures[`${tag}_warnings`] = w.warnings;
      progress(`stopping the worker (SIGTERM); its peak RSS was ${mib(w.peakRssMiB)}...`);
      figures[`${tag}_sigterm_to_exit_s`] = Number((await w.stop()).toFixed(1));
    };
    cleanup.unshift(async () => {
      if (worker && worker.exited === undefined) await worker.stop();
    });

    // 2. One worker creates and follows them all.
    const first = await startWorker(WORKERS[0]!);
    Object.assign(figures, await waitFollowing(first, sim, probe, server, references));
    figures[`${tagOf(first.config)}_rss_after_creation_mib`] = Math.round(first.sample()?.rssMiB ?? NaN);
    figures[`${tagOf(first.config)}_peak_rss_creation_mib`] = Math.round(first.peakRssMiB);
    Object.assign(figures, await settle(first, server));

    const deliveryIds = new Map<string, string>();
    for (const d of sim.deliveries()) if (d.delivery.reference_number) deliveryIds.set(d.delivery.reference_number, d.delivery.id);
    const measured = new Set<string>();
    const pick = (n: number) => {
      const candidates = references.filter((r) => !measured.has(r));
      const sample = shuffled(candidates.length >= n ? candidates : references).slice(0, n);
      sample.forEach((r) => measured.add(r));
      return sample;
    };
    // 3 and 4.
    const measure = async (w: WorkerProcess) => {
      const tag = tagOf(w.config);
      Object.assign(figures, prefixed(tag, await statusLatency(w, sim, probe, pick(SAMPLES), deliveryIds, false, latencySeries)));
      Object.assign(figures, prefixed(`${tag}_cached`, await statusLatency(w, sim, probe, pick(HIT_SAMPLES), deliveryIds, true, latencySeries)));
      Object.assign(figures, prefixed(tag, await signalThroughput(w, probe, references, deliveryIds, SIGNALS, 'stale-status signals to random deliveries')));
      figures[`${tag}_rss_end_mib`] = Math.round(w.sample()?.rssMiB ?? NaN);
    };
    await measure(first);

    // 5. Further configurations, each with a fresh worker.
    for (const config of WORKERS.slice(1)) {
      await stopWorker(worker!);
      const w = await startWorker(config);
      const tag = tagOf(config);
      const warm = Math.min(config.cache, references.length);
      if (warm > 0) Object.assign(figures, prefixed(`${tag}_warm`, await signalThroughput(w, probe, shuffled(references).slice(0, warm), deliveryIds, warm, `warming: a signal to ${warm} random deliveries (each a replay on the fresh worker)`)));
      figures[`${tag}_rss_after_warm_mib`] = Math.round(w.sample()?.rssMiB ?? NaN);
      await measure(w);
    }

    // 6. Stop the worker, terminate everything.
    await stopWorker(worker!);
    figures.dev_server_rss_end_mib = Math.round(memoryOf(server.process.pid)?.rssMiB ?? NaN);
    figures.dev_server_peak_rss_mib = Math.round(memoryOf(server.process.pid)?.hwmMiB ?? NaN);
    const t0 = performance.now();
    const ids = [...references.map(deliveryWorkflowId), ...Array.from({ length: RAW_STARTS }, (_, i) => rawWorkflowId(i))];
    let terminated = 0;
    const stopTick = ticker(() => `terminated ${terminated}/${ids.length}`);
    progress(`terminating ${ids.length} workflows...`);
    await pool(ids, 64, async (id) => {
      await probe.workflow
        .getHandle(id)
        .terminate('scale benchmark over')
        .catch((e: Error) => {
          if (!/not found|already completed/i.test(e.message)) throw e;
        });
      terminated++;
    });
    stopTick();
    figures.terminated = terminated;
    figures.query_timeouts_retried = queryTimeouts;
    figures.terminate_s = Number(((performance.now() - t0) / 1000).toFixed(1));
    figures.run_minutes = Number(((Date.now() - benchStarted) / 60_000).toFixed(1));
    const rss = workers.map((w) => ({ label: chartLabel(w.config), points: w.rssSeries.map(([t, m]) => [runSeconds(w.spawnedAt) + t, m] as const) }));
    return { figures, charts: scaleCharts(rss, latencySeries) };
  } finally {
    for (const step of cleanup) await step().catch((e: Error) => progress(`cleanup: ${e.message}`));
    clearTimeout(watchdog);
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

/**
 * After creation the dev server and the worker still work off its tail (visibility, timers,
 * sticky queues) for a while; latency measured then is that of a server still busy with 10,000
 * creations, not of 10,000 open deliveries. Wait until both use under a tenth of a core over 5 s
 * (at most SETTLE_MAX_S), and say how long that took and what they used at first.
 */
async function settle(w: WorkerProcess, server: DevServer): Promise<Record<string, number>> {
  const t0 = performance.now();
  let first: number | undefined;
  for (;;) {
    const before = { worker: cpuSecondsOf(w.child.pid), server: cpuSecondsOf(server.process.pid) };
    await sleep(5_000);
    const use = Math.max(cpuSecondsOf(w.child.pid) - before.worker, cpuSecondsOf(server.process.pid) - before.server) / 5;
    first ??= use;
    const waited = (performance.now() - t0) / 1000;
    progress(`settling after creation: busiest of worker and dev server at ${(use * 100).toFixed(0)}% of a core over 5 s (${waited.toFixed(0)} s)`);
    if (use < 0.1 || waited >= SETTLE_MAX_S) {
      return { settle_s: Math.round(waited), settle_first_5s_core_use: Number(first.toFixed(2)), settle_last_5s_core_use: Number(use.toFixed(2)) };
    }
  }
}

function prefixed(tag: string, f: Record<string, number | string>): Record<string, number | string> {
  return Object.fromEntries(Object.entries(f).map(([k, v]) => [`${tag}_${k}`, v]));
}

const rawWorkflowId = (i: number) => `raw-start:${i}`;

/**
 * 1. DeliveryClient.startDelivery against raw workflow.start, in alternating chunks, no worker
 * running. Also the CPU each side costs this process (the client) and the dev server, per start.
 */
async function measureStarts(deliveries: DeliveryClient, raw: Client, references: string[], serverPid: number | undefined): Promise<Record<string, number | string>> {
  progress(`preparing ${references.length} orders of ${DESTINATIONS} destinations...`);
  const orders = references.map((_, i) => makeOrder(i));
  const rawInput = (i: number): DeliveryWorkflowInput => ({ reference: `RAW-${i}`, order: orders[i % orders.length]!, followUp: FOLLOW_UP });
  const chunks = Math.max(1, Math.min(START_CHUNKS, references.length, RAW_STARTS));
  const cut = (n: number, k: number) => Array.from({ length: n }, (_, i) => i).filter((i) => Math.floor((i * chunks) / n) === k);
  const side = () => ({ started: 0, ms: 0, clientCpuS: 0, serverCpuS: 0, rates: [] as number[] });
  const client = side();
  const plain = side();
  const stopTick = ticker(() => `started ${client.started}/${references.length} deliveries, ${plain.started}/${RAW_STARTS} raw starts`);
  progress(`starting ${references.length} deliveries (DeliveryClient.startDelivery) and ${RAW_STARTS} raw workflow.start calls, concurrency ${START_CONCURRENCY}, ${chunks} alternating chunks, no worker running...`);
  const timed = async (s: ReturnType<typeof side>, indexes: number[], one: (i: number) => Promise<void>) => {
    const cpu0 = process.cpuUsage();
    const server0 = cpuSecondsOf(serverPid);
    const ms = (indexes.length / (await pool(indexes, START_CONCURRENCY, async (i) => {
      await one(i);
      s.started++;
    }))) * 1000;
    const cpu = process.cpuUsage(cpu0);
    s.clientCpuS += (cpu.user + cpu.system) / 1e6;
    s.serverCpuS += cpuSecondsOf(serverPid) - server0;
    s.ms += ms;
    s.rates.push(indexes.length / (ms / 1000));
  };
  const viaClient = (k: number) =>
    timed(client, cut(references.length, k), async (i) => {
      const got = await deliveries.startDelivery(orders[i]!, { reference: references[i]!, followUp: FOLLOW_UP });
      if (got.alreadyStarted) throw new Error(`${references[i]} was started already`);
    });
  const viaRaw = (k: number) =>
    timed(plain, cut(RAW_STARTS, k), async (i) => {
      await raw.workflow.start('delivery', { taskQueue: RAW_TASK_QUEUE, workflowId: rawWorkflowId(i), args: [rawInput(i)] });
    });
  for (let k = 0; k < chunks; k++) {
    if (k % 2 === 0) {
      await viaClient(k);
      await viaRaw(k);
    } else {
      await viaRaw(k);
      await viaClient(k);
    }
  }
  stopTick();
  const deliveryRate = references.length / (client.ms / 1000);
  const rawRate = RAW_STARTS / (plain.ms / 1000);
  const chunkRatios = client.rates.map((r, k) => r / plain.rates[k]!).sort((a, b) => a - b);
  const perStart = (cpuS: number, n: number) => Number(((cpuS * 1000) / n).toFixed(2));
  const f = {
    start_concurrency: START_CONCURRENCY,
    raw_starts: RAW_STARTS,
    starts_per_second: Math.round(deliveryRate),
    raw_starts_per_second: Math.round(rawRate),
    start_ratio: Number((deliveryRate / rawRate).toFixed(3)),
    start_ratio_range_over_chunks: `${chunkRatios[0]!.toFixed(2)} to ${chunkRatios.at(-1)!.toFixed(2)}`,
    start_client_cpu_ms_per_start: perStart(client.clientCpuS, references.length),
    raw_start_client_cpu_ms_per_start: perStart(plain.clientCpuS, RAW_STARTS),
    start_dev_server_cpu_ms_per_start: perStart(client.serverCpuS, references.length),
    raw_start_dev_server_cpu_ms_per_start: perStart(plain.serverCpuS, RAW_STARTS),
  };
  progress(
    `starts: DeliveryClient ${deliveryRate.toFixed(0)}/s, raw ${rawRate.toFixed(0)}/s, ratio ${f.start_ratio} (${f.start_ratio_range_over_chunks} over the chunks); ` +
      `CPU per start: client ${f.start_client_cpu_ms_per_start} vs ${f.raw_start_client_cpu_ms_per_start} ms, dev server ${f.start_dev_server_cpu_ms_per_start} vs ${f.raw_start_dev_server_cpu_ms_per_start} ms`,
  );
  return f;
}

/** 2. Until the simulator holds every delivery and every workflow follows its delivery. */
async function waitFollowing(w: WorkerProcess, sim: Simulator, probe: Client, server: DevServer, references: string[]): Promise<Record<string, number | string>> {
  const t0 = performance.now();
  const cpu0 = { worker: cpuSecondsOf(w.child.pid), server: cpuSecondsOf(server.process.pid), bench: process.cpuUsage() };
  const deadline = t0 + CREATION_LIMIT_MS;
  const created = () => sim.context.store.size;
  const stopTick = ticker(() => {
    const m = w.sample();
    return `created ${created()}/${references.length} at the simulator, worker RSS ${mib(m?.rssMiB)} (peak ${mib(m?.hwmMiB)}), dev server RSS ${mib(memoryOf(server.process.pid)?.rssMiB)}`;
  });
  progress(`the worker quotes, creates and follows ${references.length} deliveries...`);
  try {
    let createdAt: number | undefined;
    let followingAt: number | undefined;
    while (followingAt === undefined) {
      w.check();
      if (performance.now() > deadline) throw new Error(`only ${created()} of ${references.length} deliveries were created within ${CREATION_LIMIT_MS / 60_000} min`);
      if (createdAt === undefined && created() >= references.length) createdAt = performance.now();
      if (createdAt !== undefined) {
        // Visibility: DeliveryStatus is set in the same workflow task that enters phase 'following'.
        const { count } = await probe.workflow.count(`WorkflowType = 'delivery' AND TaskQueue = '${TASK_QUEUE}' AND ExecutionStatus = 'Running' AND DeliveryStatus = 'CREATED'`);
        if (count >= references.length) followingAt = performance.now();
      }
      if (followingAt === undefined) await sleep(500);
    }
    const cpu = {
      worker: cpuSecondsOf(w.child.pid) - cpu0.worker,
      server: cpuSecondsOf(server.process.pid) - cpu0.server,
      bench: (() => {
        const u = process.cpuUsage(cpu0.bench);
        return (u.user + u.system) / 1e6;
      })(),
    };
    const seconds = (followingAt - t0) / 1000;
    progress(
      `all ${references.length} created after ${((createdAt! - t0) / 1000).toFixed(1)} s and following after ${seconds.toFixed(1)} s; CPU seconds meanwhile: worker ${cpu.worker.toFixed(0)}, dev server ${cpu.server.toFixed(0)}, simulator and clients ${cpu.bench.toFixed(0)}`,
    );

    const sample = shuffled(references).slice(0, CHECK_SAMPLE);
    let ok = 0;
    await pool(sample, 16, async (reference) => {
      const s = await probe.workflow.getHandle(deliveryWorkflowId(reference)).query(statusQuery);
      if (s.phase !== 'following' || !s.deliveryId || s.status !== 'CREATED' || s.destinations.length !== DESTINATIONS) throw new Error(`${reference} is not following its delivery: phase ${s.phase}, status ${s.status}`);
      ok++;
    });
    progress(`checked ${ok} random deliveries with the status query: all following, ${DESTINATIONS} destinations each; the simulator holds ${created()} deliveries`);
    return {
      created_s: Number(((createdAt! - t0) / 1000).toFixed(1)),
      all_following_s: Number(seconds.toFixed(1)),
      created_per_second: Math.round(references.length / seconds),
      simulator_deliveries: created(),
      checked_with_status_query: ok,
      creation_cpu_s_worker: Math.round(cpu.worker),
      creation_cpu_s_dev_server: Math.round(cpu.server),
      creation_cpu_s_simulator_and_clients: Math.round(cpu.bench),
      dev_server_rss_after_creation_mib: Math.round(memoryOf(server.process.pid)?.rssMiB ?? NaN),
    };
  } finally {
    stopTick();
  }
}

let eventSeq = 0;

/**
 * 3. Signal → `status` query shows it, one delivery at a time. With `cached`, each delivery gets a
 * stale signal first (waited for), so that it is certainly in the worker's cache when measured.
 */
async function statusLatency(w: WorkerProcess, sim: Simulator, probe: Client, sample: string[], ids: Map<string, string>, cached: boolean, series: RunSeries[]): Promise<Record<string, number | string>> {
  const what = cached ? 'status latency, deliveries just touched (in the cache)' : 'status latency, random open deliveries';
  progress(`${what}: ${sample.length}, one at a time (the simulator advances, the statusChanged signal as the bridge sends it, the status query until it shows)...`);
  const total: number[] = [];
  const signalled: number[] = [];
  const points: [number, number][] = [];
  series.push({ label: `${chartLabel(w.config)}${cached ? ', just touched' : ', random'}`, points });
  let done = 0;
  const stopTick = ticker(() => `${what}: ${done}/${sample.length}, worker RSS ${mib(w.sample()?.rssMiB)}`);
  try {
    for (const reference of sample) {
      w.check();
      const deliveryId = ids.get(reference)!;
      const handle = probe.workflow.getHandle(deliveryWorkflowId(reference));
      if (cached) {
        await handle.signal(statusChangedSignal, staleChange(deliveryId));
        await queryPatiently(handle, performance.now() + 30_000);
      }
      const record = sim.advance(deliveryId);
      const change: StatusChange = { deliveryId, status: record.status as StatusChange['status'], eventId: `evt_scale${++eventSeq}`, occurredAt: record.updated_at, source: 'webhook' };
      const t0 = performance.now();
      await handle.signal(statusChangedSignal, change);
      signalled.push(performance.now() - t0);
      for (;;) {
        const s = await queryPatiently(handle, t0 + 30_000);
        if (s.status === record.status) break;
        if (performance.now() - t0 > 30_000) throw new Error(`${reference} did not show ${record.status} within 30 s (shows ${s.status})`);
      }
      total.push(performance.now() - t0);
      points.push([runSeconds(t0), Number(total.at(-1)!.toFixed(1))]);
      done++;
    }
  } finally {
    stopTick();
  }
  total.sort((a, b) => a - b);
  signalled.sort((a, b) => a - b);
  const f = {
    status_samples: total.length,
    status_p50_ms: percentile(total, 0.5, 1),
    status_p99_ms: percentile(total, 0.99, 1),
    status_max_ms: Number(total.at(-1)!.toFixed(1)),
    signal_call_p50_ms: percentile(signalled, 0.5, 1),
    signal_call_p99_ms: percentile(signalled, 0.99, 1),
  };
  progress(`${what}: p50 ${f.status_p50_ms} ms, p99 ${f.status_p99_ms} ms, max ${f.status_max_ms} ms (the signal call alone: p50 ${f.signal_call_p50_ms}, p99 ${f.signal_call_p99_ms} ms)`);
  return f;
}

/**
 * The `status` query, asked again when the server gives up waiting for the worker (a query
 * times out when the workflow's pending task is not handled in time): counted, not fatal,
 * until `deadline` (performance.now() time).
 */
async function queryPatiently(handle: WorkflowHandle, deadline: number): Promise<DeliveryState> {
  for (;;) {
    try {
      return await handle.query(statusQuery);
    } catch (err) {
      if (performance.now() > deadline || !(err instanceof ServiceError)) throw err;
      queryTimeouts++;
    }
  }
}

let queryTimeouts = 0;

/** The status the delivery has had since its creation: a real signal and workflow task, no change, no activity. */
function staleChange(deliveryId: string): StatusChange {
  return { deliveryId, status: 'CREATED', eventId: `evt_scale${++eventSeq}`, occurredAt: new Date().toISOString(), source: 'webhook' };
}

/**
 * 4. Stale-status signals at a fixed concurrency, until the worker has handled them all (the
 * rate is what the worker keeps up with, not only what the server accepts). Picks `count` of
 * `targets` at random, or all of them in order when the counts match.
 */
async function signalThroughput(w: WorkerProcess, probe: Client, targets: string[], ids: Map<string, string>, count: number, what: string): Promise<Record<string, number | string>> {
  const picks = targets.length === count ? targets : Array.from({ length: count }, () => targets[Math.floor(Math.random() * targets.length)]!);
  progress(`${what}: ${count} signals, concurrency ${SIGNAL_CONCURRENCY}...`);
  let sent = 0;
  let state = 'sent';
  const stopTick = ticker(() => `${what}: ${state} ${sent}/${count}, worker RSS ${mib(w.sample()?.rssMiB)} (peak ${mib(w.peakRssMiB)})`);
  const latencies: number[] = [];
  const cpu0 = cpuSecondsOf(w.child.pid);
  const t0 = performance.now();
  try {
    await pool(picks, SIGNAL_CONCURRENCY, async (reference) => {
      const t = performance.now();
      await probe.workflow.getHandle(deliveryWorkflowId(reference)).signal(statusChangedSignal, staleChange(ids.get(reference)!));
      latencies.push(performance.now() - t);
      sent++;
    });
    state = 'all sent, waiting for the worker to handle them:';
    // Signals are handled in about the order they came; a query answers after the pending workflow task.
    await pool(picks.slice(-SIGNAL_CONCURRENCY), SIGNAL_CONCURRENCY, async (r) => {
      w.check();
      await queryPatiently(probe.workflow.getHandle(deliveryWorkflowId(r)), performance.now() + 300_000);
    });
  } finally {
    stopTick();
  }
  w.check();
  const seconds = (performance.now() - t0) / 1000;
  const cpuMs = ((cpuSecondsOf(w.child.pid) - cpu0) * 1000) / count;
  latencies.sort((a, b) => a - b);
  const rate = count / seconds;
  progress(`${what}: ${rate.toFixed(0)}/s handled, worker CPU ${cpuMs.toFixed(1)} ms per signal, worker RSS ${mib(w.sample()?.rssMiB)}`);
  return { signals_per_second: Math.round(rate), worker_cpu_ms_per_signal: Number(cpuMs.toFixed(1)) };
}
