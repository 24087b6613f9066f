/** npm run bench -- limits: docs/benchmarks.md, "Pacing at the provider's limits" (phases, `switch`, `observe`). */
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { DeliveryClient } from '../client/delivery-client';
import { ProviderClient } from '../provider/client';
import { RateLimitedError, ProviderUnavailableError } from '../provider/errors';
import { QUOTE_VALIDITY_MS } from '../provider/limits';
import { histories, rateLimitsEnv, scaledLimits, withBenchStack, type BenchStack } from './temporal';
import type { Simulator } from '../simulator/server';
import { deliveryRequest, destination } from '../test/fixtures/orders';
import { taskQueueRatePerSecond } from '../worker/pacing-config';
import type { DeliveryOrder, DeliveryState, FollowUpSettings } from '../contract/delivery-types';
import { quoteFingerprint } from '../workflows/quote-fingerprint';
import { deliveryWorkflowId, gateWorkflowId } from '../contract/workflow-ids';
import { providerTaskQueues } from '../contract/task-queues';
import { limitsCharts, type BacklogSamples } from './run-charts';
import { backlogCounter, leastCreationTimes, leastDrainMs, round, windowUse } from './limits-figures';
import { benchSettings, cpuMeter, median, pool, prefixed, progressLog, sleep, ticking, type BenchmarkOutput } from './measure';
import { setCurrentVersion, waitForVersion } from '../temporal/worker-deployment';
import { temporal as proto } from '@temporalio/proto';
import { tsToMs } from '@temporalio/common';
import { propagation } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { ensureJaeger, startJaeger } from '../scripts/jaeger';
import { workflowBundleFile } from '../scripts/processes';
import { freePort } from '../scripts/temporal-dev-server';

const { num } = benchSettings('LIMITS');
export const SCALE = num('SCALE', 10);
const [ORDERS, POISON_ORDERS] = [num('ORDERS', 300), num('POISON_ORDERS', 200)];
const [OBSERVE_ROUNDS, OBSERVE_WARMUP] = [num('OBSERVE_ROUNDS', 3), num('OBSERVE_WARMUP', 0)]; // warm-up: orders an observe fleet runs before its CPU is measured
const OBSERVE_PARTS = (process.env.LIMITS_BENCH_OBSERVE_PARTS ?? 'metrics,traces').split(','); // what `on` turns on
const OBSERVE_JAEGER = (['idle', 'none'] as const).find((v) => v === process.env.LIMITS_BENCH_JAEGER) ?? 'normal'; // its scheduling priority, or `none`: a bare OTLP receiver (docs/benchmarks.md)
/** Sampling ratios to measure side by side with tracing off, e.g. `1,0.1,0` (unset: one fleet with OBSERVE_PARTS on, one with nothing). */
const OBSERVE_SAMPLING = process.env.LIMITS_BENCH_OBSERVE_SAMPLING?.split(',').map((r) => {
  const ratio = Number(r);
  if (r.trim() === '' || !(ratio >= 0 && ratio <= 1)) throw new Error(`LIMITS_BENCH_OBSERVE_SAMPLING: ${r} is not a ratio from 0 to 1`);
  return ratio;
});
const TIME_LIMIT_MS = num('TIME_LIMIT_MIN', 40) * 60_000;
const PHASES = (process.env.LIMITS_BENCH_PHASES ?? 'gate,task-queue,naive,poison').split(',');
/** Read when the run starts: bench/main.ts sets BENCH_TEMPORAL for `--cluster`. */
const onCluster = () => process.env.BENCH_TEMPORAL === 'cluster';
const workerCount = () => num('WORKERS', onCluster() ? 4 : 2);
export const QUIET_MS = 24 * 3_600_000; // no follow-up polls during the run

export const LIMITS = scaledLimits(SCALE);
const LABELS: Record<string, string> = { gate: 'pacing gate', 'task-queue': 'task-queue limit', naive: 'naive client' };

const progress = progressLog('limits');
const samples: BacklogSamples[] = [];

/** A quarter food; every tenth order repeats the previous one's inputs under a new reference. */
export function makeOrders(prefix: string, count: number) {
  const out: { reference: string; order: DeliveryOrder; fingerprint: string }[] = [];
  for (let i = 0; i < count; i++) {
    const n = i % 10 === 9 ? i - 1 : i;
    const order = deliveryRequest({
      is_food: n % 4 === 0,
      destinations: [destination(0, { location: { last_name: 'Bench', company: '', phone: '+4915112345600', address: `Benchweg ${n + 1}, 10115 Berlin` } })],
    });
    const same = n !== i ? out[n]!.order : order;
    out.push({ reference: `${prefix}-${i}`, order: same, fingerprint: quoteFingerprint(same) });
  }
  return out;
}

export type Context = { stack: BenchStack; temporal: Client; bundle: string };

export function startWorkers(ctx: Context, o: { taskQueue: string; url: string; key: string; pacing: 'gate' | 'task-queue'; env?: (i: number) => Record<string, string>; name?: string; count?: number }) {
  // Provider-time quantities: the slot margin and the least life a shared quote must have left.
  const scaled = { PROVIDER_PACING_MARGIN_MS: String(Math.round(250 / SCALE)), PROVIDER_QUOTE_MIN_REMAINING_MS: String(Math.round(60_000 / SCALE)) };
  const base = { DELIVERY_API_KEY: o.key, LOG_LEVEL: 'WARN', DELIVERY_TASK_QUEUE: o.taskQueue, DELIVERY_API_TIMEOUT_MS: '9500', PROVIDER_CALL_TIMEOUT_MS: '10000', WORKER_WORKFLOW_BUNDLE: ctx.bundle };
  const env = (i: number) => ({ ...base, PROVIDER_RATE_LIMITS: rateLimitsEnv(LIMITS), PROVIDER_PACING: o.pacing, ...scaled, ...o.env?.(i) });
  return Promise.all(Array.from({ length: o.count ?? workerCount() }, (_, i) => ctx.stack.start('worker', o.url, env(i), { name: `${o.name ?? 'worker'}-${i + 1}`, inherit: true })));
}

/** When the simulator created each order's delivery, waiting until all are or the deadline passes. */
export async function waitCreated(sim: Simulator, orders: Order[], deadlineMs: number, label: string): Promise<Map<string, number>> {
  const [wanted, created] = [new Set(orders.map((o) => o.reference)), new Map<string, number>()];
  return ticking(progress, () => `${label}: ${created.size}/${wanted.size} created`, async () => {
    for (; ; await sleep(500)) {
      for (const { delivery: d } of sim.deliveries()) if (wanted.has(d.reference_number ?? '') && !created.has(d.reference_number!)) created.set(d.reference_number!, Date.parse(d.created_at));
      if (created.size === wanted.size || Date.now() > deadlineMs) return created;
    }
  });
}

/** Starts the orders on `taskQueue`, `concurrency` at a time; answers when each was started. */
export async function startOrders(ctx: Context, taskQueue: string, orders: (Order & { account?: string })[], o: { concurrency: number; followUp: Partial<FollowUpSettings> }) {
  // A benchmark loads the machine on purpose: a start check may wait longer than an order system's 10 s.
  const client = new DeliveryClient({ temporal: ctx.temporal, taskQueue, startCheckTimeoutMs: 120_000 });
  const startedAt = new Map<string, number>();
  await pool(orders, o.concurrency, async (order) => {
    startedAt.set(order.reference, Date.now());
    await client.startDelivery(order.order, { reference: order.reference, account: order.account, followUp: o.followUp });
  });
  return startedAt;
}

/** Accepted quote and creation calls and the 429s, from the phase's own simulator's request log. */
function callLog(sim: Simulator) {
  const posts = (path: string) => sim.requestLog().filter((e) => e.method === 'POST' && e.path === path);
  return {
    quotes: posts('/v1/quotes').filter((e) => e.status === 200).map((e) => Date.parse(e.time)),
    creations: posts('/v1/deliveries').filter((e) => e.status === 201 || e.status === 200).map((e) => Date.parse(e.time)),
    refused429: posts('/v1/quotes').concat(posts('/v1/deliveries')).filter((e) => e.status === 429).length,
  };
}

/** When each order got its price, from its quote's expiry (the gate creates right after quoting, so the order's own timeline cannot tell). */
async function quotedTimes(temporal: Client, orders: Order[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const o of orders) {
    const state = (await temporal.workflow.getHandle(deliveryWorkflowId(o.reference)).query('status')) as DeliveryState;
    if (state.quote) out.set(o.reference, Date.parse(state.quote.expires_at) - QUOTE_VALIDITY_MS / SCALE);
  }
  return out;
}

type Order = ReturnType<typeof makeOrders>[number];
type BacklogFigures = ReturnType<typeof backlogFigures>;

/** An approach's figures (printed, its samples kept for the charts), from the simulator's log and the orders' own times. */
function backlogFigures(phase: string, orders: Order[], startedAt: Map<string, number>, quotedAt: Map<string, number>, createdAt: Map<string, number>, log: ReturnType<typeof callLog>) {
  const t0 = Math.min(...startedAt.values());
  const creationSpans = orders.filter((o) => createdAt.has(o.reference)).map((o) => ({ from: Math.max(quotedAt.get(o.reference) ?? 0, startedAt.get(o.reference)!), to: createdAt.get(o.reference)! }));
  // Only the first order of each fingerprint needs a quote call: its identical twins share it.
  const quoteSpans = orders.filter((o, i) => orders.findIndex((x) => x.fingerprint === o.fingerprint) === i).map((o) => ({ from: startedAt.get(o.reference)!, to: quotedAt.get(o.reference) ?? Infinity }));
  const lastCreation = Math.max(...createdAt.values());
  const least = leastDrainMs(orders, LIMITS.quotes, LIMITS.creations);
  const wait = (food: boolean) => median(orders.filter((o) => o.order.is_food === food && createdAt.has(o.reference)).map((o) => createdAt.get(o.reference)! - startedAt.get(o.reference)!));
  const quotes = [...log.quotes].sort((a, b) => a - b);
  const firstCall = quotes[0] ?? NaN;
  const figures = {
    firstCallS: round((firstCall - t0) / 1000, 2),
    // The first quote window's ramp, which every later window repeats (a slot is free a window after its use).
    firstWindowSpreadS: round(((quotes[Math.min(quotes.length, LIMITS.quotes.limit) - 1] ?? NaN) - firstCall) / 1000, 2),
    drainFromFirstCallRatio: round((lastCreation - firstCall) / least),
    creationUse: round(windowUse(log.creations, backlogCounter(creationSpans), LIMITS.creations).ratio),
    quoteUse: round(windowUse(log.quotes, backlogCounter(quoteSpans), LIMITS.quotes).ratio),
    refused429: log.refused429,
    drainS: round((lastCreation - t0) / 1000, 1),
    drainRatio: round((lastCreation - t0) / least),
    quotesPerDelivery: round(log.quotes.length / Math.max(1, log.creations.length)),
    foodWaitRatio: round(wait(true) / wait(false)),
    created: createdAt.size,
  };
  if (LABELS[phase]) samples.push({ label: LABELS[phase], t0, quotes: log.quotes, creations: log.creations, createdAt: [...createdAt.values()] });
  progress(`${phase}: ${JSON.stringify(figures)}`);
  return figures;
}

/** The backlog through our workers, paced by the gate or the task-queue limit. Poison: the gate's, five poison orders first (two Unicode
 * references, a newline one, refused before start and so left out, 500 forever, 422); it reports the others' figures. */
async function backlogPhase(ctx: Context, phase: 'gate' | 'task-queue' | 'poison' | 'switch' | 'observe', observe?: { round: string; env?: (i: number) => Record<string, string> }): Promise<BacklogFigures & Partial<SwitchFigures> & { workerCpuS?: number }> {
  const run = `${phase}${observe?.round ?? ''}`; // an observe round's two fleets at once: each its own key, queue and orders
  const [key, taskQueue, stamp] = [`bench-${run}`, `limits-${run}`, Date.now().toString(36)];
  const all = makeOrders(`${run}-${stamp}`, phase === 'poison' ? POISON_ORDERS : ORDERS);
  const poison = phase === 'poison' ? [`ORD-€42-${stamp}`, `注文-1001-${stamp}`, `P500-${stamp}`, `P422-${stamp}`].map((reference, i) => ({ ...all[i]!, reference })) : [];
  const orders = phase === 'poison' ? all.slice(5) : all;
  const { sim, url } = await ctx.stack.simulator({ timeScale: SCALE, apiKeys: [key], faults: poison.length ? { reference_faults: { [poison[2]!.reference]: 500, [poison[3]!.reference]: 422 } } : {} });
  if (phase === 'task-queue') await setServerQueueLimits(ctx, taskQueue);
  const deployment = `bench-${run}-${stamp}`; // its own: its current version is this run's alone; a version takes 100 task queues at most
  const versionEnv = (buildId: string, makeCurrent: string) => ({ WORKER_DEPLOYMENT_NAME: deployment, WORKER_BUILD_ID: buildId, WORKER_MAKE_CURRENT: makeCurrent });
  const workers = await startWorkers(ctx, { taskQueue, url, key, pacing: phase === 'task-queue' ? 'task-queue' : 'gate', env: phase === 'switch' ? () => versionEnv('a', 'always') : (i) => ({ WORKER_DEPLOYMENT_NAME: deployment, ...observe?.env?.(i) }) });
  // Build B's workers poll before the switch, as a rollout requires (npm run rollout checks it).
  if (phase === 'switch') workers.push(...(await startWorkers(ctx, { taskQueue, url, key, pacing: 'gate', env: () => versionEnv('b', 'never'), name: 'worker-b' })));
  let switched: Promise<number> | undefined;
  const least = leastDrainMs(orders, LIMITS.quotes, LIMITS.creations);
  progress(`${phase}: ${orders.length} orders (${orders.filter((o) => o.order.is_food).length} food, ${new Set(orders.map((o) => o.fingerprint)).size} distinct), least drain ${(least / 1000).toFixed(1)} s`);
  const cpu = cpuMeter(Object.fromEntries(workers.map((w, i) => [i, w.pid])));
  const warm = makeOrders(`${run}-${stamp}-warm`, observe ? OBSERVE_WARMUP : 0); // then the measure is of workers past their first deliveries
  try {
    if (warm.length && (await startOrders(ctx, taskQueue, warm, { concurrency: 32, followUp: { quietMs: QUIET_MS } }).then(() => waitCreated(sim, warm, Date.now() + 3 * least + 60_000, `${run}-warm`))).size < warm.length) throw new Error(`${run}: the warm-up's orders were not all created`);
    const measured = cpu.begin();
    await startOrders(ctx, taskQueue, poison, { concurrency: 1, followUp: { quietMs: QUIET_MS } }); // first, one after another
    const startedAt = await startOrders(ctx, taskQueue, orders, { concurrency: 32, followUp: { quietMs: QUIET_MS, jitter: 0.2 } });
    if (phase === 'switch') switched = switchWhenCreated(ctx, sim, { deploymentName: deployment, buildId: 'b' }, taskQueue, Math.floor(orders.length / 3));
    const createdAt = await waitCreated(sim, orders, Date.now() + 3 * least + 60_000, run);
    measured();
    const figures = { ...backlogFigures(phase, orders, startedAt, await quotedTimes(ctx.temporal, orders), createdAt, callLog(sim)), ...(observe && { workerCpuS: cpu.ours() }) };
    return switched ? { ...figures, ...(await switchFigures(ctx, orders, taskQueue, await switched)) } : figures;
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await Promise.all([...poison, ...warm, ...orders].map((o) => ctx.temporal.workflow.getHandle(deliveryWorkflowId(o.reference)).terminate('benchmark over').catch(() => undefined)));
  }
}

/**
 * A fleet setting of the observe phase: its workers' environment and, for a sampled one, the
 * order system's client that starts its deliveries, where each delivery's trace starts and is
 * sampled (parent-based ratio, as an operator sets OTEL_TRACES_SAMPLER on the order systems').
 */
interface ObserveSetting {
  name: string;
  env?: (i: number) => Record<string, string>;
  temporal?: Client;
}

/** An order system's client tracing at `ratio` into Jaeger (its own tracer: the bench's process serves every setting at once). */
function sampledClient(ctx: Context, otlpUrl: string, ratio: number): { temporal: Client; provider: NodeTracerProvider } {
  const provider = new NodeTracerProvider({
    resource: new Resource({ 'service.name': 'bench-order-system' }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${otlpUrl}/v1/traces` }))],
  });
  if (!propagation.fields().includes('traceparent')) provider.register(); // the process's context manager and W3C propagator, once
  const tracer = provider.getTracer('bench-order-system');
  const temporal = new Client({ connection: ctx.temporal.connection, namespace: ctx.temporal.options.namespace, dataConverter: ctx.temporal.options.dataConverter, interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor({ tracer })] } });
  return { temporal, provider };
}

/**
 * A bare OTLP/HTTP receiver on 127.0.0.1 in place of Jaeger (LIMITS_BENCH_JAEGER=none): it takes
 * each export (200, an empty ExportTraceServiceResponse) and says which services sent spans, read
 * from the resource's `service.name` (the protobuf's string bytes: no decoding needed to find a name).
 */
async function otlpReceiver(): Promise<{ otlpUrl: string; services(): string[]; stop(): Promise<void> }> {
  const services = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c)).on('end', () => {
      const body = Buffer.concat(chunks).toString('latin1');
      for (const name of ['delivery-worker', 'bench-order-system']) if (body.includes(name)) services.add(name);
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { otlpUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, services: () => [...services], stop: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** The spans' receiver: Jaeger (its query API lists the services it has spans of), or the bare one. */
async function traceReceiver(): Promise<{ otlpUrl: string; services(): Promise<string[]>; stop(): Promise<void> }> {
  if (OBSERVE_JAEGER === 'none') {
    const r = await otlpReceiver();
    return { ...r, services: async () => r.services() };
  }
  const jaeger = await startJaeger(await ensureJaeger(progress), { idle: OBSERVE_JAEGER === 'idle' });
  return { otlpUrl: jaeger.otlpUrl, stop: () => jaeger.stop(), services: async () => ((await (await fetch(`${jaeger.queryUrl}/api/services`)).json()) as { data: string[] | null }).data ?? [] };
}

/** What metrics and traces cost (issue #37): docs/benchmarks.md, "What metrics and traces cost". */
async function observePhase(ctx: Context): Promise<Record<string, number | string>> {
  const jaeger = await traceReceiver();
  const fleets = OBSERVE_SAMPLING ? OBSERVE_SAMPLING.length + 1 : 1; // the fleets with metrics on
  const ports = await Promise.all(Array.from({ length: 2 * workerCount() * fleets }, () => freePort())); // each worker's: the runtime's exporter, its own
  const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpUrl, WORKER_WORKFLOW_BUNDLE: await workflowBundleFile({ OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpUrl }) };
  let lost = 0; // most spans a traced worker had counted failed or dropped at a scrape (trace_spans_total): its cost would be understated
  const scrape = setInterval(() => ports.forEach((p) => void fetch(`http://127.0.0.1:${p}/metrics`).then((r) => r.text(), () => '').then((t) => (lost = Math.max(lost, [...t.matchAll(/^trace_spans_total\{outcome="(?:failed|dropped)"\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0))))), 15_000);
  const metricsEnv = (fleet: number) => (i: number): Record<string, string> => {
    const at = 2 * (fleet * workerCount() + i);
    return OBSERVE_PARTS.includes('metrics') ? { WORKER_METRICS_ADDRESS: `127.0.0.1:${ports[at]}`, WORKER_DELIVERY_METRICS_ADDRESS: `127.0.0.1:${ports[at + 1]}` } : {};
  };
  const onEnv = (i: number) => ({ ...(OBSERVE_PARTS.includes('traces') && traced), ...metricsEnv(0)(i) });
  // Sampled: every fleet with OBSERVE_PARTS' metrics, tracing off in `off`, on at each ratio in the others (the workers' own roots sampled alike).
  const clients = (OBSERVE_SAMPLING ?? []).map((ratio) => ({ ratio, ...sampledClient(ctx, jaeger.otlpUrl, ratio) }));
  const settings: ObserveSetting[] = OBSERVE_SAMPLING
    ? [{ name: 'off', env: metricsEnv(0) }, ...clients.map(({ ratio, temporal }, f) => ({ name: `sampled-${Math.round(ratio * 100)}pct`, temporal, env: (i: number) => ({ ...traced, ...metricsEnv(f + 1)(i), OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: String(ratio) }) }))]
    : [{ name: 'off' }, { name: 'on', env: onEnv }];
  const perDelivery: Record<string, number[]> = Object.fromEntries(settings.map((s) => [s.name, []]));
  try {
    for (let r = 1; r <= OBSERVE_ROUNDS; r++) {
      // Every fleet at once, each its own orders, key and queue (a round's fleets share the machine's moment); which starts first turns round by round.
      const order = settings.map((_, i) => settings[(i + r - 1) % settings.length]!);
      const round = await Promise.all(order.map((s) => backlogPhase(s.temporal ? { ...ctx, temporal: s.temporal } : ctx, 'observe', { round: `-${s.name}${r}`, env: s.env })));
      round.forEach((f, i) => perDelivery[order[i]!.name]!.push((1000 * f.workerCpuS!) / f.created));
      progress(`observe: round ${r}: worker CPU ms per delivery ${settings.map((s) => `${perDelivery[s.name]!.at(-1)!.toFixed(2)} ${s.name}`).join(', ')}`);
    }
    const services = await jaeger.services();
    const traces = OBSERVE_SAMPLING ? OBSERVE_SAMPLING.some((r) => r > 0) : OBSERVE_PARTS.includes('traces');
    if (traces && !services.includes('delivery-worker')) throw new Error(`observe: no span of the traced workers reached the receiver (services: ${services.join(', ')})`);
    const runs = (xs: number[]) => xs.map((x) => x.toFixed(1)).join(' ');
    const off = perDelivery.off!;
    const figures: Record<string, number | string> = { observe_on: OBSERVE_SAMPLING ? `sampling ${OBSERVE_SAMPLING.join(',')}; ${OBSERVE_PARTS.join('+')}` : OBSERVE_PARTS.join('+'), observe_rounds: OBSERVE_ROUNDS, observe_jaeger: OBSERVE_JAEGER, observe_cpu_ms_per_delivery_off: round(median(off), 2), observe_runs_off: runs(off), observe_spans_lost_at_least: lost };
    for (const { name } of settings.slice(1)) {
      const xs = perDelivery[name]!;
      const key = OBSERVE_SAMPLING ? `_${name}` : ''; // the two-fleet run's keys as before
      Object.assign(figures, {
        [`observe_cpu_ms_per_delivery_${OBSERVE_SAMPLING ? name : 'on'}`]: round(median(xs), 2),
        [`observe_overhead_pct${key}`]: round(median(xs.map((x, i) => 100 * (x / off[i]! - 1))), 1),
        [`observe_overhead_pct_of_medians${key}`]: round(100 * (median(xs) / median(off) - 1), 1),
        [`observe_runs_${OBSERVE_SAMPLING ? name : 'on'}`]: runs(xs),
      });
    }
    return figures;
  } finally {
    clearInterval(scrape);
    await Promise.all(clients.map((c) => c.provider.shutdown()));
    await jaeger.stop();
  }
}

/** Makes build B current once `after` orders are created; resolves to the time it did. */
async function switchWhenCreated(ctx: Context, sim: Simulator, b: { deploymentName: string; buildId: string }, taskQueue: string, after: number): Promise<number> {
  await waitForVersion(ctx.temporal.workflowService, ctx.stack.server.namespace, b, taskQueue);
  while (sim.deliveries().length < after) await sleep(100);
  await setCurrentVersion(ctx.temporal.workflowService, ctx.stack.server.namespace, b);
  const at = Date.now();
  progress(`switch: build ${b.buildId} current after ${sim.deliveries().length} creations`);
  return at;
}

type SwitchFigures = Awaited<ReturnType<typeof switchFigures>>;

/** From the histories: when the gate's first task ran on B after the switch, and whether any workflow task failed (a delivery replayed on the other build would). */
async function switchFigures(ctx: Context, orders: Order[], taskQueue: string, switchedAt: number) {
  const { EventType } = proto.api.enums.v1;
  const eventsOf = async (workflowId: string) => (await ctx.temporal.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const gate = await histories(ctx.temporal, gateWorkflowId(taskQueue)); // every run of the gate (it continues as new)
  const firstOnB = gate.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId === 'b');
  const started = gate.slice(0, gate.indexOf(firstOnB!)).reverse().find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  let failedTasks = gate.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED).length;
  let onOtherBuild = 0;
  await pool(orders, 16, async (o) => {
    const events = await eventsOf(deliveryWorkflowId(o.reference));
    failedTasks += events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED).length;
    if (events.some((e) => e.workflowTaskCompletedEventAttributes && e.workflowTaskCompletedEventAttributes.deploymentVersion?.buildId !== 'a')) onOtherBuild++;
  });
  const gateRuns = gate.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED).length;
  const figures = { firstTaskOnBMs: started ? tsToMs(started.eventTime) - switchedAt : NaN, gateRuns, failedWorkflowTasks: failedTasks, deliveriesMovedOffA: onOtherBuild };
  progress(`switch: ${JSON.stringify(figures)}`);
  return figures;
}

/** The engine's own limit, on the server: one value for all workers, which no worker option overrides. */
async function setServerQueueLimits(ctx: Context, taskQueue: string): Promise<void> {
  const queues = providerTaskQueues(taskQueue);
  for (const family of ['creations', 'quotes', 'other'] as const) {
    const rps = taskQueueRatePerSecond(LIMITS[family]);
    const where = ['--address', ctx.stack.server.address, '--namespace', ctx.stack.server.namespace, '--task-queue', queues[family], '--task-queue-type', 'activity'];
    await promisify(execFile)(ctx.stack.cli, ['task-queue', 'config', 'set', ...where, '--queue-rps-limit', String(rps), '--queue-rps-limit-reason', 'provider limit (bench)']);
    progress(`task-queue: ${queues[family]} limited to ${rps.toFixed(4)}/s on the server`);
  }
}

/** The same orders straight to the API, no Temporal: retry on 429 with exponential backoff (no jitter, Retry-After ignored). */
async function naivePhase(ctx: Context): Promise<BacklogFigures> {
  const key = 'bench-naive';
  const { sim, url } = await ctx.stack.simulator({ timeScale: SCALE, apiKeys: [key] });
  const api = new ProviderClient({ baseUrl: url, apiKey: key, connections: 64 });
  const orders = makeOrders(`naive-${Date.now().toString(36)}`, ORDERS);
  const deadline = Date.now() + 3 * leastDrainMs(orders, LIMITS.quotes, LIMITS.creations) + 60_000;
  const withRetry = async <T>(call: () => Promise<T>): Promise<T | undefined> => {
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      try {
        return await call();
      } catch (err) {
        if (!(err instanceof RateLimitedError || err instanceof ProviderUnavailableError)) throw err;
        await sleep(Math.min(60_000 / SCALE, (1_000 / SCALE) * 2 ** attempt));
      }
    }
    return undefined;
  };
  const startedAt = new Map<string, number>();
  const quotedAt = new Map<string, number>();
  progress(`naive: ${orders.length} orders at once`);
  try {
    await Promise.all(orders.map(async (o) => {
      startedAt.set(o.reference, Date.now());
      const body = { ...o.order, reference_number: o.reference };
      if (!(await withRetry(() => api.quote(body)))) return;
      quotedAt.set(o.reference, Date.now());
      await withRetry(() => api.createDelivery(body, { idempotencyKey: `naive:${o.reference}` }));
    }));
    return backlogFigures('naive', orders, startedAt, quotedAt, await waitCreated(sim, orders, Date.now(), 'naive'), callLog(sim));
  } finally {
    await api.close();
  }
}

export async function limitsBenchmark(): Promise<BenchmarkOutput> {
  const limit = (l: { limit: number; windowMs: number }) => `${l.limit} per ${l.windowMs / 1000} s`;
  const figures: Record<string, number | string> = { worker_processes: workerCount(), scale: SCALE, orders: ORDERS, creations_limit: limit(LIMITS.creations), quotes_limit: limit(LIMITS.quotes) };
  await withBenchStack(progress, TIME_LIMIT_MS, { cluster: onCluster() }, async (stack) => {
    const ctx: Context = { stack, temporal: await stack.client(), bundle: await stack.bundle() };
    if (PHASES.includes('gate')) Object.assign(figures, prefixed('gate', await backlogPhase(ctx, 'gate')));
    if (PHASES.includes('task-queue')) Object.assign(figures, prefixed('taskqueue', await backlogPhase(ctx, 'task-queue')));
    if (PHASES.includes('naive')) Object.assign(figures, prefixed('naive', await naivePhase(ctx)));
    if (PHASES.includes('switch')) Object.assign(figures, prefixed('switch', await backlogPhase(ctx, 'switch')));
    if (PHASES.includes('observe')) Object.assign(figures, await observePhase(ctx));
    if (PHASES.includes('poison')) {
      const others = await backlogPhase(ctx, 'poison');
      Object.assign(figures, { poison_orders: POISON_ORDERS, poison_others_created: others.created, poison_others_drain_ratio: others.drainRatio, poison_refused429: others.refused429 });
    }
  });
  const least = leastCreationTimes(makeOrders('least', ORDERS), LIMITS.quotes, LIMITS.creations);
  return { figures, charts: samples.length ? limitsCharts(samples, LIMITS, ORDERS, least) : {} };
}
