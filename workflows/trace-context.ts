/**
 * A delivery's trace carried through the pacing gate: the delivery's ask carries its W3C
 * `traceparent` (GateRequest.trace, set by the askGate activity), and the gate schedules that
 * order's quote or creation inside it, so those activities and their HTTP calls join the
 * delivery's trace. A `GateWait` span covers the order's time in the gate, from its ask to the
 * call's end. Without tracing in the bundle (workflows/tracing-interceptors.ts) nothing is made;
 * either way `fn`'s promise is returned as is, so no command changes.
 */
import { endWith, parseTraceparent, startSpan, tracingOn, within } from './trace-spans';

export async function inTraceOf<T>(traceparent: string | undefined, name: string, startedAt: number, fn: () => Promise<T>): Promise<T> {
  const parent = traceparent && tracingOn() ? parseTraceparent(traceparent) : undefined;
  if (!parent) return fn();
  const span = startSpan(name, parent, { scope: 'delivery-orchestrator', startedAt });
  return endWith(span, within(span.context, fn));
}
