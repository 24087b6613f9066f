/**
 * The workflow interceptors of a traced worker (bundled only when the worker exports traces:
 * bundleWorkflows in worker/worker.ts), in place of the SDK's OpenTelemetry ones, whose modules and
 * tracer provider each workflow run evaluated again (workflows/trace-spans.ts says how these make
 * spans instead). The same spans and headers as the SDK's: RunWorkflow, HandleSignal,
 * HandleUpdate, StartActivity, SignalWorkflow, ContinueAsNew, each the child of the active span (or
 * of the sender's), its context put into the command's `_tracer-data` header; trace_id/span_id on
 * workflow log lines. Not traced: queries and update validators, which run live only (a run's span
 * ids count its spans: a replay must make the same ones), and the workflows' bookkeeping: local
 * activities (their header carries the active span, so the ask to the gate carries the delivery's
 * trace) and the gate's answers (each ends the GateWait span that covers it). And a signal from
 * another trace (the bridge's webhook) is handled in the run's own trace, linked to the sender's,
 * so one delivery stays one trace.
 *
 * Each method returns `next`'s own promise, with no await or yield around a command: a traced
 * worker's commands are an untraced one's, and each replays the other's histories
 * (test/temporal/replay.test.ts replays the baseline both ways).
 */
import {
  ContinueAsNew,
  proxySinks,
  workflowInfo,
  type ActivityInput,
  type ConcludeActivationInput,
  type ContinueAsNewInput,
  type LocalActivityInput,
  type Next,
  type SignalInput,
  type SignalWorkflowInput,
  type UpdateInput,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptors,
  type WorkflowInternalsInterceptor,
  type WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { gateAnswerSignal } from '../contract/gate-messages';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry/lib/workflow/definitions';
import { activeSpan, contextOfHeaders, endWith, runSpan, setRunSpan, startSpan, startTracing, takeFinished, withSpanIds, withTraceHeader, within } from './trace-spans';

const isContinueAsNew = (err: unknown) => err instanceof ContinueAsNew;
const GATE_ANSWER = gateAnswerSignal.name;

export class WorkflowSpansInbound implements WorkflowInboundCallsInterceptor {
  execute(input: WorkflowExecuteInput, next: Next<WorkflowInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const span = startSpan(`RunWorkflow:${workflowInfo().workflowType}`, contextOfHeaders(input.headers));
    setRunSpan(span.context);
    return endWith(span, within(span.context, () => next(input)), isContinueAsNew);
  }

  handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>): Promise<void> {
    if (input.signalName === GATE_ANSWER) return next(input); // bookkeeping: the GateWait span it ends covers it
    const sender = contextOfHeaders(input.headers);
    const run = runSpan();
    const elsewhere = sender && run && sender.traceId !== run.traceId;
    const links = elsewhere ? [{ context: { traceId: sender.traceId, spanId: sender.spanId, traceFlags: sender.traceFlags, isRemote: true } }] : [];
    const span = startSpan(`HandleSignal:${input.signalName}`, elsewhere ? run : (sender ?? run), { links });
    return endWith(span, within(span.context, () => next(input)));
  }

  handleUpdate(input: UpdateInput, next: Next<WorkflowInboundCallsInterceptor, 'handleUpdate'>): Promise<unknown> {
    const span = startSpan(`HandleUpdate:${input.name}`, contextOfHeaders(input.headers) ?? runSpan(), { attributes: { temporalUpdateId: input.updateId } });
    return endWith(span, within(span.context, () => next(input)));
  }
}

/** A command with no span of its own, the active span's context in its header. */
function carryingActiveSpan<I extends { headers: ActivityInput['headers'] }>(input: I): I {
  return { ...input, headers: withTraceHeader(input.headers, activeSpan()) };
}

/** A command in a span of its own (StartActivity:…), whose context its header carries. */
function inSpan<I extends { headers: ActivityInput['headers'] }, R>(name: string, input: I, next: (input: I) => Promise<R>, benign?: (err: unknown) => boolean): Promise<R> {
  const span = startSpan(name, activeSpan());
  return endWith(span, next({ ...input, headers: withTraceHeader(input.headers, span.context) }), benign);
}

export class WorkflowSpansOutbound implements WorkflowOutboundCallsInterceptor {
  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    return inSpan(`StartActivity:${input.activityType}`, input, next);
  }

  /** Bookkeeping (the start's checks, the pacing settings, the ask to the gate): no span, the active one in its header (tracing/worker.ts). */
  scheduleLocalActivity(input: LocalActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>) {
    return next(carryingActiveSpan(input));
  }

  signalWorkflow(input: SignalWorkflowInput, next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>) {
    return inSpan(`SignalWorkflow:${input.signalName}`, input, next);
  }

  continueAsNew(input: ContinueAsNewInput, next: Next<WorkflowOutboundCallsInterceptor, 'continueAsNew'>) {
    return inSpan(`ContinueAsNew:${input.options.workflowType}`, input, next, isContinueAsNew);
  }

  getLogAttributes(input: Record<string, unknown>, next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>) {
    return next(withSpanIds(input));
  }
}

/**
 * The pacing gate: no spans of its own (one run serves many deliveries), only the active span (a
 * delivery's GateWait, from inTraceOf in workflows/trace-context.ts) put into the headers of the
 * activities it schedules, so their spans join that delivery's trace.
 */
export class GateContextOutbound implements WorkflowOutboundCallsInterceptor {
  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    return next(carryingActiveSpan(input));
  }

  scheduleLocalActivity(input: LocalActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>) {
    return next(carryingActiveSpan(input));
  }

  getLogAttributes(input: Record<string, unknown>, next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>) {
    return next(withSpanIds(input));
  }
}

/**
 * The spans an activation finished leave in one sink call as it concludes. Sink calls are not made
 * on replay: a replayed activation's spans were sent when it first ran.
 */
export class SpansOut implements WorkflowInternalsInterceptor {
  private readonly sinks = proxySinks<OpenTelemetrySinks>();

  concludeActivation(input: ConcludeActivationInput, next: Next<WorkflowInternalsInterceptor, 'concludeActivation'>) {
    const spans = takeFinished();
    if (spans.length > 0 && !workflowInfo().unsafe.isReplaying) this.sinks.exporter.export(spans);
    return next(input);
  }
}

/**
 * The SDK wraps each interceptor's `next` so that it restores the workflow-random scope of its
 * caller (`WorkflowRandomStream.with`), and the first such restore gives the run an
 * AsyncLocalStorage of its own. On Node 20 every enabled AsyncLocalStorage of the thread is
 * copied into every promise the thread makes, whichever run makes it (temporalio/sdk-typescript#1432):
 * with a few hundred cached runs that was most of what tracing added to the workflow threads' CPU
 * (docs/benchmarks.md, "What metrics and traces cost"). No code here sets a random scope, so restoring "none" while
 * the run has never had one is left out; once a run sets one, the SDK's own restore runs as before.
 * Which random numbers a run draws does not change.
 */
export function skipRestoringNoRandomScope(): void {
  type Activator = { currentRandomStorage?: unknown; withRandomSource?: (source: unknown, fn: () => unknown) => unknown };
  const activator = (globalThis as { __TEMPORAL_ACTIVATOR__?: Activator }).__TEMPORAL_ACTIVATOR__;
  const restore = activator?.withRandomSource;
  if (!activator || typeof restore !== 'function') return; // another SDK version: its own way
  activator.withRandomSource = function (this: Activator, source, fn) {
    return source === undefined && this.currentRandomStorage === undefined ? fn() : restore.call(this, source, fn);
  };
}

export const interceptors = (): WorkflowInterceptors => {
  const { workflowType, runId } = workflowInfo();
  startTracing(runId);
  skipRestoringNoRandomScope();
  const internals = [new SpansOut()];
  if (workflowType === 'pacingGate') return { outbound: [new GateContextOutbound()], internals };
  return { inbound: [new WorkflowSpansInbound()], outbound: [new WorkflowSpansOutbound()], internals };
};
