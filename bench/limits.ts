/**
 * `npm run bench -- limits`: pacing at the provider's limits, everything real on 127.0.0.1:
 * its own Temporal dev server (with --cluster: the Temporal cluster of `npm run cluster`), the
 * simulator with its time scale shrinking the windows (strict rolling windows, per key), delivery
 * workers as real processes (LIMITS_BENCH_WORKERS: 2 on the dev server, 4 on the cluster).
 *
 * Phases (LIMITS_BENCH_PHASES=gate,task-queue,naive,poison; all by default), each with
 * its own simulator, key and task queue:
 *  - gate:       a backlog of ORDERS started at once, through the pacing gate (the default);
 *  - task-queue: the same backlog through Temporal's task-queue rate limit alone, set on the
 *                server with `temporal task-queue config set --queue-rps-limit`;
 *  - naive:      the same orders sent straight to the API client, retry-on-429 with exponential
 *                backoff, no Temporal;
 *  - poison:     POISON_ORDERS orders started at once, 5 of them poison (two Unicode references,
 *                one with a newline, one the provider answers 500 forever, one it answers 422):
 *                the others' drain against their own least time, and how each poison order ends.
 * Crashes and outages are correctness properties, asserted by test/temporal/gate-survival.test.ts.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { DeliveryClient } from '../client/delivery-client';
import { ProviderClient } from '../provider/client';
import { RateLimitedError, ProviderUnavailableError } from '../provider/errors';
import { PROVIDER_RATE_LIMITS, QUOTE_VALIDITY_MS, type CallFamily, type RateLimit } from '../provider/limits';
import { startBenchCluster, startBenchServer } from './temporal';
import { keyFingerprint } from '../simulator/auth';
import { createSimulator, type Simulator, type SimulatorOptions } from '../simulator/server';
import { deliveryRequest, destination } from '../test/fixtures/orders';
import { taskQueueRatePerSecond } from '../worker/pacing-config';
import type { DeliveryOrder, DeliveryState } from '../contract/delivery-types';
import { quoteFingerprint } from '../workflows/quote-fingerprint';
import { deliveryWorkflowId } from '../contract/workflow-ids';
import { providerTaskQueues } from '../contract/task-queues';
import { limitsCharts, type BacklogSamples } from './limits-charts';
import { backlogCounter, leastCreationTimes, leastDrainMs, median, round, windowUse } from './limits-figures';
import type { BenchmarkOutput } from './measure';
import { ENTRY, ProcessGroup, workflowBundleFile, type RunningProcess } from '../scripts/processes';

const num = (name: string, fallback: number) => (process.env[name] ? Number(process.env[name]) : fallback);
const SCALE = num('LIMITS_BENCH_SCALE', 10);
const ORDERS = num('LIMITS_BENCH_ORDERS', 300);
const FOOD_EVERY = 4; // a quarter of the orders carry food
const TWIN_EVERY = 10; // every tenth order repeats the previous one's inputs (a re-submitted order)
const TIME_LIMIT_MS = num('LIMITS_BENCH_TIME_LIMIT_MIN', 40) * 60_000;
const POISON_ORDERS = num('LIMITS_BENCH_POISON_ORDERS', 200);
const PHASES = (process.env.LIMITS_BENCH_PHASES ?? 'gate,task-queue,naive,poison').split(',');
/** `npm run bench -- limits --cluster`: on the Temporal cluster of `npm run cluster` instead of a dev server (read when the run starts). */
const onCluster = () => process.env.BENCH_TEMPORAL === 'cluster' || process.argv.slice(3).includes('--cluster');
const workerCount = () => num('LIMITS_BENCH_WORKERS', onCluster() ? 4 : 2);

/** The provider's limits in real time at this scale: what the simulator enforces and the workers are told. */
const LIMITS: Record<CallFamily, RateLimit> = Object.fromEntries(
  Object.entries(PROVIDER_RATE_LIMITS).map(([f, l]) => [f, { limit: l.limit, windowMs: l.windowMs / SCALE }]),
) as Record<CallFamily, RateLimit>;

const progress = (line: string) => process.stderr.write(`[limits ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const run = promisify(execFile);

interface Order {
  reference: string;
  order: DeliveryOrder;
  fingerprint: string;
}

/** ORDERS orders: a quarter food, every tenth identical to the one before (same inputs, new reference). */
function makeOrders(prefix: string, count: number): Order[] {
  const out: Order[] = [];
  for (let i = 0; i < count; i++) {
    const n = i % TWIN_EVERY === TWIN_EVERY - 1 ? i - 1 : i;
    const { reference_number: _r, ...order } = deliveryRequest({
      is_food: n % FOOD_EVERY === 0,
      desired_pickup_time: new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, 'Z'),
      destinations: [destination(0, { location: { last_name: 'Bench', company: '', phone: '+4915112345600', address: `Benchweg ${n + 1}, 10115 Berlin` } })],
    });
    // Twins share the earlier order's exact inputs.
    const same = n !== i ? out[n]!.order : order;
    out.push({ reference: `${prefix}-${i}`, order: same, fingerprint: quoteFingerprint(same) });
  }
  return out;
}

interface Context {
  server: { address: string; namespace: string };
  temporal: Client;
  cli: string;
  bundle: string;
}

async function newSimulator(options: SimulatorOptions): Promise<{ sim: Simulator; url: string }> {
  const sim = createSimulator({ timeScale: SCALE, onError: (m) => progress(`simulator: ${m}`), ...options });
  const { url } = await sim.listen(0, '127.0.0.1');
  return { sim, url };
}

function workerEnv(ctx: Context, o: { taskQueue: string; url: string; key: string; pacing: 'gate' | 'task-queue'; callTimeoutMs?: number }): Record<string, string> {
  const ms = (l: RateLimit) => `${l.limit}/${l.windowMs}ms`;
  return {
    TEMPORAL_ADDRESS: ctx.server.address,
    TEMPORAL_NAMESPACE: ctx.server.namespace,
    DELIVERY_TASK_QUEUE: o.taskQueue,
    DELIVERY_API_URL: o.url,
    DELIVERY_API_KEY: o.key,
    DELIVERY_API_TIMEOUT_MS: String(Math.min(10_000, (o.callTimeoutMs ?? 10_000) - 500)),
    PROVIDER_RATE_LIMITS: `creations=${ms(LIMITS.creations)},quotes=${ms(LIMITS.quotes)},other=${ms(LIMITS.other)}`,
    PROVIDER_PACING: o.pacing,
    // Both are provider-time quantities: the slot margin and the least life a shared quote must have left.
    PROVIDER_PACING_MARGIN_MS: String(Math.round(250 / SCALE)),
    PROVIDER_QUOTE_MIN_REMAINING_MS: String(Math.round(60_000 / SCALE)),
    PROVIDER_CALL_TIMEOUT_MS: String(o.callTimeoutMs ?? 10_000),
    WORKER_WORKFLOW_BUNDLE: ctx.bundle,
  };
}

const processes = new ProcessGroup({ maxOutputChars: 200_000 });
async function startWorkers(ctx: Context, env: Record<string, string>, count = workerCount()): Promise<RunningProcess[]> {
  return Promise.all(Array.from({ length: count }, (_, i) => processes.start({ name: `worker-${i + 1}`, ...ENTRY.worker, env: { LOG_LEVEL: 'WARN', ...env } })));
}

async function startAll(client: DeliveryClient, orders: Order[], quietMs: number): Promise<Map<string, number>> {
  const startedAt = new Map<string, number>();
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < orders.length) {
        const o = orders[next++]!;
        startedAt.set(o.reference, Date.now());
        await client.startDelivery(o.order, { reference: o.reference, followUp: { quietMs, jitter: 0.2 } });
      }
    }),
  );
  return startedAt;
}

/** Waits until the simulator holds a delivery for each reference (or the deadline passes). */
async function waitCreated(sim: Simulator, references: string[], deadlineMs: number, label: string): Promise<Map<string, number>> {
  const wanted = new Set(references);
  let last = -1;
  for (;;) {
    const created = new Map<string, number>();
    for (const d of sim.deliveries()) if (wanted.has(d.delivery.reference_number ?? '') && !created.has(d.delivery.reference_number!)) created.set(d.delivery.reference_number!, Date.parse(d.delivery.created_at));
    if (created.size !== last) {
      last = created.size;
      progress(`${label}: ${created.size}/${references.length} created`);
    }
    if (created.size === references.length || Date.now() > deadlineMs) return created;
    await sleep(500);
  }
}

interface CallLog {
  quotes: number[];
  quotesRefused: number;
  creations: number[];
  creationsRefused: number;
  all: { at: number; path: string; status: number }[];
}

function callLog(sim: Simulator, key: string): CallLog {
  const fp = keyFingerprint(key);
  const mine = sim.requestLog().filter((e) => e.key_fingerprint === fp || e.key_fingerprint === null);
  const at = (e: { time: string }) => Date.parse(e.time);
  const posts = (path: string) => mine.filter((e) => e.method === 'POST' && e.path === path);
  return {
    quotes: posts('/v1/quotes').filter((e) => e.status === 200).map(at),
    quotesRefused: posts('/v1/quotes').filter((e) => e.status === 429).length,
    creations: posts('/v1/deliveries').filter((e) => e.status === 201 || e.status === 200).map(at),
    creationsRefused: posts('/v1/deliveries').filter((e) => e.status === 429).length,
    all: mine.map((e) => ({ at: at(e), path: e.path, status: e.status })),
  };
}

/** When each order got its price: the workflow timeline's quote note (its own quote, a shared one or a carried one). */
async function quotedTimes(temporal: Client, orders: Order[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const o of orders) {
    // The provider's own time of quoting, from its quote's expiry: the gate creates right after a
    // quote and the order hears of both at once, so the order's timeline cannot tell.
    const state = (await temporal.workflow.getHandle(deliveryWorkflowId(o.reference)).query('status')) as DeliveryState;
    if (state.quote) out.set(o.reference, Date.parse(state.quote.expires_at) - QUOTE_VALIDITY_MS / SCALE);
  }
  return out;
}

interface BacklogFigures {
  /** From the first start to the first quote call: how long the system took to begin. */
  firstCallS: number;
  /** From the first quote call to the one that filled the first quote window: the ramp, which every later window inherits. */
  firstWindowSpreadS: number;
  /**
   * When the 1st, 20th, 50th, 70th and 100th quote went out, from the first start: each quote slot
   * is free again one window after its use, so the first window's pace recurs in the later ones
   * (the third needs 70 quotes).
   */
  firstWindowQuoteAtS: string;
  /** Drain measured from the first provider call instead of the first start. */
  drainFromFirstCallRatio: number;
  creationUse: number;
  quoteUse: number;
  refused429: number;
  drainRatio: number;
  drainS: number;
  quotesPerDelivery: number;
  foodWaitRatio: number;
  created: number;
}

/** The figures the issue asks for, from the simulator's log and the orders' own times. */
function backlogFigures(orders: Order[], startedAt: Map<string, number>, quotedAt: Map<string, number>, createdAt: Map<string, number>, log: CallLog): BacklogFigures {
  const t0 = Math.min(...startedAt.values());
  const creationSpans = orders.filter((o) => createdAt.has(o.reference)).map((o) => ({ from: Math.max(quotedAt.get(o.reference) ?? 0, startedAt.get(o.reference)!), to: createdAt.get(o.reference)! }));
  // An order needs a quote call unless an identical one asked first: count distinct fingerprints waiting.
  const firstOfKind = new Map<string, Order>();
  for (const o of orders) if (!firstOfKind.has(o.fingerprint)) firstOfKind.set(o.fingerprint, o);
  const quoteSpans = [...firstOfKind.values()].map((o) => ({ from: startedAt.get(o.reference)!, to: quotedAt.get(o.reference) ?? Infinity }));
  const creationUse = windowUse(log.creations, backlogCounter(creationSpans), LIMITS.creations);
  const quoteUse = windowUse(log.quotes, backlogCounter(quoteSpans), LIMITS.quotes);
  const lastCreation = Math.max(...createdAt.values());
  const least = leastDrainMs(orders, LIMITS.quotes, LIMITS.creations);
  const wait = (food: boolean) => median(orders.filter((o) => o.order.is_food === food && createdAt.has(o.reference)).map((o) => createdAt.get(o.reference)! - startedAt.get(o.reference)!));
  const quotes = [...log.quotes].sort((a, b) => a - b);
  const firstCall = quotes[0] ?? NaN;
  return {
    firstCallS: round((firstCall - t0) / 1000, 2),
    firstWindowSpreadS: round(((quotes[Math.min(quotes.length, LIMITS.quotes.limit) - 1] ?? NaN) - firstCall) / 1000, 2),
    firstWindowQuoteAtS: [1, 20, 50, 70, 100].map((n) => `${n}: ${round(((quotes[n - 1] ?? NaN) - t0) / 1000, 1)}`).join(', '),
    drainFromFirstCallRatio: round((lastCreation - firstCall) / least),
    creationUse: round(creationUse.ratio),
    quoteUse: round(quoteUse.ratio),
    refused429: log.creationsRefused + log.quotesRefused,
    drainS: round((lastCreation - t0) / 1000, 1),
    drainRatio: round((lastCreation - t0) / least),
    quotesPerDelivery: round(log.quotes.length / Math.max(1, log.creations.length)),
    foodWaitRatio: round(wait(true) / wait(false)),
    created: createdAt.size,
  };
}

/** Each backlog approach's samples, for the charts. */
const samples: BacklogSamples[] = [];
function keepSamples(label: string, startedAt: Map<string, number>, createdAt: Map<string, number>, log: CallLog): void {
  samples.push({ label, t0: Math.min(...startedAt.values()), quotes: log.quotes, creations: log.creations, createdAt: [...createdAt.values()] });
}

async function terminateAll(temporal: Client, references: string[]): Promise<void> {
  await Promise.all(references.map((r) => temporal.workflow.getHandle(deliveryWorkflowId(r)).terminate('benchmark over').catch(() => undefined)));
}

/** The backlog through our workers, through the pacing gate or the engine's task-queue limit. */
async function backlogPhase(ctx: Context, limiter: 'gate' | 'task-queue'): Promise<BacklogFigures> {
  const key = `bench-${limiter}`;
  const taskQueue = `limits-${limiter}`;
  const { sim, url } = await newSimulator({ apiKeys: [key] });
  if (limiter === 'task-queue') await setServerQueueLimits(ctx, taskQueue);
  const workers = await startWorkers(ctx, workerEnv(ctx, { taskQueue, url, key, pacing: limiter }));
  const client = new DeliveryClient({ temporal: ctx.temporal, taskQueue });
  const orders = makeOrders(`${limiter}-${Date.now().toString(36)}`, ORDERS);
  const least = leastDrainMs(orders, LIMITS.quotes, LIMITS.creations);
  progress(`${limiter}: ${orders.length} orders (${orders.filter((o) => o.order.is_food).length} food, ${new Set(orders.map((o) => o.fingerprint)).size} distinct), least drain ${(least / 1000).toFixed(1)} s`);
  try {
    const startedAt = await startAll(client, orders, 24 * 3_600_000);
    const createdAt = await waitCreated(sim, orders.map((o) => o.reference), Date.now() + 3 * least + 60_000, limiter);
    const quotedAt = await quotedTimes(ctx.temporal, orders);
    const log = callLog(sim, key);
    const figures = backlogFigures(orders, startedAt, quotedAt, createdAt, log);
    keepSamples(limiter === 'gate' ? 'pacing gate' : 'task-queue limit', startedAt, createdAt, log);
    progress(`${limiter}: ${JSON.stringify(figures)}`);
    return figures;
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await terminateAll(ctx.temporal, orders.map((o) => o.reference));
    await sim.close();
  }
}

/** The engine's own limit, on the server: one value for all workers, which no worker option overrides. */
async function setServerQueueLimits(ctx: Context, taskQueue: string): Promise<void> {
  const queues = providerTaskQueues(taskQueue);
  for (const family of ['creations', 'quotes', 'other'] as const) {
    const rps = taskQueueRatePerSecond(LIMITS[family]);
    await run(ctx.cli, [
      'task-queue', 'config', 'set', '--address', ctx.server.address, '--namespace', ctx.server.namespace,
      '--task-queue', queues[family], '--task-queue-type', 'activity', '--queue-rps-limit', String(rps), '--queue-rps-limit-reason', 'provider limit (bench)',
    ]);
    progress(`task-queue: ${queues[family]} limited to ${rps.toFixed(4)}/s on the server`);
  }
}

/** The same orders straight to the API, no Temporal: retry on 429 with exponential backoff (no jitter, Retry-After ignored). */
async function naivePhase(): Promise<BacklogFigures> {
  const key = 'bench-naive';
  const { sim, url } = await newSimulator({ apiKeys: [key] });
  const api = new ProviderClient({ baseUrl: url, apiKey: key, connections: 64 });
  const orders = makeOrders(`naive-${Date.now().toString(36)}`, ORDERS);
  const least = leastDrainMs(orders, LIMITS.quotes, LIMITS.creations);
  const deadline = Date.now() + 3 * least + 60_000;
  const base = 1_000 / SCALE;
  const cap = 60_000 / SCALE;
  const withRetry = async <T>(call: () => Promise<T>): Promise<T | undefined> => {
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      try {
        return await call();
      } catch (err) {
        if (!(err instanceof RateLimitedError || err instanceof ProviderUnavailableError)) throw err;
        await sleep(Math.min(cap, base * 2 ** attempt));
      }
    }
    return undefined;
  };
  const startedAt = new Map<string, number>();
  const quotedAt = new Map<string, number>();
  progress(`naive: ${orders.length} orders at once`);
  try {
    await Promise.all(
      orders.map(async (o) => {
        startedAt.set(o.reference, Date.now());
        const body = { ...o.order, reference_number: o.reference };
        if (!(await withRetry(() => api.quote(body)))) return;
        quotedAt.set(o.reference, Date.now());
        await withRetry(() => api.createDelivery(body, { idempotencyKey: `naive:${o.reference}` }));
      }),
    );
    const createdAt = await waitCreated(sim, orders.map((o) => o.reference), Date.now(), 'naive');
    const log = callLog(sim, key);
    const figures = backlogFigures(orders, startedAt, quotedAt, createdAt, log);
    keepSamples('naive client', startedAt, createdAt, log);
    progress(`naive: ${JSON.stringify(figures)}`);
    return figures;
  } finally {
    await api.close();
    await sim.close();
  }
}

/**
 * POISON_ORDERS orders at once, five of them poison, started first: two Unicode references, one
 * with a newline (must be refused before anything starts), one the provider answers 500 forever,
 * one it answers 422. The others must drain within their own least time; each poison order must
 * end (created, or failed with a message) or be cancellable once the others are created.
 */
async function poisonPhase(ctx: Context): Promise<Record<string, number | string>> {
  const key = 'bench-poison';
  const taskQueue = 'limits-poison';
  const stamp = Date.now().toString(36);
  const poison = { unicode_euro: `ORD-€42-${stamp}`, unicode_cjk: `注文-1001-${stamp}`, newline: `ORD-${stamp}\nX`, always_500: `P500-${stamp}`, always_422: `P422-${stamp}` };
  const { sim, url } = await newSimulator({ apiKeys: [key], faults: { reference_faults: { [poison.always_500]: 500, [poison.always_422]: 422 } } });
  const workers = await startWorkers(ctx, workerEnv(ctx, { taskQueue, url, key, pacing: 'gate' }));
  const client = new DeliveryClient({ temporal: ctx.temporal, taskQueue });
  const all = makeOrders(`poison-${stamp}`, POISON_ORDERS);
  const poisoned = all.slice(0, 5).map((o, i) => ({ ...o, reference: Object.values(poison)[i]! }));
  const others = all.slice(5);
  const outcome: Record<string, string> = {};
  try {
    // The poison orders go first, so a gate that let them hold the queue would show it.
    for (const [name, o] of Object.entries(poison).map(([n], i) => [n, poisoned[i]!] as const)) {
      try {
        await client.startDelivery(o.order, { reference: o.reference, followUp: { quietMs: 24 * 3_600_000 } });
      } catch (err) {
        outcome[name] = `refused before start: ${(err as Error).message.slice(0, 120)}`;
      }
    }
    const startedAt = await startAll(client, others, 24 * 3_600_000);
    const t0 = Math.min(...startedAt.values());
    const least = leastDrainMs(others, LIMITS.quotes, LIMITS.creations);
    const createdAt = await waitCreated(sim, others.map((o) => o.reference), Date.now() + 3 * least + 60_000, 'poison (the others)');
    const log = callLog(sim, key);
    // Every poison order that is still running is cancelled now: a cancel must always work.
    for (const [name, reference] of Object.entries(poison)) {
      if (outcome[name]) continue;
      const state = await client.getStatus(reference).catch(() => undefined);
      if (state?.deliveryId) outcome[name] = `created (${state.phase})`;
      else if (state?.phase === 'ended') outcome[name] = `ended: ${state.timeline.at(-1)?.note ?? ''}`.slice(0, 160);
      else {
        const result = await Promise.race([client.result(reference).then(() => 'ended', (err: Error) => `failed: ${err.message}`), sleep(1_000).then(() => undefined)]);
        if (result) outcome[name] = result.slice(0, 160);
        else {
          const t = Date.now();
          const final = await client.cancelDelivery(reference);
          outcome[name] = `still trying after ${round((Date.now() - t0) / 1000, 1)} s; cancelled in ${round((Date.now() - t) / 1000, 1)} s: ${final.cancellation?.outcome}`;
        }
      }
    }
    const figures = {
      poison_orders: all.length,
      poison_others_created: createdAt.size,
      poison_others_drain_ratio: round((Math.max(...createdAt.values()) - t0) / least),
      poison_refused429: log.creationsRefused + log.quotesRefused,
      poison_500_attempts: sim.requestLog().filter((e) => e.path === '/v1/deliveries' && e.status === 500).length,
      poison_outcomes: JSON.stringify(outcome),
    };
    progress(`poison: ${JSON.stringify(figures)}`);
    return figures;
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await terminateAll(ctx.temporal, all.map((o) => o.reference).concat(Object.values(poison)));
    await sim.close();
  }
}

export async function limitsBenchmark(): Promise<BenchmarkOutput> {
  const { cli, server } = onCluster() ? await startBenchCluster(progress, TIME_LIMIT_MS) : await startBenchServer(progress, TIME_LIMIT_MS);
  const connection = await Connection.connect({ address: server.address });
  const ctx: Context = { server, cli, temporal: new Client({ connection, namespace: server.namespace }), bundle: await workflowBundleFile() };
  const figures: Record<string, number | string> = {
    temporal: onCluster() ? 'cluster (PostgreSQL, frontend, 2 history, 2 matching, worker service)' : 'dev server',
    worker_processes: workerCount(),
    scale: SCALE,
    orders: ORDERS,
    creations_limit: `${LIMITS.creations.limit} per ${LIMITS.creations.windowMs / 1000} s`,
    quotes_limit: `${LIMITS.quotes.limit} per ${LIMITS.quotes.windowMs / 1000} s`,
  };
  const prefix = (p: string, f: BacklogFigures) => Object.fromEntries(Object.entries(f).map(([k, v]) => [`${p}_${k}`, v]));
  try {
    if (PHASES.includes('gate')) Object.assign(figures, prefix('gate', await backlogPhase(ctx, 'gate')));
    if (PHASES.includes('task-queue')) Object.assign(figures, prefix('taskqueue', await backlogPhase(ctx, 'task-queue')));
    if (PHASES.includes('naive')) Object.assign(figures, prefix('naive', await naivePhase()));
    if (PHASES.includes('poison')) Object.assign(figures, await poisonPhase(ctx));
  } finally {
    await connection.close();
    await server.stop();
  }
  const planned = makeOrders('least', ORDERS);
  return { figures, charts: samples.length ? limitsCharts(samples, LIMITS, ORDERS, leastCreationTimes(planned, LIMITS.quotes, LIMITS.creations)) : {} };
}
