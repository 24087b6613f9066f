/**
 * A delivery's trace carried through the pacing gate: the delivery's ask carries its W3C
 * `traceparent` (GateRequest.trace, set by the askGate activity), and the gate schedules that
 * order's quote or creation inside it, so those activities and their HTTP calls join the
 * delivery's trace, sampled or not as the delivery is. A `GateWait` span covers the order's time in
 * the gate, from its ask to the call's end. OpenTelemetry's API only: without tracing in the bundle
 * (workflows/tracing-interceptors.ts registers the SDK's tracer) its calls do nothing. Either way
 * `fn`'s promise is returned as is, so no command changes.
 */
import { propagation, ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';

export function inTraceOf<T>(traceparent: string | undefined, name: string, startedAt: number, fn: () => Promise<T>): Promise<T> {
  if (!traceparent) return fn();
  const parent = propagation.extract(ROOT_CONTEXT, { traceparent });
  return trace.getTracer('delivery-orchestrator').startActiveSpan(name, { startTime: startedAt }, parent, (span) => {
    const p = fn();
    p.then(
      () => span.end(),
      (err: unknown) => {
        span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
        span.end();
      },
    );
    return p;
  });
}
