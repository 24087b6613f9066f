/**
 * One delivery is one trace, read back from a real OTLP receiver: Jaeger (scripts/jaeger.ts),
 * built with Go and cached, receiving OTLP over HTTP from the order system's CLI, the worker and
 * the bridge, all real processes with OTEL_EXPORTER_OTLP_ENDPOINT set, on the test's Temporal dev
 * server, against the simulator (which keeps the `traceparent` of each request it gets).
 *
 * The trace of the delivery holds: the order system's start (its own service), the delivery
 * workflow, the gate's wait for that order and the gate's quote and creation activities (the gate
 * is another workflow: the order's trace rides in its ask), each HTTP call to the courier as a
 * client span (the undici instrumentation's) whose context is the `traceparent` the simulator
 * received, and the bridge's signals, handled in the delivery's trace and linked to the bridge's
 * own trace of the webhook. No span carries the order's personal data or the API key; log lines
 * carry the trace id and the workflow id; the worker and the bridge count the spans they exported
 * (`trace_spans_total`). And a delivery is traced whole or not at all, as the order system's
 * sampler decides (OTEL_TRACES_SAMPLER=parentbased_traceidratio): at ratio 1 every span, at 0 none,
 * and the delivery started at 0 ends DELIVERED all the same. The worker samples as the limits
 * benchmark's sampled fleets do (parent-based ratio 0): it follows the order system's decision.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { connectClient } from '../../temporal/client-connection';
import { ensureJaeger, startJaeger, type RunningJaeger } from '../../scripts/jaeger';
import { removeWorkflowBundleFile, ROOT } from '../../scripts/processes';
import { freePort } from '../../scripts/temporal-dev-server';
import { deliveryWorkflowId } from '../../contract/workflow-ids';
import { deliveryOrder } from '../fixtures/orders';
import { DeliveryProcesses } from '../helpers/processes';
import { eventually } from '../helpers/stack';
import { testServerAddress } from '../helpers/temporal';

const run = promisify(execFile);

interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; traceID: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
  processID: string;
}
interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

let jaeger: RunningJaeger;
let procs: DeliveryProcesses;
let temporal: Client;
let workerMetrics: string;

async function traceOf(traceId: string): Promise<JaegerTrace | undefined> {
  const res = await fetch(`${jaeger.queryUrl}/api/traces/${traceId}`);
  if (res.status === 404) return undefined;
  if (!res.ok) throw new Error(`jaeger answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { data: JaegerTrace[] }).data[0];
}

/** The spans one delivery's trace must hold. */
const SHAPE = ['UpdateWithStartWorkflow:startChecked', 'RunWorkflow:delivery', 'GateWait:quotes', 'RunActivity:quoteInGate', 'RunActivity:createInGate', 'POST /v1/quotes', 'POST /v1/deliveries', 'HandleSignal:statusChanged'];

const serviceOf = (t: JaegerTrace, s: JaegerSpan) => t.processes[s.processID]?.serviceName;
const tag = (s: JaegerSpan, key: string) => s.tags.find((t) => t.key === key)?.value;

beforeAll(async () => {
  jaeger = await startJaeger(await ensureJaeger());
  const { address, namespace } = testServerAddress();
  const otlp = { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpUrl };
  const port = await freePort();
  workerMetrics = `http://127.0.0.1:${port}/metrics`;
  procs = await DeliveryProcesses.start({
    temporalAddress: address,
    namespace,
    prefix: 'tracing',
    simulatorEnv: { SIMULATOR_AUTO_ADVANCE_MS: '300' },
    workerEnv: { ...otlp, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0', OTEL_SERVICE_NAME: 'test-worker', LOG_LEVEL: 'INFO', WORKER_DELIVERY_METRICS_ADDRESS: `127.0.0.1:${port}` },
    bridgeEnv: { ...otlp, OTEL_SERVICE_NAME: 'test-bridge' },
  });
  const connection = await connectClient({ address });
  temporal = new Client({ connection, namespace, dataConverter: procs.dataConverter() });
}, 1_800_000); // the first run builds Jaeger with Go (minutes)

afterAll(async () => {
  await temporal?.connection.close();
  await procs?.stop();
  await jaeger?.stop();
  await removeWorkflowBundleFile();
});

/** The order's personal data, the same in every order of these tests (each order differs by its pickup time: no quote shared between deliveries). */
const order = deliveryOrder({ is_food: true });

/** One delivery created by the order system (the CLI, with its own service name and `env`), to its end: its workflow ID and the courier's quote and creation calls. */
async function deliver(env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'tracing-'));
  const orderFile = join(dir, 'order.json');
  // Its own order (a new pickup time): an order like the last one would share its quote, and the courier would see no quote call.
  writeFileSync(orderFile, JSON.stringify(deliveryOrder({ is_food: true })));
  const reference = `TRACE-${Date.now().toString(36)}`;
  const workflowId = deliveryWorkflowId(reference);
  const since = (await procs.sim.requests()).length;
  await run(process.execPath, [join(ROOT, 'client/delivery.js'), 'create', '--reference', reference, '--order', orderFile, '--check-timeout', '60'], { env: { ...process.env, ...procs.env, OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpUrl, OTEL_SERVICE_NAME: 'order-system', ...env }, timeout: 90_000 });
  // Bounded, so a delivery that stalls says where (the test once waited out its 240 s here, cause not found).
  const handle = temporal.workflow.getHandle(workflowId);
  const outcome = await Promise.race([handle.result() as Promise<{ status: string }>, new Promise<'stalled'>((resolve) => setTimeout(() => resolve('stalled'), 150_000).unref())]);
  if (outcome === 'stalled') {
    // Where it waits: never started (routing), at the gate, or at a status whose webhook failed (its retries come 5 s, 30 s, 120 s … apart).
    const described = await handle.describe().then((d) => d.status.name, (err: Error) => err.message);
    // Bounded: a query waits for a worker to answer it, and a run that never started has none.
    const status = await temporal.withDeadline(Date.now() + 10_000, () => handle.query<{ status?: string }>('status')).then((q) => q.status, (err: Error) => err.message);
    // A run that never started: who polls its queue, and which version the queue routes new runs to (none: unversioned pollers only).
    const queue = await temporal.workflowService
      .describeTaskQueue({ namespace: testServerAddress().namespace, taskQueue: { name: procs.taskQueue }, taskQueueType: proto.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW })
      .then((d) => JSON.stringify({ pollers: d.pollers?.map((p) => ({ identity: p.identity, deployment: p.deploymentOptions })), routing: d.versioningInfo }), (err: Error) => err.message);
    const webhooks = await procs.sim.webhooks().then((w) => JSON.stringify(w.events).slice(-3_000), (err: Error) => err.message);
    throw new Error(`${workflowId} did not end within 150 s (${described}, status ${status}); its queue: ${queue}; the simulator's webhooks: ${webhooks}\nthe bridge's last lines:\n${procs.bridge!.output().slice(-3_000)}\nthe worker's last lines:\n${procs.worker!.output().slice(-6_000)}`);
  }
  expect(outcome.status).toBe('DELIVERED');
  const calls = (await procs.sim.requests()).slice(since).filter((r) => r.method === 'POST' && (r.path === '/v1/quotes' || r.path === '/v1/deliveries'));
  expect(calls.map((r) => r.path).sort()).toEqual(['/v1/deliveries', '/v1/quotes']);
  return { workflowId, calls };
}

/** The trace `traceId` once it holds a span of each name (spans are exported in batches). */
async function traceWith(traceId: string, names: string[]): Promise<JaegerTrace> {
  let seen: JaegerTrace | undefined;
  const has = (n: string) => seen?.spans.some((s) => s.operationName === n);
  return eventually(`the delivery's trace ${traceId} in Jaeger with ${names.join(', ')}`, async () => ((seen = await traceOf(traceId)) && names.every(has) ? seen : undefined), 60_000).catch((err: Error) => {
    // Which spans are missing, and which came: says where the trace broke.
    throw new Error(`${err.message}\nmissing: ${names.filter((n) => !has(n)).join(', ')}\nin Jaeger: ${seen?.spans.map((s) => `${s.operationName} (${serviceOf(seen!, s)})`).join(', ') ?? 'no trace'}`);
  });
}

it('one delivery is one trace from the order system’s start to the courier’s HTTP calls and the bridge’s signals', async () => {
  const { workflowId, calls } = await deliver();

  // The courier saw a traceparent on the quote and the creation; both name the same trace.
  const traceIds = new Set(calls.map((r) => r.traceparent?.split('-')[1]));
  expect(traceIds.size).toBe(1);
  const traceId = [...traceIds][0] ?? '';
  expect(traceId).toMatch(/^[0-9a-f]{32}$/);

  const trace = await traceWith(traceId, SHAPE);
  const spans = (name: string) => trace.spans.filter((s) => s.operationName === name);

  // The order system's start is the root, in its own service; the workflow runs under it.
  const [start] = spans('UpdateWithStartWorkflow:startChecked');
  expect(serviceOf(trace, start!)).toBe('order-system');
  expect(start!.references).toEqual([]);
  const [runWorkflow] = spans('RunWorkflow:delivery');
  expect(serviceOf(trace, runWorkflow!)).toBe('test-worker');
  expect(runWorkflow!.references[0]?.spanID).toBe(start!.spanID);

  // Each HTTP call is a client span whose context is the traceparent the courier received.
  for (const call of calls) {
    const spanId = call.traceparent!.split('-')[2];
    const span = trace.spans.find((s) => s.spanID === spanId);
    expect(span?.operationName).toBe(`POST ${call.path}`);
    expect(tag(span!, 'span.kind')).toBe('client');
    expect(tag(span!, 'http.response.status_code')).toBe(call.status);
  }
  // The quote's HTTP call runs in the gate's quote activity, under the order's wait in the gate.
  const parentOf = (s: JaegerSpan) => trace.spans.find((p) => p.spanID === s.references.find((r) => r.refType === 'CHILD_OF')?.spanID);
  const chain = (s: JaegerSpan | undefined): string[] => (s ? [s.operationName, ...chain(parentOf(s))] : []);
  // The delivery asks the gate from its askGate activity, whose trace rides in the ask; the gate schedules the quote inside the order's GateWait
  // (its commands carry the trace, with no span of their own: workflows/tracing-interceptors.ts).
  expect(chain(spans('POST /v1/quotes')[0])).toEqual(['POST /v1/quotes', 'RunActivity:quoteInGate', 'GateWait:quotes', 'RunActivity:askGate', 'StartActivity:askGate', 'RunWorkflow:delivery', 'UpdateWithStartWorkflow:startChecked']);
  // The gate's own runs make no span (one run serves many deliveries): nothing of it outside a delivery's trace.
  const operations = ((await (await fetch(`${jaeger.queryUrl}/api/services/test-worker/operations`)).json()) as { data: (string | { name: string })[] }).data.map((o) => (typeof o === 'string' ? o : o.name));
  expect(operations).toEqual(expect.arrayContaining(['RunWorkflow:delivery', 'RunActivity:createInGate']));
  expect(operations.filter((o) => /^RunWorkflow:pacingGate|^ContinueAsNew:pacingGate|^StartActivity:answerDeliveries$/.test(o))).toEqual([]);

  // The bridge's status signals are handled in the delivery's trace, linked to the bridge's trace of the webhook.
  const handled = spans('HandleSignal:statusChanged');
  const links = handled.flatMap((s) => s.references.filter((r) => r.refType === 'FOLLOWS_FROM'));
  expect(links.length).toBe(handled.length);
  const bridgeTrace = await eventually('the bridge’s trace of a webhook', () => traceOf(links[0]!.traceID), 30_000);
  const webhook = bridgeTrace.spans.find((s) => s.operationName === 'POST /webhooks/delivery');
  expect(serviceOf(bridgeTrace, webhook!)).toBe('test-bridge');
  expect(tag(webhook!, 'temporalWorkflowId')).toBe(workflowId);
  expect(bridgeTrace.spans.map((s) => s.operationName)).toContain('SignalWorkflow:statusChanged');

  // No personal data and no key in any span of either trace.
  const values = [...trace.spans, ...bridgeTrace.spans].flatMap((s) => s.tags.map((t) => String(t.value)));
  const personal = [order.pickup_location.last_name, order.pickup_location.address, ...order.destinations.flatMap((d) => [d.location.last_name, d.location.phone, d.location.address]), 'sandbox-key'];
  expect(values.filter((v) => personal.some((p) => p && v.includes(p)))).toEqual([]);

  // Log lines carry the trace id and the workflow id: the worker's activity line, the bridge's webhook line.
  const lines = (text: string) => text.split('\n').flatMap((l) => {
    const json = l.slice(l.indexOf('{'));
    try {
      return [JSON.parse(json) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
  const created = lines(procs.worker!.output()).find((l) => l.msg === 'delivery created at the provider' && l.deliveryWorkflowId === workflowId);
  expect(created).toMatchObject({ trace_id: traceId, workflowId: expect.stringMatching(/^pacing-gate:/) });
  // The bridge logs a webhook once its signal is answered: wait for that line rather than assume it is there.
  await eventually('the bridge’s log line of the linked webhook', () => lines(procs.bridge!.output()).find((l) => l.msg === 'webhook' && l.workflow_id === workflowId && l.trace_id === links[0]!.traceID));

  // The worker and the bridge count the spans they exported, none failed or dropped.
  const bridgeMetrics = /metrics (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(procs.bridge!.output())?.[1];
  expect(bridgeMetrics).toBeDefined();
  for (const url of [workerMetrics, bridgeMetrics!]) {
    const spans = async () => {
      const text = await (await fetch(url)).text();
      return Object.fromEntries([...text.matchAll(/^trace_spans_total\{outcome="(\w+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
    };
    // Spans leave in batches, at most 5 s apart: wait for some to be counted.
    const counted = await eventually(`spans exported, counted at ${url}`, async () => ((await spans()).exported! > 0 ? spans() : undefined), 30_000);
    expect(counted).toEqual({ exported: expect.any(Number), failed: 0, dropped: 0 });
  }
}, 240_000);

it('traces a delivery whole or not at all, as the order system’s sampler decides (parentbased_traceidratio at 0, then at 1)', async () => {
  const ratio = (arg: string) => ({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: arg });
  const none = await deliver(ratio('0'));
  const all = await deliver(ratio('1'));
  // The decision travels with the trace: the courier's traceparent is unsampled (00) for the one, sampled (01) for the other.
  expect(none.calls.map((c) => c.traceparent?.split('-')[3])).toEqual(['00', '00']);
  expect(all.calls.map((c) => c.traceparent?.split('-')[3])).toEqual(['01', '01']);

  // At 1, every span of the delivery: its shape, and a StartActivity span for each activity its workflow scheduled.
  const scheduled = ((await temporal.workflow.getHandle(all.workflowId).fetchHistory()).events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
  const traceIdOf = (c: { traceparent?: string | null }) => c.traceparent!.split('-')[1]!;
  await traceWith(traceIdOf(all.calls[0]!), [...SHAPE, ...scheduled.map((a) => `StartActivity:${a}`)]);

  // At 0, none: its trace is not in Jaeger, and no span of any trace names its workflow, though the worker exported the later
  // delivery's spans after its own (a batch processor sends in the order spans end).
  expect(await traceOf(traceIdOf(none.calls[0]!))).toBeUndefined();
  const search = async (service: string, tags: Record<string, string>) =>
    ((await (await fetch(`${jaeger.queryUrl}/api/traces?service=${service}&lookback=1h&limit=100&tags=${encodeURIComponent(JSON.stringify(tags))}`)).json()) as { data: JaegerTrace[] | null }).data ?? [];
  expect(await search('test-worker', { workflowId: all.workflowId })).not.toEqual([]); // the search finds a sampled delivery's spans
  expect(await search('test-worker', { workflowId: none.workflowId })).toEqual([]);
  expect(await search('order-system', { workflowId: none.workflowId })).toEqual([]);
}, 300_000);
