/**
 * The process's tracer: a NodeTracerProvider (W3C trace context, spans batched to OTLP over
 * HTTP/protobuf) registered globally, so the Temporal SDK's OpenTelemetry interceptors, the
 * undici instrumentation (each HTTP call to the courier) and the bridge all report to it.
 * OpenTelemetry's SDK reads its standard variables itself: the sampler (OTEL_TRACES_SAMPLER,
 * OTEL_TRACES_SAMPLER_ARG), the resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), the batch
 * processor's and the exporter's settings; tracing/config.ts checks them first. Installed once per
 * process, and only when tracing/config.ts says so: otherwise nothing is registered.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { getEnv } from '@opentelemetry/core';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { envDetectorSync, Resource } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import { tracingConfigFromEnv, type TracingConfig } from './config';
import { CountingExporter, CountingProcessor, installDiagnostics, traceDiagnostics, type SpanCounts, type TraceLogLine } from './health';

export interface Tracing {
  config: TracingConfig;
  resource: Resource;
  /** Where every span of the process ends, the workflows' too (tracing/worker.ts). */
  spanProcessor: CountingProcessor;
  /** Spans exported, failed and dropped so far (tracing/health.ts). */
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
 * Installs tracing when the process's environment asks for it (OTEL_EXPORTER_OTLP_ENDPOINT …);
 * `service` is the process's service name unless OTEL_SERVICE_NAME says otherwise. `log`, in a
 * process of ours (the worker, the bridge), takes OpenTelemetry's diagnostics: its warnings and the
 * exporter's failures (tracing/health.ts); without it (the client library, in an order system's
 * process) the process's own diagnostics stay as its owner set them. A second call returns the first.
 */
export function installTracing(service: string, log?: (line: TraceLogLine) => void): Tracing | undefined {
  if (installed) return installed;
  const config = tracingConfigFromEnv(service, process.env);
  if (!config) return undefined;
  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (read by OpenTelemetry's env detector) win over the process's default name.
  const resource = Resource.default().merge(new Resource({ 'service.name': service })).merge(envDetectorSync.detect());
  const spans: SpanCounts = { exported: 0, failed: 0, dropped: 0 };
  if (log) installDiagnostics(traceDiagnostics(log));
  // The exporter reads OTEL_EXPORTER_OTLP_(TRACES_)HEADERS and _TIMEOUT itself (a hosted backend's key goes there).
  const exporter = new CountingExporter(new OTLPTraceExporter({ url: config.tracesUrl }), spans);
  const { OTEL_BSP_MAX_QUEUE_SIZE: maxQueueSize } = getEnv(); // the batch processor's own reading of it
  const spanProcessor = new CountingProcessor(new BatchSpanProcessor(exporter, { maxQueueSize }), maxQueueSize, spans);
  exporter.onHandedOver = (n) => spanProcessor.handedOver(n);
  // The sampler: OTEL_TRACES_SAMPLER(_ARG), read by the provider; parent-based by default, so a process follows its caller's decision.
  const provider = new NodeTracerProvider({ resource, spanProcessors: [spanProcessor] });
  provider.register(); // AsyncLocalStorage context and the W3C traceparent propagator
  // A CLIENT span for each HTTP call made with undici inside a trace (the courier's API, notification endpoints), its
  // context sent as `traceparent`; named by route (ids left out), none outside a trace.
  const undici = new UndiciInstrumentation({
    requireParentforSpans: true,
    requestHook: (span, request) => span.updateName(`${request.method} ${routeOf(request.path)}`),
  });
  undici.setTracerProvider(provider);
  installed = { config, resource, spanProcessor, spans, shutdown: () => (undici.disable(), provider.shutdown()) };
  return installed;
}

/** A path with its ids and query left out: /v1/deliveries/{id}/actions/cancel (a span name of bounded cardinality). */
export function routeOf(path: string): string {
  return path.split('?')[0]!.replace(/(\/v1\/(?:deliveries|orders))\/[^/]+/, '$1/{id}');
}

/** The Temporal client interceptors that carry the caller's trace into each start, signal, update and query; none without tracing. */
export function tracingClientInterceptors(): { workflow: OpenTelemetryWorkflowClientInterceptor[] } | undefined {
  return installed ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : undefined;
}
