/**
 * What a traced worker adds to its Worker options: the activity interceptors (a RunActivity span
 * per attempt, child of the scheduling workflow's span, none for bookkeeping; trace_id on activity
 * log lines) and, for workers that run workflows, the sink through which the workflow sandbox hands
 * its spans out (workflows/trace-spans.ts sends them in the shape the SDK's own workflow interceptors send).
 */
import { context, createTraceState } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-node';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { extractContextFromHeaders } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import type { SerializableSpan } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions';
import { OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor } from '@temporalio/interceptors-opentelemetry/lib/worker';
import type { InjectedSinks, WorkerOptions } from '@temporalio/worker';
import type { WorkflowInfo } from '@temporalio/workflow';
import type { GateActivities } from '../activities/gate-activities';
import type { Tracing } from './install';

/** The workflow interceptor module a traced worker's bundle must include. */
export const WORKFLOW_TRACING_MODULE = require.resolve('../workflows/tracing-interceptors');

export function tracedWorkerOptions(tracing: Tracing | undefined, runsWorkflows: boolean): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  if (!tracing) return {};
  return {
    interceptors: {
      activity: [(ctx) => ({ inbound: isBookkeeping(ctx.info) ? new BookkeepingInbound() : new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
    },
    ...(runsWorkflows && { sinks: workflowSpanSink(tracing.spanProcessor, tracing.resource) }),
  };
}

const ANSWERS = 'answerDeliveries' satisfies keyof GateActivities;

/** Local activities (the start's checks, the pacing settings, the ask to the gate) and the gate's answers (an activity unless the gate drains for continue-as-new). */
export const isBookkeeping = (info: { isLocal: boolean; activityType: string }): boolean => info.isLocal || info.activityType === ANSWERS;

/**
 * The workflows' bookkeeping: no span, neither its own nor its client calls' (tracing suppressed),
 * but run in its header's trace, so its log lines carry the trace id and the ask carries the
 * delivery's traceparent (tracing/spans.ts, activeTraceparent). Local activities were 7 of a delivered
 * order's 22 worker spans, 7 of the 15 up to its creation (docs/benchmarks.md, "What metrics and traces cost").
 */
export class BookkeepingInbound implements ActivityInboundCallsInterceptor {
  execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    return context.with(suppressTracing(extractContextFromHeaders(input.headers) ?? context.active()), () => next(input));
  }
}

/**
 * The workflow spans' sink, as the SDK's `makeWorkflowExporter` but with the run's identity alone as
 * attributes: the SDK's copies the whole WorkflowInfo into every span (search attributes, memo,
 * last result…), which a tracing backend has no use for and which took ~3× the OTLP encoding time.
 */
export function workflowSpanSink(processor: SpanProcessor, resource: Resource): InjectedSinks<{ exporter: { export(spans: SerializableSpan[]): void } }> {
  const readable = ({ spanContext: { traceState, ...context }, ...span }: SerializableSpan): ReadableSpan =>
    ({ ...span, resource, spanContext: () => ({ ...context, traceState: traceState ? createTraceState(traceState) : undefined }) }) as unknown as ReadableSpan;
  return {
    exporter: {
      export: {
        fn: (info: WorkflowInfo, spans: SerializableSpan[]) => {
          const run = { workflowId: info.workflowId, runId: info.runId, workflowType: info.workflowType, taskQueue: info.taskQueue, namespace: info.namespace };
          for (const span of spans) processor.onEnd(readable({ ...span, attributes: { ...span.attributes, ...run } }));
        },
      },
    },
  };
}

/**
 * Whether a bundle's code has the workflow interceptors (a bundle made without tracing has none):
 * their class's declaration, which no other bundled module has (a file name could be in a comment).
 */
export function bundleIsTraced(code: string): boolean {
  return code.includes('class WorkflowSpansInbound');
}
