/**
 * A traced workflow's spans, made without OpenTelemetry in the sandbox (workflows/trace-spans.ts,
 * workflows/tracing-interceptors.ts), against the real OpenTelemetry pieces they meet outside it:
 * the SDK's header helpers (its client and activity interceptors read and write the same header),
 * the worker's sink for workflow spans (tracing/worker.ts), the OTLP encoding. What stands in for the workflow sandbox is
 * this process; each test starts its run with startTracing.
 */
import * as otel from '@opentelemetry/api';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { Resource } from '@opentelemetry/resources';
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-node';
import { extractContextFromHeaders, headersWithContext, TRACE_HEADER as SDK_TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import type { ActivityInput, LocalActivityInput, WorkflowInfo } from '@temporalio/workflow';
import { activeTraceparent } from '../../tracing/spans';
import { BookkeepingInbound, isBookkeeping, workflowSpanSink } from '../../tracing/worker';
import { activeSpan, contextOfHeaders, setRunSpan, startSpan, startTracing, takeFinished, TRACE_HEADER, withTraceHeader, within } from '../../workflows/trace-spans';
import { inTraceOf } from '../../workflows/trace-context';
import { GateContextOutbound, skipRestoringNoRandomScope, WorkflowSpansInbound, WorkflowSpansOutbound } from '../../workflows/tracing-interceptors';
import { AsyncLocalStorage } from 'node:async_hooks';

const memory = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
provider.register(); // W3C propagator and a context manager, as the worker's (tracing/install.ts)
const tracer = otel.trace.getTracer('test');
const RUN_ID = '5b0c3f0e-8a51-4c8e-9d0b-3f2a1c7e9d44';

/** A run's info as the SDK hands it to a sink: its identity, and what a tracing backend must not get. */
const INFO = { workflowId: 'delivery:T-1', runId: RUN_ID, workflowType: 'delivery', taskQueue: 'deliveries', namespace: 'default', memo: { note: 'Ada Lovelace, 12 High St' }, searchAttributes: { OrderReference: ['T-1'] } } as unknown as WorkflowInfo;

/** The spans an activation finished, through the worker's sink as the worker runs it, as ReadableSpans. */
function exported(): ReadableSpan[] {
  memory.reset();
  workflowSpanSink(new SimpleSpanProcessor(memory), new Resource({ 'service.name': 'test-worker' })).exporter.export.fn(INFO, takeFinished());
  return memory.getFinishedSpans();
}

/** A client's span (the order system's StartWorkflow, the bridge's SignalWorkflow) and the header it sends. */
function sent(name: string) {
  const span = tracer.startSpan(name);
  const headers = otel.context.with(otel.trace.setSpan(otel.ROOT_CONTEXT, span), () => headersWithContext({}));
  span.end();
  return { context: span.spanContext(), headers };
}

function activity(activityType: string): ActivityInput {
  return { activityType, args: [], options: { startToCloseTimeout: '1 minute' }, headers: {}, seq: 1 };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

beforeEach(() => startTracing(RUN_ID));

it('reads the SDK’s trace header and writes one the SDK reads back', () => {
  expect(TRACE_HEADER).toBe(SDK_TRACE_HEADER);
  const { context, headers } = sent('StartWorkflow:delivery');
  const read = contextOfHeaders(headers);
  expect(read).toMatchObject({ traceId: context.traceId, spanId: context.spanId, traceFlags: 1 });

  const span = startSpan('RunWorkflow:delivery', read);
  const back = otel.trace.getSpanContext(extractContextFromHeaders(withTraceHeader({}, span.context))!);
  expect(back).toMatchObject({ traceId: context.traceId, spanId: span.context.spanId, traceFlags: 1, isRemote: true });
  expect(span.parentSpanId).toBe(context.spanId);
});

it('ignores a header that is not a valid trace context, and adds none without a span', () => {
  expect(contextOfHeaders({ [TRACE_HEADER]: { metadata: { encoding: new TextEncoder().encode('json/plain') }, data: new TextEncoder().encode('{"traceparent":"00-00000000000000000000000000000000-0000000000000000-01"}') } })).toBeUndefined();
  expect(contextOfHeaders({ [TRACE_HEADER]: { metadata: { encoding: new TextEncoder().encode('binary/null') } } })).toBeUndefined();
  expect(withTraceHeader({}, undefined)).toEqual({});
});

it('makes a run’s ids from its run id alone: the same on a replay, without drawing the workflow’s random numbers', () => {
  const random = jest.spyOn(Math, 'random');
  const ids = () => [startSpan('a', undefined), startSpan('b', undefined)].flatMap((s) => [s.context.traceId, s.context.spanId]);
  const first = ids();
  startTracing(RUN_ID);
  expect(ids()).toEqual(first);
  startTracing('0d9e4c1b-7f3a-4b6e-8c2d-1a5f9e3b7c60');
  expect(ids()).not.toEqual(first);
  expect(first.join(' ')).toMatch(/^[0-9a-f]{32} [0-9a-f]{16} [0-9a-f]{32} [0-9a-f]{16}$/);
  expect(new Set(first).size).toBe(4);
  expect(random).not.toHaveBeenCalled();
  random.mockRestore();
});

it('exports a run’s spans in the SDK’s shape: an activity’s span under the run’s, its context in the activity’s header', async () => {
  const start = sent('StartWorkflow:delivery');
  const run = startSpan('RunWorkflow:delivery', contextOfHeaders(start.headers));
  setRunSpan(run.context);
  let headers: ActivityInput['headers'] = {};
  let finish!: (v: string) => void;
  const scheduled = new WorkflowSpansOutbound().scheduleActivity(activity('cancelDelivery'), (i) => {
    headers = i.headers;
    return new Promise<string>((resolve) => (finish = resolve));
  });
  await settled();
  expect(exported()).toEqual([]); // not finished while the activity runs
  finish('asked');
  expect(await scheduled).toBe('asked');

  const [startActivity] = exported();
  expect(startActivity).toMatchObject({ name: 'StartActivity:cancelDelivery', parentSpanId: run.context.spanId, status: { code: otel.SpanStatusCode.OK } });
  expect(startActivity!.spanContext()).toMatchObject({ traceId: start.context.traceId, traceFlags: 1 });
  // The sink adds the run's identity, and nothing else of its info (no memo, no search attributes).
  expect(startActivity!.attributes).toEqual({ workflowId: 'delivery:T-1', runId: RUN_ID, workflowType: 'delivery', taskQueue: 'deliveries', namespace: 'default' });
  // The activity's side (the SDK's activity interceptor) finds the StartActivity span as its parent.
  expect(otel.trace.getSpanContext(extractContextFromHeaders(headers)!)?.spanId).toBe(startActivity!.spanContext().spanId);
  // And the worker's OTLP exporter encodes it.
  const body = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest([startActivity!]))) as { resourceSpans: { scopeSpans: { spans: { name: string }[] }[] }[] };
  expect(body.resourceSpans[0]!.scopeSpans[0]!.spans[0]!.name).toBe('StartActivity:cancelDelivery');
});

it('gives a local activity (bookkeeping) no span on either side, but runs it in the delivery’s trace: its ask carries the run’s span', async () => {
  const run = startSpan('RunWorkflow:delivery', undefined);
  setRunSpan(run.context);
  let headers: ActivityInput['headers'] = {};
  const local: LocalActivityInput = { ...activity('askGate'), options: { startToCloseTimeout: '10 seconds' }, attempt: 1 };
  await new WorkflowSpansOutbound().scheduleLocalActivity(local, async (i) => void (headers = i.headers));
  await settled();
  expect(exported()).toEqual([]);

  // The worker's side: the activity runs with the header's span active and tracing suppressed.
  memory.reset();
  const inside = await new BookkeepingInbound().execute({ args: [], headers }, async () => {
    const client = tracer.startSpan('SignalWithStartWorkflow:gateAsk'); // what the SDK's client interceptor would make
    client.end();
    return { traceparent: activeTraceparent(), sent: contextOfHeaders(headersWithContext({})), recording: client.isRecording() };
  });
  expect(inside).toEqual({ traceparent: `00-${run.context.traceId}-${run.context.spanId}-01`, sent: undefined, recording: false });
  expect(memory.getFinishedSpans()).toEqual([]);
  // Which activities are bookkeeping: every local one, and the gate's answers (an activity unless the gate drains).
  expect([{ isLocal: true, activityType: 'askGate' }, { isLocal: false, activityType: 'answerDeliveries' }, { isLocal: false, activityType: 'quoteInGate' }].map(isBookkeeping)).toEqual([true, true, false]);
});

it('handles a signal from another trace in the run’s own, linked to the sender; one from its own trace as the sender’s child', async () => {
  const start = sent('StartWorkflow:delivery');
  const run = startSpan('RunWorkflow:delivery', contextOfHeaders(start.headers));
  setRunSpan(run.context);
  const inbound = new WorkflowSpansInbound();
  const bridge = sent('SignalWorkflow:statusChanged');
  let activeInHandler: string | undefined;
  await inbound.handleSignal({ signalName: 'statusChanged', args: [], headers: bridge.headers }, async () => void (activeInHandler = activeSpan()?.spanId));
  const own = tracer.startSpan('SignalWorkflow:cancel', {}, otel.trace.setSpanContext(otel.ROOT_CONTEXT, { traceId: run.context.traceId, spanId: run.context.spanId, traceFlags: 1, isRemote: true }));
  const ownHeaders = otel.context.with(otel.trace.setSpan(otel.ROOT_CONTEXT, own), () => headersWithContext({}));
  await inbound.handleSignal({ signalName: 'cancel', args: [], headers: ownHeaders }, async () => undefined);
  await settled();

  const [fromBridge, fromOwn] = exported();
  expect(fromBridge).toMatchObject({ name: 'HandleSignal:statusChanged', parentSpanId: run.context.spanId });
  expect(fromBridge!.spanContext().traceId).toBe(start.context.traceId);
  expect(fromBridge!.links.map((l) => l.context)).toEqual([expect.objectContaining({ traceId: bridge.context.traceId, spanId: bridge.context.spanId })]);
  expect(activeInHandler).toBe(fromBridge!.spanContext().spanId);
  expect(fromOwn).toMatchObject({ name: 'HandleSignal:cancel', parentSpanId: own.spanContext().spanId, links: [] });
  expect(JsonTraceSerializer.serializeRequest([fromBridge!, fromOwn!])).toBeDefined(); // links encode too
});

it('handles an update as the SDK did: a child of the caller’s span, with the update’s id', async () => {
  const run = startSpan('RunWorkflow:delivery', undefined);
  setRunSpan(run.context);
  const caller = sent('StartWorkflowUpdate:approveQuote');
  expect(await new WorkflowSpansInbound().handleUpdate({ updateId: 'u-1', name: 'approveQuote', args: [], headers: caller.headers }, async () => 'approved')).toBe('approved');
  await settled();
  const [update] = exported();
  expect(update).toMatchObject({ name: 'HandleUpdate:approveQuote', parentSpanId: caller.context.spanId, attributes: expect.objectContaining({ temporalUpdateId: 'u-1' }) });
});

it('runs the gate’s call for an order in that order’s trace: a GateWait span from its ask, the call’s activity its child', async () => {
  const ask = tracer.startSpan('RunActivity:askGate');
  const traceparent = `00-${ask.spanContext().traceId}-${ask.spanContext().spanId}-01`;
  ask.end();
  let headers: ActivityInput['headers'] = {};
  const call = () => new WorkflowSpansOutbound().scheduleActivity(activity('quoteInGate'), async (i) => void (headers = i.headers));
  const askedAt = Date.now() - 2_000;
  const failed = inTraceOf(traceparent, 'GateWait:quotes', askedAt, async () => {
    await call();
    throw new Error('courier down');
  });
  await expect(failed).rejects.toThrow('courier down');
  await settled();
  expect(activeSpan()).toBeUndefined(); // the scope ended with the call's synchronous part

  const [startActivity, wait] = exported();
  expect(wait).toMatchObject({ name: 'GateWait:quotes', parentSpanId: ask.spanContext().spanId, startTime: [Math.floor(askedAt / 1000), (askedAt % 1000) * 1e6], status: { code: otel.SpanStatusCode.ERROR, message: 'courier down' } });
  expect(wait!.spanContext().traceId).toBe(ask.spanContext().traceId);
  expect(startActivity!.parentSpanId).toBe(wait!.spanContext().spanId);
  expect(otel.trace.getSpanContext(extractContextFromHeaders(headers)!)?.spanId).toBe(startActivity!.spanContext().spanId);
});

it('puts the active span’s ids on workflow log lines beside the workflow id, as the SDK’s interceptor did', () => {
  const outbound = new WorkflowSpansOutbound();
  const line = { workflowId: 'delivery:T-1' };
  const run = startSpan('RunWorkflow:delivery', undefined);
  setRunSpan(run.context);
  expect(outbound.getLogAttributes(line, (a) => a)).toEqual({ trace_id: run.context.traceId, span_id: run.context.spanId, trace_flags: '01', workflowId: 'delivery:T-1' });
  const wait = startSpan('GateWait:quotes', run.context);
  expect(within(wait.context, () => new GateContextOutbound().getLogAttributes(line, (a) => a))).toMatchObject({ span_id: wait.context.spanId });
  startTracing(RUN_ID); // the gate's run: no span of its own, so a line outside an order's wait has none
  expect(new GateContextOutbound().getLogAttributes(line, (a) => a)).toEqual(line);
});

it('makes nothing when the ask carries no trace, or when tracing is off (an untraced bundle)', async () => {
  expect(await inTraceOf(undefined, 'GateWait:quotes', Date.now(), async () => 'made')).toBe('made');
  await settled();
  expect(exported()).toEqual([]);
  jest.resetModules(); // a run of an untraced bundle: no interceptor ever called startTracing
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const untraced = require('../../workflows/trace-context') as typeof import('../../workflows/trace-context');
  expect(await untraced.inTraceOf('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'GateWait:quotes', Date.now(), async () => 'made')).toBe('made');
  await settled();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  expect((require('../../workflows/trace-spans') as typeof import('../../workflows/trace-spans')).takeFinished()).toEqual([]);
});

it('gives a traced run no AsyncLocalStorage for a random scope it never sets, and leaves a scope it sets to the SDK', () => {
  // The SDK's own Activator methods, with Node's AsyncLocalStorage as the sandbox gives it, on activators with no scope yet (a run's start).
  (globalThis as { AsyncLocalStorage?: unknown }).AsyncLocalStorage = AsyncLocalStorage;
  type Activator = import('@temporalio/workflow/lib/internals').Activator & { currentRandomStorage?: AsyncLocalStorage<unknown> };
  let prototype!: Activator;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  jest.isolateModules(() => (prototype = (require('@temporalio/workflow/lib/internals') as typeof import('@temporalio/workflow/lib/internals')).Activator.prototype as Activator));
  delete (globalThis as { AsyncLocalStorage?: unknown }).AsyncLocalStorage;
  const activator = Object.create(prototype) as Activator;
  const restoring = (a: Activator) => a.bindCurrentRandom(() => 'next'); // what each interceptor's `next` is wrapped in
  expect(restoring(activator)()).toBe('next');
  expect(activator.currentRandomStorage).toBeInstanceOf(AsyncLocalStorage); // unpatched: the run's own, enabled until it leaves the cache
  activator.currentRandomStorage!.disable();

  const patched = Object.create(prototype) as Activator;
  (globalThis as { __TEMPORAL_ACTIVATOR__?: unknown }).__TEMPORAL_ACTIVATOR__ = patched;
  try {
    skipRestoringNoRandomScope();
    expect(restoring(patched)()).toBe('next');
    expect(patched.currentRandomStorage).toBeUndefined();
    // A run that sets a scope gets it, and `next` restores it as the SDK does.
    const scope = { random: () => 0.25 };
    expect(patched.withCurrentRandom(scope as never, () => patched.currentRandom())).toBe(0.25);
    expect(patched.currentRandomStorage).toBeInstanceOf(AsyncLocalStorage);
    patched.currentRandomStorage!.disable();
  } finally {
    delete (globalThis as { __TEMPORAL_ACTIVATOR__?: unknown }).__TEMPORAL_ACTIVATOR__;
  }
});
