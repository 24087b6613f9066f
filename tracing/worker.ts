/**
 * What a traced worker adds to its Worker options, all the SDK's own
 * (@temporalio/interceptors-opentelemetry): the activity interceptors (a RunActivity span per
 * attempt, child of the scheduling workflow's span; trace_id on activity log lines), the Nexus
 * operation interceptors, and, for workers that run workflows, the sink through which the workflow
 * sandbox hands its spans to the process's span processor (workflows/tracing-interceptors.ts makes them).
 */
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryNexusInboundInterceptor,
  OpenTelemetryNexusOutboundInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkerOptions } from '@temporalio/worker';
import type { Tracing } from './install';

/** The workflow interceptor module a traced worker's bundle must include. */
export const WORKFLOW_TRACING_MODULE = require.resolve('../workflows/tracing-interceptors');

export function tracedWorkerOptions(tracing: Tracing | undefined, runsWorkflows: boolean): Pick<WorkerOptions, 'interceptors' | 'sinks'> {
  if (!tracing) return {};
  return {
    interceptors: {
      activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
      nexus: [(ctx) => ({ inbound: new OpenTelemetryNexusInboundInterceptor(ctx), outbound: new OpenTelemetryNexusOutboundInterceptor(ctx) })],
    },
    ...(runsWorkflows && { sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor, tracing.resource) } }),
  };
}

/**
 * Whether a bundle's code has the workflow interceptors (a bundle made without tracing has none):
 * a class's declaration of workflows/tracing-interceptors.ts, which no other bundled module has
 * (a file name could be in a comment).
 */
export function bundleIsTraced(code: string): boolean {
  return code.includes('class IntoRunTrace');
}
