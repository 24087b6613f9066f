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
import { workflowInfo, type ActivateInput, type ActivityInput, type ConcludeActivationInput, type LocalActivityInput, type Next, type SignalInput, type WorkflowInternalsInterceptor, type WorkflowOutboundCallsInterceptor, type WorkflowExecuteInput, type WorkflowInboundCallsInterceptor, type WorkflowInterceptors } from '@temporalio/workflow';

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

/** The part of the SDK's workflow context manager this needs: its AsyncLocalStorage (a field the SDK does not export). */
type RunStorage = { run<R>(store: otel.Context, fn: () => R): R; disable(): void };

/**
 * Each workflow run's context lives in an AsyncLocalStorage of its own (the SDK's workflow context
 * manager), and Node copies every enabled storage into every promise its worker thread makes: with
 * N traced workflows cached, each promise of any of them paid N copies, a cost growing with the
 * open deliveries (docs/benchmarks.md, "What metrics and traces cost"). A run's storage is enabled
 * only while its own activation runs. Its pending promises keep the context they were made in and
 * find it again when a later activation resumes them; nothing about commands changes.
 */
export class OwnActivationContext implements WorkflowInternalsInterceptor {
  private storage: RunStorage | undefined;

  constructor() {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- private in the API, checked below: no storage, nothing done
    const manager = (otel.context as any)._getContextManager?.() as { storage?: Partial<RunStorage> } | undefined;
    const storage = manager?.storage;
    if (typeof storage?.run === 'function' && typeof storage.disable === 'function') this.storage = storage as RunStorage;
  }

  activate(input: ActivateInput, next: Next<WorkflowInternalsInterceptor, 'activate'>): void {
    // The root context, as the context manager's own default: run() enables the storage, and it stays enabled for the microtasks that follow.
    return this.storage ? this.storage.run(otel.ROOT_CONTEXT, () => next(input)) : next(input);
  }

  concludeActivation(input: ConcludeActivationInput, next: Next<WorkflowInternalsInterceptor, 'concludeActivation'>) {
    this.storage?.disable();
    return next(input);
  }
}

export const interceptors = (): WorkflowInterceptors => {
  const type = workflowInfo().workflowType;
  // The SDK's interceptors first: made, they register the run's context manager that OwnActivationContext finds.
  if (type === 'pacingGate') {
    const outbound = [new GateContextOutbound()];
    return { outbound, internals: [new OpenTelemetryInternalsInterceptor(), new OwnActivationContext()] };
  }
  const inbound = [type === 'delivery' ? new DeliveryTraceInbound() : new OpenTelemetryInboundInterceptor()];
  const outbound = [new OpenTelemetryOutboundInterceptor()];
  return { inbound, outbound, internals: [new OpenTelemetryInternalsInterceptor(), new OwnActivationContext()] };
};
