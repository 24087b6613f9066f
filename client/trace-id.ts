/**
 * A delivery's trace id, for "a delivery's trace in three steps" (docs/monitoring.md): the trace
 * its start carried. An order system (or the CLI) that traces sends its context in the start's
 * `_tracer-data` header, the Temporal SDKs' OpenTelemetry header (the same in every language: it
 * is how a Go starter and a TypeScript worker share a trace), a payload holding the W3C
 * `traceparent`. It is read from the start event of the delivery's current run (a continue-as-new
 * carries the trace on), parsed by
 * OpenTelemetry's own W3C parser. No header (a start without tracing): no trace id.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { parseTraceParent, TRACE_PARENT_HEADER } from '@opentelemetry/core';

const TRACER_HEADER = '_tracer-data';

export async function startTraceId(temporal: Client, workflowId: string): Promise<string | undefined> {
  const history = await temporal.workflowService.getWorkflowExecutionHistory({ namespace: temporal.options.namespace, execution: { workflowId }, maximumPageSize: 1 });
  const payload = history.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.header?.fields?.[TRACER_HEADER];
  if (!payload) return undefined;
  const carrier = defaultPayloadConverter.fromPayload<Record<string, unknown>>(payload);
  const traceparent = carrier?.[TRACE_PARENT_HEADER];
  return typeof traceparent === 'string' ? (parseTraceParent(traceparent)?.traceId ?? undefined) : undefined;
}
