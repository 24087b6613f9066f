/**
 * A delivery's trace carried through the pacing gate: the delivery's ask carries its W3C
 * `traceparent` (GateRequest.trace, set by the askGate activity), and the gate schedules that
 * order's quote or creation inside it, so those activities and their HTTP calls join the
 * delivery's trace. A `GateWait` span covers the order's time in the gate, from its ask to the
 * call's end. Without tracing in the bundle (workflows/tracing-interceptors.ts) OpenTelemetry's
 * API is a no-op here: nothing is made, no command changes either way.
 */
import type * as Otel from '@opentelemetry/api';

export async function inTraceOf<T>(traceparent: string | undefined, name: string, startedAt: number, fn: () => Promise<T>): Promise<T> {
  if (!traceparent) return fn();
  // Required here, not imported: the sandbox evaluates a bundle's modules for each workflow run,
  // and an untraced worker's asks carry no traceparent, so it never pays for this module.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const otel = require('@opentelemetry/api') as typeof Otel;
  const parent = otel.propagation.extract(otel.ROOT_CONTEXT, { traceparent });
  if (!otel.trace.getSpanContext(parent)) return fn();
  return otel.trace.getTracer('delivery-orchestrator').startActiveSpan(name, { startTime: startedAt }, parent, async (span) => {
    try {
      return await fn();
    } finally {
      span.end();
    }
  });
}
