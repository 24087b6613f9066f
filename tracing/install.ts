/**
 * The process's tracer: a NodeTracerProvider (W3C trace context, spans batched to OTLP over
 * HTTP/protobuf) registered globally, so the Temporal SDK's OpenTelemetry interceptors, the
 * provider's HTTP calls and the bridge all report to it. Installed once per process, and only when
 * tracing/config.ts says so: otherwise nothing is registered and every helper here is a no-op.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry/lib/client';
import { tracingConfigFromEnv, type TracingConfig } from './config';
import { CountingExporter, installDiagnostics, traceDiagnostics, type SpanCounts, type TraceLogLine } from './health';

export interface Tracing {
  config: TracingConfig;
  resource: Resource;
  spanProcessor: BatchSpanProcessor;
  /** Spans exported, failed and dropped so far (tracing/health.ts; dropped: counted only with `log`). */
  spans: Readonly<SpanCounts>;
  /** Sends the spans still batched (before exit), then stops. */
  shutdown(): Promise<void>;
}

let installed: Tracing | undefined;

/** The tracing this process installed, if any. */
export function activeTracing(): Tracing | undefined {
  return installed;
}

/**
 * Installs tracing when the environment asks for it (OTEL_EXPORTER_OTLP_ENDPOINT …); `service` is
 * the process's service name unless OTEL_SERVICE_NAME says otherwise. `log`, in a process of ours
 * (the worker, the bridge), takes OpenTelemetry's diagnostics: its warnings, the exporter's failures
 * and the spans dropped (tracing/health.ts); without it (the client library, in an order system's
 * process) the process's own diagnostics stay as its owner set them. A second call returns the first.
 */
export function installTracing(service: string, env: NodeJS.ProcessEnv = process.env, log?: (line: TraceLogLine) => void): Tracing | undefined {
  if (installed) return installed;
  const config = tracingConfigFromEnv(service, env);
  if (!config) return undefined;
  const resource = new Resource({ 'service.name': config.serviceName });
  const spans: SpanCounts = { exported: 0, failed: 0, dropped: 0 };
  if (log) installDiagnostics(traceDiagnostics(spans, log));
  // The exporter reads OTEL_EXPORTER_OTLP_(TRACES_)HEADERS and _TIMEOUT itself (a hosted backend's key goes there).
  const spanProcessor = new BatchSpanProcessor(new CountingExporter(new OTLPTraceExporter({ url: config.tracesUrl }), spans));
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register(); // AsyncLocalStorage context and the W3C traceparent propagator
  installed = { config, resource, spanProcessor, spans, shutdown: () => provider.shutdown() };
  return installed;
}

/** The Temporal client interceptors that carry the caller's trace into each start, signal, update and query; none without tracing. */
export function tracingClientInterceptors(): { workflow: OpenTelemetryWorkflowClientInterceptor[] } | undefined {
  return installed ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : undefined;
}
