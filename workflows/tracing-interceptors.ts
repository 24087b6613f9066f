/**
 * The workflow interceptors of a traced worker (bundled only when the worker exports traces:
 * bundleWorkflows in worker/worker.ts): the SDK's own OpenTelemetry interceptors
 * (@temporalio/interceptors-opentelemetry; RunWorkflow, StartActivity, HandleSignal… spans, the
 * context in each command's `_tracer-data` header, trace ids on log lines), and two of ours, on
 * OpenTelemetry's public API, where the SDK's do not serve:
 * - a signal or an update sent from another trace (the bridge's webhook, the gate's answers, the
 *   CLI's cancel) is handled in the run's own trace, linked to the sender's: the SDK's would make
 *   it a child of the sender's trace, so one delivery would be many traces, each sampled on its own;
 * - the pacing gate (one run serves many deliveries) makes no span of its own: what it schedules
 *   for a delivery (its quote, its creation) carries that delivery's trace (workflows/trace-context.ts),
 *   anything else none, where the SDK's would root a trace per command, sampled or not by a
 *   sandbox that cannot read OTEL_TRACES_SAMPLER. And its commands are an untraced gate's: the
 *   SDK's outbound interceptor adds a step before each command in a run whose history was recorded
 *   without it (its SdkFlags), and the gate, which upgrades in place, must replay what workers
 *   with tracing off recorded (test/temporal/replay.test.ts replays the baseline both ways; the
 *   SDK's own replay the deliveries' histories as they are).
 */
import { context, propagation, ROOT_CONTEXT, trace, TraceFlags, type Context, type SpanContext } from '@opentelemetry/api';
import { OpenTelemetryInboundInterceptor, OpenTelemetryInternalsInterceptor, OpenTelemetryOutboundInterceptor } from '@temporalio/interceptors-opentelemetry';
import { defaultPayloadConverter, workflowInfo, type Headers, type Next, type SignalInput, type UpdateInput, type WorkflowExecuteInput, type WorkflowInboundCallsInterceptor, type WorkflowInterceptors, type WorkflowOutboundCallsInterceptor } from '@temporalio/workflow';
import { pacingGate } from './gate';

/** The header the SDK's interceptors carry a W3C trace context in (a JSON `{traceparent, tracestate}`): their wire format. */
const TRACE_HEADER = '_tracer-data';

const senderOf = (headers: Headers): SpanContext | undefined => {
  const payload = headers[TRACE_HEADER];
  const carrier = payload ? (defaultPayloadConverter.fromPayload(payload) as Record<string, string>) : {};
  return trace.getSpanContext(propagation.extract(ROOT_CONTEXT, carrier));
};

const withContext = (headers: Headers, ctx: Context): Headers => {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return { ...headers, [TRACE_HEADER]: defaultPayloadConverter.toPayload(carrier) };
};

/** What the two halves of a run's signal handling share: the run's span, and each message's sender to link. */
class RunTrace {
  run: SpanContext | undefined;
  readonly links = new WeakMap<object, SpanContext>();

  /** The message's input, its header pointing at the run's span when its sender is in another trace. */
  intoRun<I extends { headers: Headers }>(input: I): I {
    const sender = senderOf(input.headers);
    if (!this.run || sender?.traceId === this.run.traceId) return input;
    const moved = { ...input, headers: withContext(input.headers, trace.setSpanContext(ROOT_CONTEXT, this.run)) };
    if (sender && sender.traceFlags & TraceFlags.SAMPLED) this.links.set(moved, sender);
    return moved;
  }
}

/** Before the SDK's: moves a message from another trace into the run's. */
class IntoRunTrace implements WorkflowInboundCallsInterceptor {
  constructor(private readonly t: RunTrace) {}

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>) {
    return next(this.t.intoRun(input));
  }

  handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>) {
    return next(this.t.intoRun(input));
  }

  validateUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'validateUpdate'>) {
    return next(this.t.intoRun(input));
  }
}

/** After the SDK's, inside its spans: keeps the run's span, and links a moved message's span to its sender's. */
class LinkToSender implements WorkflowInboundCallsInterceptor {
  constructor(private readonly t: RunTrace) {}

  execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>) {
    this.t.run = trace.getSpanContext(context.active());
    return next(input);
  }

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>) {
    return next(this.link(input));
  }

  handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>) {
    return next(this.link(input));
  }

  private link<I extends object>(input: I): I {
    const sender = this.t.links.get(input);
    if (sender) trace.getActiveSpan()?.addLink({ context: sender });
    return input;
  }
}

/**
 * The gate's commands: the active delivery's trace (its GateWait) put into the header of what it
 * schedules, none outside one, no span, no step of its own. The SDK's outbound interceptor is made
 * for its tracer (the sandbox's, which GateWait spans need) and trace ids on the gate's log lines.
 */
class GateCommands implements WorkflowOutboundCallsInterceptor {
  private readonly sdk = new OpenTelemetryOutboundInterceptor();

  scheduleActivity: WorkflowOutboundCallsInterceptor['scheduleActivity'] = (input, next) => next(inDeliveryTrace(input));
  scheduleLocalActivity: WorkflowOutboundCallsInterceptor['scheduleLocalActivity'] = (input, next) => next(inDeliveryTrace(input));
  getLogAttributes: WorkflowOutboundCallsInterceptor['getLogAttributes'] = (input, next) => this.sdk.getLogAttributes(input, next);
}

function inDeliveryTrace<I extends { headers: Headers }>(input: I): I {
  return trace.getSpanContext(context.active()) ? { ...input, headers: withContext(input.headers, context.active()) } : input;
}

export const interceptors = (): WorkflowInterceptors => {
  const internals = [new OpenTelemetryInternalsInterceptor()];
  if (workflowInfo().workflowType === pacingGate.name) return { outbound: [new GateCommands()], internals };
  const run = new RunTrace();
  return { inbound: [new IntoRunTrace(run), new OpenTelemetryInboundInterceptor(), new LinkToSender(run)], outbound: [new OpenTelemetryOutboundInterceptor()], internals };
};
