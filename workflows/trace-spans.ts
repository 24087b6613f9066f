/**
 * A traced workflow run's spans, made without OpenTelemetry in the sandbox: the SDK's workflow
 * interceptors evaluate OpenTelemetry's modules and build a tracer provider for every run, which
 * cost a traced worker about a third more CPU (docs/benchmarks.md, "What metrics and traces cost").
 * Here a span is a few plain fields; the run keeps them in this module (the sandbox gives each run
 * its own module state); finished spans leave once per activation through the worker's sink
 * (tracing/worker.ts), in the shape the SDK's own workflow exporter sends.
 * Headers are the SDK's: `_tracer-data`, a JSON `{traceparent}` (W3C), so its client and activity
 * interceptors read and write the same context.
 *
 * The active span is the innermost `within` scope, else the run's span: a scope lasts while its
 * function runs synchronously, which is when a workflow schedules what it schedules (no
 * AsyncLocalStorage, whose copy into every promise was a cost of its own). Nothing here awaits,
 * yields or draws from the workflow's random numbers: a traced run's commands are an untraced one's.
 * Off until `startTracing`: the workflow interceptors call it, and only a traced bundle has them.
 */
import type { Attributes, Link, SpanStatus } from '@opentelemetry/api';
import type { SerializableSpan, SerializableSpanContext } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions';
import { ApplicationFailure, defaultPayloadConverter, type Headers } from '@temporalio/workflow';

/** The SDK's trace header (TRACE_HEADER of @temporalio/interceptors-opentelemetry, not imported: its module loads OpenTelemetry). */
export const TRACE_HEADER = '_tracer-data';
/** The instrumentation scope of the spans the SDK's interceptors made, kept for theirs. */
export const INTERCEPTOR_SCOPE = '@temporalio/interceptor-workflow';

export type SpanContext = SerializableSpanContext;

export interface OpenSpan {
  readonly name: string;
  readonly context: SpanContext;
  readonly parentSpanId?: string;
  readonly startedAt: number;
  readonly links: Link[];
  readonly attributes: Attributes;
  readonly scope: string;
}

let on = false;
let seeds: [number, number] = [0, 0];
let made = 0;
let run: SpanContext | undefined;
let current: SpanContext | undefined;
let finished: SerializableSpan[] = [];

/** Turns tracing on for this run; ids derive from its run id, so a replay makes the same ones. */
export function startTracing(runId: string): void {
  on = true;
  seeds = [fnv1a(runId, 0x811c9dc5), fnv1a(runId, 0x01000193)];
  made = 0;
  run = current = undefined;
  finished = [];
}

export const tracingOn = (): boolean => on;

/** The run's own span (RunWorkflow), the parent of what no scope covers. */
export function setRunSpan(context: SpanContext): void {
  run = context;
}
export const runSpan = (): SpanContext | undefined => run;
export const activeSpan = (): SpanContext | undefined => current ?? run;

/** Runs `fn` with `context` active for what it does synchronously (e.g. schedule an activity). */
export function within<T>(context: SpanContext, fn: () => T): T {
  const outer = current;
  current = context;
  try {
    return fn();
  } finally {
    current = outer;
  }
}

/** A span, child of `parent` (a new trace without one); `startedAt` in epoch ms, workflow time by default. */
export function startSpan(name: string, parent: SpanContext | undefined, o: { scope?: string; links?: Link[]; attributes?: Attributes; startedAt?: number } = {}): OpenSpan {
  const context: SpanContext = {
    traceId: parent?.traceId ?? newId() + newId(),
    spanId: newId(),
    traceFlags: parent?.traceFlags ?? 1, // sampled, unless the parent was not (parent-based, as OpenTelemetry's default)
    ...(parent?.traceState && { traceState: parent.traceState }),
  };
  return { name, context, parentSpanId: parent?.spanId, startedAt: o.startedAt ?? Date.now(), links: o.links ?? [], attributes: o.attributes ?? {}, scope: o.scope ?? INTERCEPTOR_SCOPE };
}

/** Ends `span` when `p` settles (failed with `err` unless `benign(err)`), and returns `p` itself: no extra step before its caller's. */
export function endWith<T>(span: OpenSpan, p: Promise<T>, benign?: (err: unknown) => boolean): Promise<T> {
  p.then(
    () => endSpan(span, { code: 1 }),
    (err: unknown) => endSpan(span, benign?.(err) ? { code: 1 } : statusOf(err)),
  );
  return p;
}

function statusOf(err: unknown): SpanStatus {
  // As the SDK's: a benign application failure leaves the status unset.
  if (err instanceof ApplicationFailure && err.category === 'BENIGN') return { code: 0 };
  return { code: 2, message: err instanceof Error ? err.message : String(err) };
}

function endSpan(span: OpenSpan, status: SpanStatus): void {
  if (!(span.context.traceFlags & 1)) return; // not sampled: nothing to send
  const end = Math.max(Date.now(), span.startedAt);
  finished.push({
    name: span.name,
    kind: 0, // INTERNAL
    spanContext: span.context,
    parentSpanId: span.parentSpanId,
    startTime: hrTime(span.startedAt),
    endTime: hrTime(end),
    status,
    attributes: span.attributes,
    links: span.links,
    events: [],
    duration: hrTime(end - span.startedAt),
    ended: true,
    droppedAttributesCount: 0,
    droppedLinksCount: 0,
    droppedEventsCount: 0,
    instrumentationLibrary: { name: span.scope },
  });
}

/** The spans finished since the last call, to send (or drop, on replay: they were sent when first made). */
export function takeFinished(): SerializableSpan[] {
  const spans = finished;
  if (spans.length > 0) finished = [];
  return spans;
}

/** `headers` with `context` in the SDK's trace header (unchanged without one). */
export function withTraceHeader(headers: Headers, context: SpanContext | undefined): Headers {
  if (!context) return headers;
  const carrier: Record<string, string> = { traceparent: traceparentOf(context) };
  if (context.traceState) carrier.tracestate = context.traceState;
  return { ...headers, [TRACE_HEADER]: defaultPayloadConverter.toPayload(carrier) };
}

/** The sender's span context from the SDK's trace header, if there is a valid one. */
export function contextOfHeaders(headers: Headers): SpanContext | undefined {
  const payload = headers[TRACE_HEADER];
  if (!payload) return undefined;
  let carrier: unknown;
  try {
    carrier = defaultPayloadConverter.fromPayload(payload);
  } catch {
    return undefined; // not ours to fail a workflow over
  }
  const { traceparent, tracestate } = (carrier ?? {}) as { traceparent?: unknown; tracestate?: unknown };
  const context = typeof traceparent === 'string' ? parseTraceparent(traceparent) : undefined;
  return context && typeof tracestate === 'string' && tracestate ? { ...context, traceState: tracestate } : context;
}

const TRACEPARENT = /^\s?([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?\s?$/;
const ZEROS = /^0+$/;

/** A W3C `traceparent`'s span context, as OpenTelemetry's W3C propagator reads it; undefined if invalid. */
export function parseTraceparent(traceparent: string): SpanContext | undefined {
  const m = TRACEPARENT.exec(traceparent);
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && rest) || ZEROS.test(traceId) || ZEROS.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true };
}

export const traceparentOf = (c: SpanContext): string => `00-${c.traceId}-${c.spanId}-${(c.traceFlags & 0xff).toString(16).padStart(2, '0')}`;

/** A log line's attributes with the active span's ids, as the SDK's workflow interceptor added them. */
export function withSpanIds(input: Record<string, unknown>): Record<string, unknown> {
  const span = activeSpan();
  return span ? { trace_id: span.traceId, span_id: span.spanId, trace_flags: `0${span.traceFlags.toString(16)}`, ...input } : input;
}

/** A 64-bit id (16 hex digits): this run's n-th, mixed from its seeds (lowbias32: a bijection, so no two of a run's first 2³² collide). */
function newId(): string {
  const n = ++made;
  const [a, b] = seeds;
  const hi = mix32(a ^ mix32(n));
  const lo = mix32(b ^ mix32(n + 0x9e3779b9)) || 1; // never all zeros (an invalid id)
  return hex8(hi) + hex8(lo);
}

const hex8 = (n: number) => n.toString(16).padStart(8, '0');

function mix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

function fnv1a(s: string, basis: number): number {
  let h = basis;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

const hrTime = (ms: number): [number, number] => [Math.floor(ms / 1000), Math.round((ms % 1000) * 1e6)];
