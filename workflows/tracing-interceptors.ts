/**
 * The workflow interceptors of a traced worker (bundled only when the worker exports traces:
 * bundleWorkflows in worker/worker.ts). The SDK's OpenTelemetry interceptors make the spans
 * (RunWorkflow, StartActivity, HandleSignal, ...) and put trace_id/span_id on workflow log lines;
 * one change of ours: a signal into a delivery from another trace (the bridge's webhook, the
 * gate's batched answers) is handled in the delivery's own trace, linked to the sender's, so one
 * delivery stays one trace.
 */
import * as otel from '@opentelemetry/api';
import { OpenTelemetryInboundInterceptor, OpenTelemetryInternalsInterceptor, OpenTelemetryOutboundInterceptor } from '@temporalio/interceptors-opentelemetry/lib/workflow';
import { extractContextFromHeaders } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import { workflowInfo, type Next, type SignalInput, type WorkflowExecuteInput, type WorkflowInboundCallsInterceptor, type WorkflowInterceptors } from '@temporalio/workflow';

class DeliveryTraceInbound extends OpenTelemetryInboundInterceptor {
  private run: otel.Context | undefined;

  override async execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    return super.execute(input, (i) => {
      this.run = otel.context.active(); // the RunWorkflow span's context
      return next(i);
    });
  }

  override async handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    const sender = otel.trace.getSpanContext(extractContextFromHeaders(input.headers) ?? otel.ROOT_CONTEXT);
    const own = this.run && otel.trace.getSpanContext(this.run);
    if (!this.run || !own || !sender || sender.traceId === own.traceId) return super.handleSignal(input, next);
    return this.tracer.startActiveSpan(`HandleSignal:${input.signalName}`, { links: [{ context: sender }] }, this.run, async (span) => {
      try {
        return await next(input);
      } finally {
        span.end();
      }
    });
  }
}

export const interceptors = (): WorkflowInterceptors => ({
  inbound: [workflowInfo().workflowType === 'delivery' ? new DeliveryTraceInbound() : new OpenTelemetryInboundInterceptor()],
  outbound: [new OpenTelemetryOutboundInterceptor()],
  internals: [new OpenTelemetryInternalsInterceptor()],
});
