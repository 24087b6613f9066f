/**
 * Spans of our own where no interceptor or instrumentation makes one: each webhook the bridge
 * serves (a SERVER span, child of the courier's `traceparent` when it sends one; its attributes are
 * the route and the workflow ID: never a body, a header's value, a key or personal data), and the
 * active trace for log lines and for messages that have no headers.
 * Without tracing installed (tracing/install.ts) each helper calls through at once.
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, trace, TraceFlags, type Span } from '@opentelemetry/api';
import { activeTracing } from './install';

const tracer = () => trace.getTracer('delivery-orchestrator');

/** One request served, as a SERVER span, child of the caller's `traceparent` if it sent one. */
export async function httpServerSpan<T>(name: string, headers: Record<string, string | string[] | undefined>, serve: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!activeTracing()) return serve(undefined);
  const parent = propagation.extract(context.active(), headers);
  return tracer().startActiveSpan(name, { kind: SpanKind.SERVER }, parent, async (span) => {
    try {
      return await serve(span);
    } finally {
      span.end();
    }
  });
}

/** `trace_id` of the active span, for a log line (empty without one, or when its trace is not sampled: no backend has it). */
export function traceFields(): { trace_id?: string } {
  const ctx = trace.getActiveSpan()?.spanContext();
  return ctx && trace.isSpanContextValid(ctx) && ctx.traceFlags & TraceFlags.SAMPLED ? { trace_id: ctx.traceId } : {};
}

/**
 * The active span's context as a W3C `traceparent` (its sampled flag too, so the receiver follows
 * the trace's decision), to carry in a message that has no headers: the ask to the gate.
 */
export function activeTraceparent(): string | undefined {
  const active = trace.getSpanContext(context.active()); // none without tracing installed: no context manager, no span
  if (!active) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpanContext(ROOT_CONTEXT, active), carrier);
  return carrier.traceparent;
}
