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
import { extractContextFromHeaders, headersWithContext } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import { workflowInfo, type ActivityInput, type LocalActivityInput, type Next, type SignalInput, type WorkflowOutboundCallsInterceptor, type WorkflowExecuteInput, type WorkflowInboundCallsInterceptor, type WorkflowInterceptors } from '@temporalio/workflow';

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

/**
 * The pacing gate upgrades in place and replays histories recorded by workers with tracing off (or
 * on): the SDK's interceptors yield to the event loop around each command, which moves the gate's
 * patch markers against its commands, so a traced worker could not replay an untraced gate's
 * history (test/temporal/replay.test.ts replays the baseline both ways). The gate gets only this:
 * the active context (a delivery's, from inTraceOf) put into its activities' headers, at once, so
 * their spans join the delivery's trace and its commands are those of an untraced gate.
 */
class GateContextOutbound implements WorkflowOutboundCallsInterceptor {
  constructor() {
    // The SDK's interceptors register its tracer provider, context manager and W3C propagator in
    // the sandbox when first made; without them inTraceOf would find no context to run in.
    void new OpenTelemetryOutboundInterceptor();
  }

  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    return next({ ...input, headers: headersWithContext(input.headers) });
  }

  scheduleLocalActivity(input: LocalActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>) {
    return next({ ...input, headers: headersWithContext(input.headers) });
  }
}

export const interceptors = (): WorkflowInterceptors => {
  const type = workflowInfo().workflowType;
  if (type === 'pacingGate') return { outbound: [new GateContextOutbound()], internals: [new OpenTelemetryInternalsInterceptor()] };
  return {
    inbound: [type === 'delivery' ? new DeliveryTraceInbound() : new OpenTelemetryInboundInterceptor()],
    outbound: [new OpenTelemetryOutboundInterceptor()],
    internals: [new OpenTelemetryInternalsInterceptor()],
  };
};
